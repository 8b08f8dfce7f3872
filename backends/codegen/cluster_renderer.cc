#include "backends/codegen/cluster_renderer.h"

#include <climits>
#include <cstring>
#include <map>

#include "backends/codegen/index_exprs.h"
#include "backends/codegen/op_expressions.h"
#include "backends/codegen/render_helpers.h"
#include "backends/reduce_layout.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {
namespace {

// What an index expression means: the flat index into the reduce (or output) shape S,
// the row index (flat over S's kept dims), or anything else.
enum class Tag { kFull, kRow, kOther };
struct Index {
  std::string expr;
  Tag tag;
};

class Renderer {
 public:
  Renderer(const std::vector<ir::Tensor>& tensors, std::vector<const ir::Node*> nodes, std::vector<int> inputs,
           std::vector<int> outputs, const KernelDialect& d)
      : tensors_(tensors), nodes_(std::move(nodes)), inputs_(std::move(inputs)), outputs_(std::move(outputs)), d_(d) {}

  StatusOr<RenderedKernel> render(const std::string& name, const std::string& what) {
    RETURN_IF_ERROR(prepare());
    RenderedKernel k;
    k.name = name;
    k.constants = constants_;
    std::string sig = std::string(d_.kernel_prefix) + " " + name + "(";
    for (size_t o = 0; o < outputs_.size(); ++o) {
      sig += std::string(o ? ", " : "") + d_.global_ptr + " " + type(outputs_[o]) + "* y" + std::to_string(o);
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      sig += std::string(", ") + d_.global_ptr + " const " + type(inputs_[i]) + "* x" + std::to_string(i);
    }
    for (size_t c = 0; c < constants_.size(); ++c) {
      sig += std::string(", ") + d_.global_ptr + " const " + d_.typeName(constants_[c]->dtype) + "* c" + std::to_string(c);
    }
    sig += ")";
    if (gemm_ >= 0) {
      RETURN_IF_ERROR(renderGemm());
      k.gemm = true;
      k.items = gemm_groups_;
      k.local_size = kGemmTile * kGemmTile;
    } else if (reduces_.empty()) {
      RETURN_IF_ERROR(renderElementwise());
      k.items = total_;
    } else {
      RETURN_IF_ERROR(renderReduce());
      k.reduce = true;
      k.items = rows_;
      k.reduce_size = reduce_size_;
      k.local_size = local_size_;
    }
    k.source = "// " + what + "\n" + sig + " {\n" + body_ + "}\n";
    return k;
  }

 private:
  Status unsupported(const std::string& why) const { return makeError(StatusCode::kUnsupported, why); }

  Status prepare() {
    if (outputs_.empty()) return unsupported("a kernel without outputs");
    producer_.assign(tensors_.size(), -1);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i] < 0) return unsupported("an absent optional input");
      RETURN_IF_ERROR(checkType(inputs_[i]));
      arg_[inputs_[i]] = "x" + std::to_string(i);
    }
    for (size_t n = 0; n < nodes_.size(); ++n) {
      const ir::Node& node = *nodes_[n];
      if (node.outputs.size() != 1) return unsupported(std::string(node.op->name) + " has several outputs");
      for (int t : node.inputs) {
        if (t < 0) return unsupported(std::string(node.op->name) + " with an absent input");
        RETURN_IF_ERROR(checkType(t));
        if (producer_[t] < 0 && !arg_.count(t) && tensors_[t].isConstant() && numElements(tensors_[t].shape) != 1) {
          arg_[t] = "c" + std::to_string(constants_.size());
          constants_.push_back(&tensors_[t]);
        }
      }
      RETURN_IF_ERROR(checkType(node.outputs[0]));
      producer_[node.outputs[0]] = static_cast<int>(n);
      if (reduceKind(node) && !isIdentityReduce(node, tensors_)) reduces_.push_back(static_cast<int>(n));
      if (n == 0 && nodes_.size() > 1 && (std::strcmp(node.op->name, "MatMul") == 0 || std::strcmp(node.op->name, "BatchMatMul") == 0)) {
        gemm_ = 0;  // a GEMM with an elementwise epilogue
      }
    }
    for (int t : outputs_) RETURN_IF_ERROR(checkType(t));
    if (gemm_ >= 0 && !reduces_.empty()) return unsupported("a GEMM and a reduction in one cluster");
    if (reduces_.empty()) {
      shape_ = tensors_[outputs_[0]].shape;  // the index space: the largest output
      for (int t : outputs_) if (numElements(tensors_[t].shape) > numElements(shape_)) shape_ = tensors_[t].shape;
      total_ = numElements(shape_);
      for (int t : outputs_) {
        const Shape& s = tensors_[t].shape;
        if (!sameModLeadingOnes(s, shape_) && !broadcastsTo(stripLeadingOnes(s), shape_)) {
          return unsupported("an output that does not broadcast to the largest one");
        }
      }
    } else {
      RETURN_IF_ERROR(prepareReduce());
    }
    index_type_ = std::max(total_, numElements(shape_)) < INT_MAX ? "int" : d_.long_type;
    return Status::Ok();
  }

  Status checkType(int t) const {
    if (!d_.typeName(tensors_[t].dtype)) {
      return unsupported("tensor '" + tensors_[t].name + "' is " + dtypeName(tensors_[t].dtype) +
                         " (float32, bool, int8, uint8, int32 and int64 only)");
    }
    return Status::Ok();
  }
  Status checkFloat(int t) const {
    if (tensors_[t].dtype != DType::kFloat32) {
      return unsupported("tensor '" + tensors_[t].name + "' is " + dtypeName(tensors_[t].dtype) + " (float32 only here)");
    }
    return Status::Ok();
  }
  std::string type(int t) const { return d_.typeName(tensors_[t].dtype); }

  // Every reduction reduces the same axes of the same shape.
  Status prepareReduce() {
    for (size_t k = 0; k < reduces_.size(); ++k) {
      const ir::Node& n = *nodes_[reduces_[k]];
      // Integer sums and products (a mask's length, ...) in their own type; every other
      // reduction in float32.
      const DType in = tensors_[n.inputs[0]].dtype;
      const bool integer = (in == DType::kInt32 || in == DType::kInt64) &&
                           (std::strcmp(n.op->name, "ReduceSum") == 0 || std::strcmp(n.op->name, "ReduceProd") == 0);
      if (integer && tensors_[n.outputs[0]].dtype != in) return unsupported("an integer reduction of another output type");
      if (!integer) {
        RETURN_IF_ERROR(checkFloat(n.inputs[0]));
        RETURN_IF_ERROR(checkFloat(n.outputs[0]));
      }
      const DType acc = integer ? in : DType::kFloat32;
      if (k > 0 && acc != acc_dtype_) return unsupported("reductions of different element types in one cluster");
      acc_dtype_ = acc;
      const Shape& s = tensors_[n.inputs[0]].shape;
      std::vector<int64_t> axes;
      if (std::strcmp(n.op->name, "GlobalAvgPool") == 0) {
        if (s.size() < 3) return unsupported("GlobalAvgPool of rank under 3");
        for (int64_t a = 2; a < static_cast<int64_t>(s.size()); ++a) axes.push_back(a);
      } else {
        ASSIGN_OR_RETURN(axes, ops::reduceAxes(n.attrs.get<AxesAttrs>().axes, static_cast<int64_t>(s.size())));
      }
      std::vector<char> mask(s.size(), 0);
      for (int64_t a : axes) mask[a] = 1;
      if (k == 0) {
        shape_ = s;
        reduced_ = mask;
      } else if (s != shape_ || mask != reduced_) {
        return unsupported("reductions over different shapes or axes");
      }
    }
    layout_ = ReduceLayout(shape_, reduced_);
    total_ = layout_.total();
    reduce_size_ = layout_.extent();
    rows_ = layout_.rows();
    local_size_ = 1;
    while (local_size_ < reduce_size_ && local_size_ < kMaxReduceLocalSize) local_size_ *= 2;
    for (int t : outputs_) {
      if (!isFullShaped(tensors_[t].shape) && !isRowShaped(tensors_[t].shape)) {
        return unsupported("output '" + tensors_[t].name + "' is neither of the reduced shape nor of its input's");
      }
    }
    return Status::Ok();
  }

  bool isFullShaped(const Shape& s) const { return sameModLeadingOnes(s, shape_); }
  bool isRowShaped(const Shape& s) const { return layout_.isRowShaped(s); }
  bool broadcastsAsRow(const Shape& u) const { return layout_.broadcastsAsRow(u); }

  void line(const std::string& s) { body_ += std::string(2 * indent_, ' ') + s + "\n"; }
  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }
  const std::string* memo(const std::string& key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(key);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  // Index into a tensor of shape `u` read by a consumer of shape `c` at `at`.
  StatusOr<Index> project(const Index& at, const Shape& c, Shape u) {
    if (numElements(u) == numElements(c)) return at;
    if (numElements(u) == 1) return Index{"0", Tag::kOther};
    while (u.size() > c.size() && u[0] == 1) u.erase(u.begin());
    if (u.size() > c.size()) return unsupported("an operand of higher rank than its result");
    if (at.tag == Tag::kFull && !reduces_.empty() && isFullShaped(c) && broadcastsAsRow(u)) return Index{"o", Tag::kRow};
    const std::vector<int64_t> st = ops::broadcastStrides(u, c);
    std::string expr;
    int64_t div = 1;
    for (size_t d = c.size(); d-- > 0;) {
      if (st[d] != 0 && c[d] != 1) {
        std::string term = div == 1 ? at.expr : "(" + at.expr + " / " + std::to_string(div) + ")";
        if (d > 0) term = "(" + term + " % " + std::to_string(c[d]) + ")";
        if (st[d] != 1) term += " * " + std::to_string(st[d]);
        expr += (expr.empty() ? "" : " + ") + term;
      }
      div *= c[d];
    }
    if (expr.empty()) return Index{"0", Tag::kOther};
    return indexVar(expr);
  }

  Index indexVar(const std::string& expr) {
    const std::string key = "#" + expr;
    if (const std::string* v = memo(key)) return Index{*v, Tag::kOther};
    const std::string v = fresh("j");
    line("const " + index_type_ + " " + v + " = " + expr + ";");
    scopes_.back()[key] = v;
    return Index{v, Tag::kOther};
  }

  // The value of tensor `t` at `at` (a flat index into t's shape), as an expression.
  StatusOr<std::string> value(int t, const Index& at) {
    const ir::Tensor& tt = tensors_[t];
    if (tt.isConstant() && numElements(tt.shape) == 1) return scalarLiteral(tt.dtype, tt.constant->data);
    const std::string key = std::to_string(t) + "@" + at.expr;
    if (const std::string* v = memo(key)) return *v;
    std::string expr;
    if (producer_[t] < 0) {
      auto a = arg_.find(t);
      if (a == arg_.end()) return unsupported("tensor '" + tt.name + "' is neither an input nor a constant");
      expr = a->second + "[" + at.expr + "]";
    } else {
      const ir::Node& n = *nodes_[producer_[t]];
      if (reduceKind(n) && !isIdentityReduce(n, tensors_)) {
        auto r = reduced_value_.find(producer_[t]);
        if (at.tag != Tag::kRow || r == reduced_value_.end()) {
          return unsupported("reduction '" + n.name + "' is read other than once per row");
        }
        return r->second;
      }
      if (producer_[t] == gemm_) return unsupported("the GEMM's result is read other than element by element");
      if (isReshapeOp(n) || isIdentityReduce(n, tensors_)) return value(n.inputs[0], at);
      const Shape& in0 = tensors_[n.inputs[0]].shape;
      if (auto moved = movedIndex(n, in0, tt.shape, at.expr)) {  // Transpose, Slice, StridedSlice
        ASSIGN_OR_RETURN(expr, value(n.inputs[0], indexVar(*moved)));
      } else if (auto pad = padIndex(n, in0, tt.shape, at.expr)) {
        if (tt.dtype != DType::kFloat32) return unsupported("Pad of a non-float tensor");
        ASSIGN_OR_RETURN(std::string v, value(n.inputs[0], indexVar(pad->index)));
        expr = "((" + pad->inside + ") ? " + v + " : " + floatLiteral(n.attrs.get<PadAttrs>().value) + ")";
      } else if (std::strcmp(n.op->name, "Concat") == 0) {
        return concatValue(t, n, at);
      } else {
        std::vector<std::string> args;
        std::vector<DType> types;
        for (int u : n.inputs) {
          ASSIGN_OR_RETURN(Index sub, project(at, tt.shape, tensors_[u].shape));
          ASSIGN_OR_RETURN(std::string v, value(u, sub));
          args.push_back(v);
          types.push_back(tensors_[u].dtype);
        }
        const ir::Tensor* exponent = n.inputs.size() == 2 ? &tensors_[n.inputs[1]] : nullptr;
        const bool pow_const = std::strcmp(n.op->name, "Pow") == 0 && tt.dtype == DType::kFloat32 && exponent->isConstant() &&
                               exponent->dtype == DType::kFloat32 && numElements(exponent->shape) == 1 &&
                               types[0] == DType::kFloat32;
        auto e = pow_const ? std::optional<std::string>(powConstExpression(
                                 args[0], *reinterpret_cast<const float*>(exponent->constant->data), d_))
                           : opExpression(n, args, types, tt.dtype, d_);
        if (!e) return unsupported(std::string("no kernel expression for ") + n.op->name);
        expr = *e;
      }
    }
    const std::string v = fresh("v");
    line("const " + type(t) + " " + v + " = " + expr + ";");
    scopes_.back()[key] = v;
    return v;
  }

  // Concat: the input that holds the element, chosen by its index along the axis (only
  // that input is read).
  StatusOr<std::string> concatValue(int t, const ir::Node& n, const Index& at) {
    const Shape& out = tensors_[t].shape;
    int64_t axis = n.attrs.get<AxisAttrs>().axis;
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    if (axis < 0 || axis >= static_cast<int64_t>(out.size())) return unsupported("Concat axis out of range");
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d) inner *= out[d];
    const int64_t extent = out[static_cast<size_t>(axis)];
    const Index along = indexVar("((" + at.expr + " / " + std::to_string(inner) + ") % " + std::to_string(extent) + ")");
    const Index outer = indexVar("(" + at.expr + " / " + std::to_string(inner * extent) + ")");
    const Index within = indexVar("(" + at.expr + " % " + std::to_string(inner) + ")");
    const std::string v = fresh("v");
    line(type(t) + " " + v + ";");
    int64_t offset = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int64_t e = tensors_[n.inputs[k]].shape[static_cast<size_t>(axis)];
      const bool last = k + 1 == n.inputs.size();
      line(std::string(k ? "} else " : "") + (last ? "{" : "if (" + along.expr + " < " + std::to_string(offset + e) + ") {"));
      ++indent_;
      scopes_.emplace_back();
      const std::string idx = outer.expr + " * " + std::to_string(e * inner) + " + (" + along.expr + " - " +
                              std::to_string(offset) + ") * " + std::to_string(inner) + " + " + within.expr;
      ASSIGN_OR_RETURN(std::string x, value(n.inputs[k], indexVar(idx)));
      line(v + " = " + x + ";");
      scopes_.pop_back();
      --indent_;
      offset += e;
    }
    line("}");
    scopes_.back()[std::to_string(t) + "@" + at.expr] = v;
    return v;
  }

  // The tiled GEMM (kGemmTile^2 work-items per tile of the output, A and B staged in
  // local memory), then the epilogue on each result while it is in a register.
  Status renderGemm() {
    const ir::Node& mm = *nodes_[gemm_];
    const auto& attrs = mm.attrs.get<MatMulAttrs>();
    const Shape& sa = tensors_[mm.inputs[0]].shape;
    const Shape& sb = tensors_[mm.inputs[1]].shape;
    const Shape& sy = tensors_[mm.outputs[0]].shape;
    if (sa.size() < 2 || sb.size() < 2 || sy.size() < 2) return unsupported("a GEMM on vectors");
    if (!isFullShaped(sy)) return unsupported("an epilogue of another shape than the GEMM's");
    for (int in : mm.inputs) {
      if (producer_[in] >= 0 || !arg_.count(in)) return unsupported("a GEMM operand computed in the cluster");
      RETURN_IF_ERROR(checkFloat(in));
    }
    RETURN_IF_ERROR(checkFloat(mm.outputs[0]));
    const int64_t M = sy[sy.size() - 2], N = sy[sy.size() - 1], K = attrs.transpose_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
    const Shape ob(sy.begin(), sy.end() - 2), ab(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    const int64_t T = kGemmTile, tiles_n = (N + T - 1) / T, tiles_m = (M + T - 1) / T;
    gemm_groups_ = tiles_n * tiles_m * numElements(ob);
    const std::string& I = index_type_;
    const std::string Ts = std::to_string(T), Ks = std::to_string(K), Ms = std::to_string(M), Ns = std::to_string(N);
    const std::string sam = attrs.transpose_a ? "1" : Ks, sak = attrs.transpose_a ? Ms : "1";
    const std::string sbk = attrs.transpose_b ? "1" : Ns, sbn = attrs.transpose_b ? Ks : "1";
    auto batchOffset = [&](const Shape& in, int64_t matrix) {
      const std::vector<int64_t> st = ops::broadcastStrides(in, ob);
      std::string expr;
      int64_t div = 1;
      for (size_t d = ob.size(); d-- > 0;) {
        if (st[d] != 0 && ob[d] != 1) {
          expr += (expr.empty() ? "" : " + ") + std::string("((bt / ") + std::to_string(div) + ") % " + std::to_string(ob[d]) +
                  ") * " + std::to_string(st[d] * matrix);
        }
        div *= ob[d];
      }
      return expr.empty() ? std::string("0") : expr;
    };
    const std::string A = arg_[mm.inputs[0]], B = arg_[mm.inputs[1]];
    line(std::string(d_.local_array) + " float As[" + Ts + "][" + Ts + " + 1];");
    line(std::string(d_.local_array) + " float Bs[" + Ts + "][" + Ts + " + 1];");
    line("const int lid = (int)" + std::string(d_.local_id) + ", ln = lid % " + Ts + ", lm = lid / " + Ts + ";");
    line("const " + I + " g = (" + I + ")" + d_.group_id + ";");
    line("const " + I + " bt = g / " + std::to_string(tiles_n * tiles_m) + ";");
    line("const int n = (int)(g % " + std::to_string(tiles_n) + ") * " + Ts + " + ln;");
    line("const int m = (int)((g / " + std::to_string(tiles_n) + ") % " + std::to_string(tiles_m) + ") * " + Ts + " + lm;");
    line("const " + I + " a0 = " + batchOffset(ab, M * K) + ", b0 = " + batchOffset(bb, K * N) + ";");
    line("float acc = 0.0f;");
    line("for (int k0 = 0; k0 < " + Ks + "; k0 += " + Ts + ") {");
    line("  As[lm][ln] = (m < " + Ms + " && k0 + ln < " + Ks + ") ? " + A + "[a0 + m * " + sam + " + (k0 + ln) * " + sak + "] : 0.0f;");
    line("  Bs[lm][ln] = (k0 + lm < " + Ks + " && n < " + Ns + ") ? " + B + "[b0 + (k0 + lm) * " + sbk + " + n * " + sbn + "] : 0.0f;");
    line("  " + std::string(d_.barrier) + ";");
    line("  for (int k = 0; k < " + Ts + "; ++k) acc += As[lm][k] * Bs[k][ln];");
    line("  " + std::string(d_.barrier) + ";");
    line("}");
    line("if (m < " + Ms + " && n < " + Ns + ") {");
    ++indent_;
    line("const " + I + " i = bt * " + std::to_string(M * N) + " + m * " + Ns + " + n;");
    scopes_.emplace_back();
    scopes_.back()[std::to_string(mm.outputs[0]) + "@i"] = "acc";
    RETURN_IF_ERROR(writeOutputs());
    scopes_.pop_back();
    --indent_;
    line("}");
    return Status::Ok();
  }

  // Every output at element i of the index space (shape S); a smaller output is written
  // by the work-item at index 0 of every dim it broadcasts along.
  Status writeOutputs() {
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const Shape& s = tensors_[outputs_[o]].shape;
      if (sameModLeadingOnes(s, shape_)) {
        ASSIGN_OR_RETURN(std::string v, value(outputs_[o], Index{"i", Tag::kFull}));
        line("y" + std::to_string(o) + "[i] = " + v + ";");
        continue;
      }
      const std::vector<int64_t> st = ops::broadcastStrides(stripLeadingOnes(s), shape_);
      std::string first;
      int64_t div = 1;
      for (size_t d = shape_.size(); d-- > 0;) {
        if (st[d] == 0 && shape_[d] != 1) {
          first += std::string(first.empty() ? "" : " && ") + "((i / " + std::to_string(div) + ") % " +
                   std::to_string(shape_[d]) + ") == 0";
        }
        div *= shape_[d];
      }
      line(first.empty() ? "{" : "if (" + first + ") {");  // no dim to test: size-1 dims only (fuzz seed 100427)
      ++indent_;
      scopes_.emplace_back();
      ASSIGN_OR_RETURN(Index at, project(Index{"i", Tag::kFull}, shape_, s));
      ASSIGN_OR_RETURN(std::string v, value(outputs_[o], at));
      line("y" + std::to_string(o) + "[" + at.expr + "] = " + v + ";");
      scopes_.pop_back();
      --indent_;
      line("}");
    }
    return Status::Ok();
  }

  Status renderElementwise() {
    const std::string& I = index_type_;
    line("for (" + I + " i = (" + I + ")" + d_.global_id + "; i < " + std::to_string(total_) + "; i += (" + I + ")" +
         d_.global_size + ") {");
    ++indent_;
    scopes_.emplace_back();
    RETURN_IF_ERROR(writeOutputs());
    scopes_.pop_back();
    --indent_;
    line("}");
    return Status::Ok();
  }

  // f, the flat index into S, from the row o and the position r within it.
  std::string fullIndex() const {
    bool trailing = true, seen_reduced = false;
    for (size_t d = 0; d < shape_.size(); ++d) {
      if (shape_[d] == 1) continue;
      if (reduced_[d]) seen_reduced = true;
      else if (seen_reduced) trailing = false;
    }
    if (trailing) return "o * " + std::to_string(reduce_size_) + " + r";
    const std::vector<int64_t> strides = contiguousStrides(shape_);
    std::string expr;
    int64_t div_o = 1, div_r = 1;
    for (size_t d = shape_.size(); d-- > 0;) {
      if (shape_[d] == 1) continue;
      const char* var = reduced_[d] ? "r" : "o";
      int64_t& div = reduced_[d] ? div_r : div_o;
      std::string term = div == 1 ? var : "(" + std::string(var) + " / " + std::to_string(div) + ")";
      term = "(" + term + " % " + std::to_string(shape_[d]) + ") * " + std::to_string(strides[d]);
      expr += (expr.empty() ? "" : " + ") + term;
      div *= shape_[d];
    }
    return expr.empty() ? "0" : expr;
  }

  Status renderReduce() {
    const std::string& I = index_type_;
    const std::string L = std::to_string(local_size_), K = std::to_string(reduce_size_);
    const bool integer = acc_dtype_ != DType::kFloat32;
    const std::string A = integer ? d_.typeName(acc_dtype_) : "float";
    line(std::string(d_.local_array) + " " + A + " red[" + L + "];");
    line("const int lid = (int)" + std::string(d_.local_id) + ";");
    line("for (" + I + " o = (" + I + ")" + d_.group_id + "; o < " + std::to_string(rows_) + "; o += (" + I + ")" +
         d_.num_groups + ") {");
    ++indent_;
    scopes_.emplace_back();
    for (int n : reduces_) {
      const ir::Node& node = *nodes_[n];
      const ReduceKind& kind = *reduceKind(node);
      const std::string acc = fresh("acc"), out = fresh("red");
      line(A + " " + acc + " = " + (integer ? std::string(std::strcmp(kind.op, "ReduceProd") == 0 ? "1" : "0") : kind.init) + ";");
      line("for (" + I + " r = lid; r < " + K + "; r += " + L + ") {");
      ++indent_;
      scopes_.emplace_back();
      line("const " + I + " f = " + fullIndex() + ";");
      ASSIGN_OR_RETURN(std::string v, value(node.inputs[0], Index{"f", Tag::kFull}));
      line(acc + " = " + combine(kind, acc, v) + ";");
      scopes_.pop_back();
      --indent_;
      line("}");
      line("red[lid] = " + acc + ";");
      line(std::string(d_.barrier) + ";");
      line("for (int s = " + std::to_string(local_size_ / 2) + "; s > 0; s >>= 1) {");
      line("  if (lid < s) red[lid] = " + combine(kind, "red[lid]", "red[lid + s]") + ";");
      line("  " + std::string(d_.barrier) + ";");
      line("}");
      line("const " + A + " " + out + " = red[0]" + (kind.mean ? " / " + floatLiteral(float(reduce_size_)) : "") + ";");
      line(std::string(d_.barrier) + ";");
      reduced_value_[n] = out;
    }
    line("for (" + I + " r = lid; r < " + K + "; r += " + L + ") {");
    ++indent_;
    scopes_.emplace_back();
    line("const " + I + " f = " + fullIndex() + ";");
    for (size_t o = 0; o < outputs_.size(); ++o) {
      if (!isFullShaped(tensors_[outputs_[o]].shape)) continue;
      ASSIGN_OR_RETURN(std::string v, value(outputs_[o], Index{"f", Tag::kFull}));
      line("y" + std::to_string(o) + "[f] = " + v + ";");
    }
    scopes_.pop_back();
    --indent_;
    line("}");
    line("if (lid == 0) {");
    ++indent_;
    scopes_.emplace_back();
    for (size_t o = 0; o < outputs_.size(); ++o) {
      if (isFullShaped(tensors_[outputs_[o]].shape)) continue;
      ASSIGN_OR_RETURN(std::string v, value(outputs_[o], Index{"o", Tag::kRow}));
      line("y" + std::to_string(o) + "[o] = " + v + ";");
    }
    scopes_.pop_back();
    --indent_;
    line("}");
    scopes_.pop_back();
    --indent_;
    line("}");
    return Status::Ok();
  }

  const std::vector<ir::Tensor>& tensors_;
  std::vector<const ir::Node*> nodes_;
  std::vector<int> inputs_, outputs_;
  const KernelDialect& d_;
  std::vector<int> producer_;
  std::map<int, std::string> arg_;
  std::vector<const ir::Tensor*> constants_;
  std::vector<int> reduces_;
  DType acc_dtype_ = DType::kFloat32;  // the reductions' accumulator type
  int gemm_ = -1;  // node index of a leading MatMul/BatchMatMul
  int64_t gemm_groups_ = 0;
  Shape shape_;               // S: the output shape, or the reductions' input shape
  std::vector<char> reduced_;  // per dim of S
  ReduceLayout layout_;
  int64_t total_ = 0, rows_ = 0, reduce_size_ = 0;
  int local_size_ = 1;
  std::string index_type_ = "int";
  std::map<int, std::string> reduced_value_;
  std::vector<std::map<std::string, std::string>> scopes_;
  std::string body_;
  int indent_ = 1, counter_ = 0;
};

}  // namespace

StatusOr<RenderedKernel> renderCluster(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                       const KernelDialect& d) {
  if (!node.op) return makeError(StatusCode::kUnsupported, "a node without an op");
  if (node.subgraph) {
    const ir::Graph& body = *node.subgraph;
    std::vector<const ir::Node*> nodes;
    std::string what = node.name + ":";
    for (const ir::Node& n : body.nodes) {
      nodes.push_back(&n);
      what += std::string(" ") + n.op->name;
    }
    return Renderer(body.tensors, nodes, body.inputs, body.outputs, d).render(name, what);
  }
  return Renderer(g.tensors, {&node}, node.inputs, node.outputs, d).render(name, node.name + ": " + node.op->name);
}

}  // namespace gkrt::codegen
