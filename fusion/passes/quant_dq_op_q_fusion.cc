// quant_dq_op_q_fusion: the QDQ form of a quantized model (onnxruntime's quantize_static
// QDQ output) becomes the integer ops, so an int8 kernel runs instead of the fake-quant
// float path. Patterns (every scale a constant, every intermediate read only by the
// next op):
//   Q(Conv2D(DQ(x), DQ(w), [DQ(b) | b]))          -> QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, b_int32)
//   Q(MatMul | BatchMatMul(DQ(a), DQ(b)))         -> QLinearMatMul(a, as, azp, b, bs, bzp, ys, yzp)
//   Q(Add | Mul(DQ(a), DQ(b)))                    -> QLinearAdd | QLinearMul(a, as, azp, b, bs, bzp, ys, yzp)
//   Gemm(DQ(a), DQ(b), C?), alpha 1, beta 1 (or no C), a not transposed, a 2-D, b a
//   constant, C float32 [N]                        -> MatMulIntegerToFloat(a, b', as, bs, azp, bzp, C)
//   (onnxruntime's QGemm and its QDQ Gemm; b' is b, or b transposed to [K, N] for transB;
//   the Q after it, if any, stays a QuantizeLinear of the float result)
//   Q(M(B)) with M none or more movement nodes (Reshape/Transpose/Squeeze/Unsqueeze/
//   Flatten or MaxPool, one output each) and B either one branch f(DQ(x)) or a
//   Concat(f1(DQ1(x1)), ..., fn(DQn(xn))), each f a chain of elementwise float ops on
//   its x's shape reading the chain's values and one-element constants (none, or GeLU,
//   HardSwish, a ReLU, ... between int8 layers)
//                                                 -> M(B') on the integers
//   where branch i of B' is xi as it is when fi is empty and DQi has Q's type, scale and
//   zero point (the round trip is exact: round((x - z) * s / s) + z = x), else
//   Gather(table_i, xi): a 256-entry table of Q's type, table_i[v] = Q(fi(DQi(v))) run
//   here by the reference kernels, so it equals the unfused ops exactly (an int8 x
//   indexes it from the end for negative values, as Gather does). Q commutes with the
//   movement and the Concat, and with a MaxPool too where Q's scale is positive (then Q
//   is nondecreasing, so Q of the largest value is the largest Q) and no fi(DQi(v)) is
//   NaN. Q(f(DQ(x))) with no M and no Concat becomes its one lookup after the QLinear
//   patterns below took theirs. (onnxruntime's QOperator files put DQ ... Q around the
//   attention's reshapes; its QDQ files around each MaxPool, and its QDQ SqueezeNet
//   has DQ -> ReLU -> Concat [-> MaxPool] -> Q between every two convolutions.)
// x, a and the output per tensor, int8 or uint8; w per tensor or per output channel
// (axis 0), a matmul's b per tensor or per column (its last axis), int8 or uint8. The
// conv bias becomes int32 at scale xs*ws (the int32 of a DQ with exactly that scale and
// zero points that are absent or 0 as it is; other DQ'd int32 and float constants
// rounded half to even). Runs before
// ConstantFolding, which would otherwise dequantize the weights; `disable_pass` keeps
// the float path (for accuracy debugging).
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::passes {
namespace {

bool isInt8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
int64_t elements(const ir::Graph& g, int t) { return t < 0 ? 0 : numElements(g.tensors[t].shape); }
bool isConst(const ir::Graph& g, int t) { return t >= 0 && g.tensors[t].isConstant(); }

// A DequantizeLinear's operands: x, scale (constant float32), zero point (constant, or
// -1) and its axis normalised to x's rank.
struct Dq {
  int x = -1, scale = -1, zp = -1;
  int64_t axis = 0;
};
bool dequantized(const PatternGraph& pg, int t, Dq* d) {
  const ir::Node* n = pg.producer(t, {"DequantizeLinear"});
  if (!n) return false;
  const ir::Graph& g = pg.graph();
  const auto& a = n->attrs.get<QuantAttrs>();
  d->x = n->inputs[0];
  d->scale = n->inputs[1];
  d->zp = n->inputs.size() > 2 ? n->inputs[2] : -1;
  const int64_t rank = static_cast<int64_t>(g.tensors[d->x].shape.size());
  d->axis = a.axis < 0 ? a.axis + rank : a.axis;
  return a.block_size == 0 && a.to == DType::kFloat32 && g.tensors[d->scale].dtype == DType::kFloat32 &&
         isConst(g, d->scale) && (d->zp < 0 || isConst(g, d->zp));
}
// Per tensor, or (count > 0) per axis `axis` with `count` elements.
bool paramsFit(const ir::Graph& g, const Dq& d, int64_t axis, int64_t count) {
  const int64_t e = elements(g, d.scale);
  if (e == 1) return d.zp < 0 || elements(g, d.zp) == 1;
  return count > 0 && d.axis == axis && e == count && (d.zp < 0 || elements(g, d.zp) == count);
}
// The zero point as an input: a zero of x's type when the DQ has none.
int zeroPoint(ir::Graph& g, const Dq& d) {
  if (d.zp >= 0) return d.zp;
  const uint8_t zero = 0;
  return addPatternConstant(g, g.tensors[d.x].name + "_zero_point", g.tensors[d.x].dtype, {}, &zero);
}

struct Q {
  int index = -1, y = -1, scale = -1, zp = -1;
};
// Node `i` is a per-tensor QuantizeLinear to int8/uint8 with a zero point, as ONNX
// QLinear ops need.
bool quantizes(const ir::Graph& g, size_t i, Q* q) {
  const ir::Node& n = g.nodes[i];
  if (!isOp(n, "QuantizeLinear") || n.inputs.size() < 3 || n.inputs[2] < 0) return false;
  const auto& a = n.attrs.get<QuantAttrs>();
  q->index = static_cast<int>(i);
  q->y = n.inputs[0];
  q->scale = n.inputs[1];
  q->zp = n.inputs[2];
  return isInt8(a.to) && a.precision == DType::kFloat32 && g.tensors[q->y].dtype == DType::kFloat32 &&
         g.tensors[q->scale].dtype == DType::kFloat32 && isConst(g, q->scale) && isConst(g, q->zp) &&
         elements(g, q->scale) == 1 && elements(g, q->zp) == 1;
}

float constFloat(const ir::Graph& g, int t, int64_t i) {
  float v;
  std::memcpy(&v, g.tensors[t].constant->data + 4 * (elements(g, t) == 1 ? 0 : i), 4);
  return v;
}

// A constant of any integer type that holds only zeros.
bool allZero(const ir::Graph& g, int t) {
  const ir::Tensor& x = g.tensors[t];
  if (!x.isConstant()) return false;
  const size_t bytes = static_cast<size_t>(elements(g, t)) * dtypeSize(x.dtype);
  for (size_t k = 0; k < bytes; ++k) if (x.constant->data[k] != 0) return false;
  return true;
}

// The conv bias as int32 at scale xs * ws[o]; -1 when it has none, -2 when it cannot be.
int int32Bias(ir::Graph& g, const PatternGraph& pg, int b, int xs, int ws, int64_t channels) {
  if (b < 0) return -1;
  if (elements(g, b) != channels) return -2;
  std::vector<int32_t> q(channels);
  Dq d;
  // A DQ of a constant int32 with zero points that are all 0 (onnxruntime writes them):
  // the int32 as it is where its scale is exactly xs * ws[o], else requantized below.
  const bool dq_bias = dequantized(pg, b, &d) && g.tensors[d.x].dtype == DType::kInt32 && isConst(g, d.x) &&
                       elements(g, d.x) == channels && (d.zp < 0 || allZero(g, d.zp));
  const auto biasValue = [&](int64_t o) {
    if (!dq_bias) return static_cast<double>(constFloat(g, b, o));
    int32_t q;
    std::memcpy(&q, g.tensors[d.x].constant->data + 4 * o, 4);
    return static_cast<double>(q) * constFloat(g, d.scale, o);
  };
  if (dq_bias) {
    bool same = true;
    for (int64_t o = 0; o < channels && same; ++o) same = constFloat(g, d.scale, o) == constFloat(g, xs, 0) * constFloat(g, ws, o);
    if (same) return d.x;
  } else if (!isConst(g, b) || g.tensors[b].dtype != DType::kFloat32) {
    return -2;
  }
  for (int64_t o = 0; o < channels; ++o) {
    const double v = std::nearbyint(biasValue(o) / (static_cast<double>(constFloat(g, xs, 0)) * constFloat(g, ws, o)));
    if (!(std::fabs(v) < 2147483647.0)) return -2;
    q[o] = static_cast<int32_t>(v);
  }
  return addPatternConstant(g, g.tensors[b].name + "_int32", DType::kInt32, {channels}, q.data());
}

// The fused op named after the node it replaces.
ir::Node quantNode(const char* op, const std::string& name, Attrs attrs, std::vector<int> inputs, int output) {
  return patternNode(op, std::string(op) + "_" + name, std::move(attrs), std::move(inputs), {output});
}

// Runs `n` by its reference kernel on 256-element views: the inputs found in `values`
// (the chain's tensors so far), else the node's constants.
bool evaluate(const ir::Graph& g, const ir::Node& n, std::map<int, std::vector<uint8_t>>& values, DType out_type) {
  std::vector<TensorView> in;
  for (int t : n.inputs) {
    auto it = values.find(t);
    if (it != values.end()) in.push_back({g.tensors[t].dtype, {256}, it->second.data()});
    else if (t < 0) in.push_back({DType::kFloat32, {}, nullptr});
    else in.push_back({g.tensors[t].dtype, g.tensors[t].shape, g.tensors[t].constant->data});
  }
  std::vector<uint8_t>& out = values[n.outputs[0]];
  out.assign(256 * dtypeSize(out_type), 0);
  std::vector<MutableTensorView> outs = {{out_type, {256}, out.data()}};
  return n.op->reference(KernelContext{n, in, outs}).ok();
}

// One input of the rewrite below: a value made from x by its DQ and the elementwise
// float nodes f after it (none, or a DAG: GeLU's erf form reads its input twice).
struct Branch {
  Dq d;
  int dq = -1;         // the DequantizeLinear's node index
  std::vector<int> f;  // f's node indices, ascending (a topological order)
};

// `end` (read once, outside) made from one per-tensor DQ of int8/uint8 x of end's shape by
// elementwise float nodes of that shape, with one-element constants beside, every value
// inside read only inside (not by another node, not a graph output).
bool branchOf(const PatternGraph& pg, int end, Branch* br) {
  const ir::Graph& g = pg.graph();
  if (end < 0 || !pg.singleUse(end)) return false;
  const Shape& shape = g.tensors[end].shape;
  std::set<int> nodes, seen;
  std::vector<int> stack = {end};
  int dq_out = -1;
  while (!stack.empty()) {
    const int t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second) continue;
    Dq d;
    if (dequantized(pg, t, &d)) {
      if (dq_out >= 0 || !paramsFit(g, d, 0, 0) || !isInt8(g.tensors[d.x].dtype) || g.tensors[d.x].shape != shape ||
          (d.zp >= 0 && g.tensors[d.zp].dtype != g.tensors[d.x].dtype)) {
        return false;
      }
      dq_out = t;
      br->d = d;
      continue;
    }
    const ir::Node* p = pg.producer(t);
    if (!p || p->subgraph || p->outputs.size() != 1 || !p->op->reference || g.tensors[t].dtype != DType::kFloat32 ||
        g.tensors[t].shape != shape || (p->op->op_class != OpClass::kElementwise && p->op->op_class != OpClass::kBroadcast)) {
      return false;
    }
    nodes.insert(pg.producerIndex(t));
    if (nodes.size() > 24) return false;
    for (int u : p->inputs) {
      if (u >= 0 && isConst(g, u) && elements(g, u) != 1) return false;
      if (u >= 0 && !isConst(g, u)) stack.push_back(u);
    }
  }
  if (dq_out < 0) return false;
  for (int t : seen) {
    if (t == end) continue;
    int reads = 0;
    for (int n : nodes) for (int u : g.nodes[n].inputs) reads += u == t;
    if (reads != pg.uses(t)) return false;
  }
  br->dq = pg.producerIndex(dq_out);
  br->f.assign(nodes.begin(), nodes.end());
  return true;
}

// table[v] = Q(f(DQ(v))) for the 256 values of x's type, by the reference kernels; false
// where one fails, or (no_nan) where f(DQ(v)) is NaN for some v.
bool branchTable(const ir::Graph& g, const Branch& br, int end, const ir::Node& q, DType yt, bool no_nan,
                 std::vector<uint8_t>* table) {
  std::map<int, std::vector<uint8_t>> values;
  std::vector<uint8_t>& all = values[br.d.x];
  all.resize(256);
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);  // as int8: 0..127, -128..-1
  if (!evaluate(g, g.nodes[br.dq], values, DType::kFloat32)) return false;
  for (int n : br.f) if (!evaluate(g, g.nodes[n], values, DType::kFloat32)) return false;
  const std::vector<uint8_t> floats = values[end];
  for (int v = 0; v < 256 && no_nan; ++v) {
    float x;
    std::memcpy(&x, floats.data() + 4 * v, 4);
    if (x != x) return false;
  }
  values[q.inputs[0]] = floats;  // Q reads the movement's or the concat's value: here this branch's
  if (!evaluate(g, q, values, yt)) return false;
  *table = values[q.outputs[0]];
  return true;
}

// Q(M(Concat(f1(DQ1(x1)), ..., fn(DQn(xn))))) or Q(M(f(DQ(x)))) -> the same on the
// integers: see the top of the file. M: movement nodes, none or more (a MaxPool among
// them needs Q's scale positive: then Q(max of values) is the max of Q(values), and
// no f(DQ(v)) may be NaN). Each branch is xi as it is where it has no f and its DQ has
// Q's type, scale and zero point, else Gather(table_i, xi). `alone`: also Q(f(DQ(x)))
// with no M and no Concat (one lookup in Q's place), run after the QLinear ops took
// theirs.
StatusOr<bool> integerDomainOnce(FusionContext& ctx, bool alone) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  const bool lookups = findOp("Gather") != nullptr;  // (a minimal build may lack it: equal parameters only)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Q q;
    if (!quantizes(g, i, &q)) continue;
    const DType yt = g.nodes[i].attrs.get<QuantAttrs>().to;
    std::vector<int> chain;  // movement nodes, from Q's side
    bool pools = false;
    int t = q.y;
    for (const ir::Node* m;
         pg.singleUse(t) && (m = pg.producer(t, {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "MaxPool"}));) {
      bool other_inputs_const = true;
      for (size_t k = 1; k < m->inputs.size(); ++k) other_inputs_const = other_inputs_const && (m->inputs[k] < 0 || isConst(g, m->inputs[k]));
      if (!other_inputs_const || m->outputs.size() != 1) break;
      pools = pools || std::strcmp(m->op->name, "MaxPool") == 0;
      chain.push_back(pg.producerIndex(t));
      t = m->inputs[0];
    }
    const ir::Node* concat = pg.singleUse(t) ? pg.producer(t, {"Concat"}) : nullptr;
    if (chain.empty() && !concat && !alone) continue;
    const std::vector<int> ends = concat ? concat->inputs : std::vector<int>{t};
    std::vector<Branch> branches(ends.size());
    bool ok = !ends.empty() && (!pools || constFloat(g, q.scale, 0) > 0.0f);
    for (size_t k = 0; k < ends.size() && ok; ++k) ok = branchOf(pg, ends[k], &branches[k]);
    if (!ok) continue;
    const auto zpValue = [&](int z) { return z < 0 ? 0.0 : ops::loadF(g.tensors[z].constant->data, g.tensors[z].dtype, 0); };
    std::vector<bool> same(ends.size());
    bool any_f = false;
    for (size_t k = 0; k < ends.size(); ++k) {
      const Dq& d = branches[k].d;
      any_f = any_f || !branches[k].f.empty();
      same[k] = branches[k].f.empty() && g.tensors[d.x].dtype == yt && constFloat(g, d.scale, 0) == constFloat(g, q.scale, 0) &&
                zpValue(d.zp) == zpValue(q.zp);
    }
    if (chain.empty() && !concat && !any_f) continue;  // Q(DQ(x)) alone: left as it is
    std::vector<std::vector<uint8_t>> tables(ends.size());
    for (size_t k = 0; k < ends.size() && ok; ++k) {
      ok = same[k] || (lookups && branchTable(g, branches[k], ends[k], g.nodes[i], yt, pools, &tables[k]));
    }
    if (!ok) continue;
    // The rewrite: each DQ's slot becomes its lookup (or goes), f goes, the concat and
    // the movement carry Q's type, and whichever of them ends the chain writes Q's output.
    const int y = g.nodes[i].outputs[0];
    const bool direct = chain.empty() && !concat;  // the one lookup writes y
    std::vector<int> ins, erase;
    for (size_t k = 0; k < ends.size(); ++k) {
      Branch& br = branches[k];
      erase.insert(erase.end(), br.f.begin(), br.f.end());
      if (same[k]) {
        ins.push_back(br.d.x);
        erase.push_back(br.dq);
        continue;
      }
      const std::string& qname = g.nodes[i].name;
      const int table = addPatternConstant(g, qname + "_table" + (concat ? std::to_string(k) : ""), yt, {256}, tables[k].data());
      const int out = direct ? y : addPatternTensor(g, g.tensors[br.d.x].name + "_requantized", yt, g.tensors[br.d.x].shape);
      g.nodes[br.dq] = quantNode("Gather", direct ? qname + "_lookup" : g.nodes[br.dq].name + "_requantize",
                                 Attrs(AxisAttrs{0, false}), {table, br.d.x}, out);
      ins.push_back(out);
    }
    int last = direct ? branches[0].dq : -1;  // the node that writes y
    if (concat) {
      const int c = pg.producerIndex(t);
      if (!chain.empty()) g.tensors[t].dtype = yt;
      g.nodes[c] = quantNode("Concat", g.nodes[c].name, g.nodes[c].attrs, ins, chain.empty() ? y : t);
      last = c;
    }
    if (!chain.empty()) {
      for (int n : chain) g.tensors[g.nodes[n].outputs[0]].dtype = yt;
      g.nodes[chain.back()].inputs[0] = concat ? t : ins[0];
      g.nodes[chain.front()].outputs[0] = y;
      last = chain.front();
    }
    ir::Node writer = g.nodes[last];
    erase.push_back(last);
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(writer), erase));
    return true;
  }
  return false;
}
StatusOr<bool> integerDomainBesideQLinearOps(FusionContext& ctx) { return integerDomainOnce(ctx, false); }
StatusOr<bool> integerDomainAlone(FusionContext& ctx) { return integerDomainOnce(ctx, true); }

// Gemm(DQ(a), DQ(b), C?) -> MatMulIntegerToFloat (see the top of the file).
StatusOr<bool> gemmOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& gemm = g.nodes[i];
    if (!isOp(gemm, "Gemm") || gemm.inputs.size() < 2) continue;
    const auto& ga = gemm.attrs.get<GemmAttrs>();
    const int c = gemm.inputs.size() > 2 ? gemm.inputs[2] : -1;
    if (ga.alpha != 1.0f || ga.transpose_a || (c >= 0 && ga.beta != 1.0f)) continue;
    Dq a, b;
    if (!pg.singleUse(gemm.inputs[1]) || !dequantized(pg, gemm.inputs[0], &a) || !dequantized(pg, gemm.inputs[1], &b)) continue;
    const ir::Tensor& bt = g.tensors[size_t(b.x)];
    if (!isInt8(g.tensors[a.x].dtype) || !isInt8(bt.dtype) || !bt.isConstant() || bt.shape.size() != 2 ||
        g.tensors[a.x].shape.size() != 2) {
      continue;
    }
    const int64_t K = ga.transpose_b ? bt.shape[1] : bt.shape[0], N = ga.transpose_b ? bt.shape[0] : bt.shape[1];
    if (!paramsFit(g, a, 0, 0) || !paramsFit(g, b, ga.transpose_b ? 0 : 1, N)) continue;
    if (c >= 0 && (g.tensors[c].dtype != DType::kFloat32 || g.tensors[c].shape != Shape{N})) continue;
    if (!findOp("MatMulIntegerToFloat")) return false;
    int w = b.x;
    if (ga.transpose_b) {  // [N, K] -> [K, N], one byte a value
      const auto* src = static_cast<const uint8_t*>(bt.constant->data);
      std::vector<uint8_t> t(size_t(K * N));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) t[size_t(k * N + n)] = src[n * K + k];
      w = addPatternConstant(g, bt.name + "_kn", bt.dtype, {K, N}, t.data());
    }
    std::vector<int> ins = {a.x, w, a.scale, b.scale, zeroPoint(g, a), zeroPoint(g, b)};
    if (c >= 0) ins.push_back(c);
    const int y = g.nodes[i].outputs[0];
    const std::string name = g.nodes[i].name;
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), quantNode("MatMulIntegerToFloat", name, Attrs(), ins, y)));
    return true;
  }
  return false;
}

StatusOr<bool> fuseOnce(FusionContext& ctx) {
  ASSIGN_OR_RETURN(bool integer, integerDomainBesideQLinearOps(ctx));
  if (integer) return true;
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Q q;
    if (!quantizes(g, i, &q) || !pg.singleUse(q.y)) continue;
    const ir::Node* op = pg.producer(q.y, {"Conv2D", "MatMul", "BatchMatMul", "Add", "Mul"});
    if (!op || op->inputs.size() < 2) continue;
    Dq a, b;
    if (!dequantized(pg, op->inputs[0], &a) || !dequantized(pg, op->inputs[1], &b)) continue;
    if (!isInt8(g.tensors[a.x].dtype) || !isInt8(g.tensors[b.x].dtype)) continue;
    const int out = g.nodes[i].outputs[0];
    const Shape bs = g.tensors[b.x].shape;
    std::vector<int> ins;
    const char* fused = nullptr;
    Attrs attrs;
    if (isOp(*op, "Conv2D")) {
      if (!paramsFit(g, a, 0, 0) || !paramsFit(g, b, 0, bs[0])) continue;
      const int bias = int32Bias(g, pg, op->inputs.size() > 2 ? op->inputs[2] : -1, a.scale, b.scale, bs[0]);
      if (bias == -2) continue;
      fused = "QLinearConv";
      attrs = op->attrs;
      ins = {a.x, a.scale, zeroPoint(g, a), b.x, b.scale, zeroPoint(g, b), q.scale, q.zp};
      if (bias >= 0) ins.push_back(bias);
    } else if (isOp(*op, "MatMul") || isOp(*op, "BatchMatMul")) {
      const auto& m = op->attrs.get<MatMulAttrs>();
      const int64_t last = static_cast<int64_t>(bs.size()) - 1;
      if (m.transpose_a || m.transpose_b || !paramsFit(g, a, 0, 0) || !paramsFit(g, b, last, bs.back())) continue;
      fused = "QLinearMatMul";
      ins = {a.x, a.scale, zeroPoint(g, a), b.x, b.scale, zeroPoint(g, b), q.scale, q.zp};
    } else {
      if (!paramsFit(g, a, 0, 0) || !paramsFit(g, b, 0, 0) || g.tensors[a.x].dtype != g.tensors[b.x].dtype ||
          g.tensors[a.x].dtype != g.tensors[q.zp].dtype) {
        continue;
      }
      fused = isOp(*op, "Add") ? "QLinearAdd" : "QLinearMul";
      ins = {a.x, a.scale, zeroPoint(g, a), b.x, b.scale, zeroPoint(g, b), q.scale, q.zp};
    }
    if (!findOp(fused)) continue;  // a minimal build without the integer op keeps the float path
    RETURN_IF_ERROR(replaceWithPatternNode(g, q.index, quantNode(fused, op->name, std::move(attrs), ins, out)));
    return true;
  }
  return false;
}

// inference_qbmm_add_fusion (Appendix 3). MindSpore: Add(QuantBatchMatmul(x, w, scale), b)
// -> QuantBatchMatmul with bias_i32 = round(b / scale), not with a per-token scale. gkrt's
// quantised batch matmul with a float result is what the QDQ form writes,
// MatMul(DQ(a), DQ(w)), so the pattern is
//   Add(MatMul | BatchMatMul(DQ(a), DQ(w)), b)  ->  QuantBatchMatMul(a, as, azp, w, ws, wzp, B)
// Conditions: a int8/uint8 per tensor; w int8/uint8 per tensor or per column (its last
// axis); no transposes; the product read only by the Add; b (either operand) a float32
// constant with one element per output column, or DQ(int32) at exactly as*ws (taken as
// it is); B = round_half_even(b / (as*ws)) fits int32. B moves the bias by at most half a
// step of as*ws, as MindSpore's preprocessing does. The scales are constants here, so no
// per-token case arises.
struct QbmmAdd {
  int mm = -1, b = -1;
  Dq a, w;
  int64_t n = 0;
};
bool matchQbmmAdd(const PatternGraph& pg, const ir::Node& add, QbmmAdd* m) {
  const ir::Graph& g = pg.graph();
  if (!isOp(add, "Add") || add.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const ir::Node* mm = pg.producer(add.inputs[side], {"MatMul", "BatchMatMul"});
    if (!mm || mm->inputs.size() != 2 || !pg.singleUse(add.inputs[side])) continue;
    const auto& attrs = mm->attrs.get<MatMulAttrs>();
    if (attrs.transpose_a || attrs.transpose_b) continue;
    if (!dequantized(pg, mm->inputs[0], &m->a) || !dequantized(pg, mm->inputs[1], &m->w)) continue;
    if (!isInt8(g.tensors[m->a.x].dtype) || !isInt8(g.tensors[m->w.x].dtype)) continue;
    const Shape& ws = g.tensors[m->w.x].shape;
    if (ws.size() < 2 || !paramsFit(g, m->a, 0, 0) || !paramsFit(g, m->w, static_cast<int64_t>(ws.size()) - 1, ws.back())) {
      continue;
    }
    const int b = add.inputs[1 - side];
    const Shape& bs = g.tensors[b].shape;
    bool columns = elements(g, b) == ws.back() && !bs.empty() && bs.back() == ws.back();
    for (size_t d = 0; d + 1 < bs.size(); ++d) columns = columns && bs[d] == 1;
    if (!columns || g.tensors[add.outputs[0]].shape != g.tensors[add.inputs[side]].shape) continue;
    m->mm = pg.producerIndex(add.inputs[side]);
    m->b = b;
    m->n = ws.back();
    return true;
  }
  return false;
}

StatusOr<bool> fuseOneQbmmAdd(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    QbmmAdd m;
    if (!matchQbmmAdd(pg, g.nodes[i], &m)) continue;
    const int bias = int32Bias(g, pg, m.b, m.a.scale, m.w.scale, m.n);
    if (bias < 0) continue;
    std::vector<int> ins = {m.a.x, m.a.scale, zeroPoint(g, m.a), m.w.x, m.w.scale, zeroPoint(g, m.w), bias};
    const std::string name = g.nodes[m.mm].name;
    RETURN_IF_ERROR(replaceWithPatternNode(
        g, static_cast<int>(i), quantNode("QuantBatchMatMul", name, Attrs{}, ins, g.nodes[i].outputs[0]), {m.mm}));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseQuantDqOpQ(FusionContext& ctx) {
  ASSIGN_OR_RETURN(bool fused, rewriteAll(ctx, fuseOnce));
  ASSIGN_OR_RETURN(bool gemms, rewriteAll(ctx, gemmOnce));
  fused = fused || gemms;
  ASSIGN_OR_RETURN(bool tables, rewriteAll(ctx, integerDomainAlone));  // after the QLinear ops took theirs
  return fused || tables;
}

PassResult fuseQbmmAdd(FusionContext& ctx) {
  ASSIGN_OR_RETURN(bool quant, !findOp("QuantBatchMatMul") ? PassResult(false) : rewriteAll(ctx, fuseOneQbmmAdd));
  ASSIGN_OR_RETURN(bool block, fuseBlockQuantBias(ctx));  // MatMulNBits' form: its bias input
  return quant || block;
}

std::set<int> qbmmAddTensors(const ir::Graph& g) {
  std::set<int> tensors;
  if (!findOp("QuantBatchMatMul")) return tensors;
  PatternGraph pg(g);
  for (const ir::Node& n : g.nodes) {
    QbmmAdd m;
    if (!matchQbmmAdd(pg, n, &m)) continue;
    const ir::Node& mm = g.nodes[m.mm];
    tensors.insert(mm.outputs[0]);
    tensors.insert(mm.inputs.begin(), mm.inputs.end());  // the two DequantizeLinear outputs
  }
  return tensors;
}

}  // namespace gkrt::passes
