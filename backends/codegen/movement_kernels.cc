#include "backends/codegen/movement_kernels.h"

#include <cstring>

#include "backends/codegen/kernel_dialect.h"
#include "backends/codegen/render_helpers.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {
namespace {

constexpr const char* kNotMovement = "not a movement kernel";


// An unsigned type of the element's size: the bits move unchanged, whatever they mean.
const char* bitsType(DType t, const KernelDialect& d) {
  switch (t) {
    case DType::kUInt4: case DType::kInt4: case DType::kUInt2: case DType::kInt2: case DType::kFloat4E2M1:
      return nullptr;  // packed below a byte
    default:
      break;
  }
  switch (dtypeSize(t)) {
    case 1: return d.uchar_type;
    case 2: return d.ushort_type;
    case 4: return d.uint_type;
    case 8: return d.ulong_type;
    default: return nullptr;
  }
}

// The grid-stride loop over `items` indices `i` every kernel here runs.
std::string gridLoop(int64_t items, const KernelDialect& d) {
  const std::string L = d.long_type;
  return "  for (" + L + " i = (" + L + ")" + d.global_id + "; i < " + num(items) + "; i += (" + L + ")" + d.global_size + ") {\n";
}

// The opening of an elementwise kernel over `items` indices `i`: the signature (outputs
// y0.., inputs x0.. of `type`) and the grid-stride loop.
std::string elementwiseOpening(const ir::Node& node, size_t inputs, const std::string& name, const std::string& type,
                               int64_t items, const KernelDialect& d) {
  const std::string gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  std::string s = std::string(d.kernel_prefix) + " " + name + "(";
  for (size_t o = 0; o < node.outputs.size(); ++o) s += (o ? ", " : "") + gp + type + "* y" + num(int64_t(o));
  for (size_t i = 0; i < inputs; ++i) s += ", " + gp + "const " + type + "* x" + num(int64_t(i));
  return s + ") {\n" + gridLoop(items, d);
}

// ---- Split(x) -> pieces along `axis` ----
StatusOr<RenderedKernel> split(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const char* type = bitsType(x.dtype, d);
  if (!type) return unsupported("Split of " + std::string(dtypeName(x.dtype)) + " (elements of 1, 2, 4 or 8 bytes only)");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = node.attrs.get<SplitAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return unsupported("Split axis out of range");
  const ops::AxisSplit at = ops::splitAtAxis(x.shape, axis);
  int64_t end = 0;
  std::vector<int64_t> sizes;
  for (int t : node.outputs) {
    const Shape& s = g.tensors[t].shape;
    if (static_cast<int64_t>(s.size()) != rank) return unsupported("Split pieces of another rank");
    sizes.push_back(s[axis]);
    end += s[axis];
  }
  if (end != at.extent) return unsupported("Split pieces that do not cover the axis");
  RenderedKernel k;
  k.name = name;
  k.items = numElements(x.shape);
  const std::string L = d.long_type, inner = num(at.inner), ext = num(at.extent);
  std::string s = elementwiseOpening(node, 1, name, type, k.items, d);
  s += "    const " + L + " inner = i % " + inner + ", a = (i / " + inner + ") % " + ext + ", outer = i / " +
       num(at.inner * at.extent) + ";\n";
  int64_t start = 0;
  for (size_t p = 0; p < sizes.size(); ++p) {
    const bool last = p + 1 == sizes.size();
    s += std::string(p ? "    else " : "    ") + (last ? "" : "if (a < " + num(start + sizes[p]) + ") ") + "y" + num(int64_t(p)) +
         "[(outer * " + num(sizes[p]) + " + a - " + num(start) + ") * " + inner + " + inner] = x0[i];\n";
    start += sizes[p];
  }
  s += "  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- Tile, and Pad by reflection or edge copies: each output element reads one input
// element, its offset summed over the axes from the output index (no carried state) ----
StatusOr<RenderedKernel> indexMap(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const Shape& y = g.tensors[node.outputs[0]].shape;
  const char* type = bitsType(x.dtype, d);
  if (!type) return unsupported(std::string(node.op->name) + " of " + dtypeName(x.dtype) + " (elements of 1, 2, 4 or 8 bytes only)");
  const bool tile = isOp(node, "Tile"), broadcast = isOp(node, "BroadcastTo");
  const size_t rank = x.shape.size();
  if (y.size() < rank || (!tile && !broadcast && y.size() != rank)) {
    return unsupported(std::string(node.op->name) + " changing the rank oddly");
  }
  const size_t lead = y.size() - rank;
  PadMode mode = PadMode::kEdge;
  Ints pads;
  if (broadcast) {
    for (size_t a = 0; a < rank; ++a) {
      if (x.shape[a] != 1 && x.shape[a] != y[a + y.size() - rank]) return unsupported("BroadcastTo of a shape that does not broadcast");
    }
  } else if (!tile) {
    const auto& a = node.attrs.get<PadAttrs>();
    if (a.mode == PadMode::kConstant) return unsupported(kNotMovement);  // the cluster renderer's
    mode = a.mode, pads = a.pads;
    if (pads.size() != 2 * rank) return unsupported("Pad needs two pads per axis");
  }
  for (int64_t v : x.shape) if (v <= 0) return unsupported(std::string(node.op->name) + " of an empty input");
  RenderedKernel k;
  k.name = name;
  k.items = numElements(y);
  const std::string L = d.long_type;
  std::string s = elementwiseOpening(node, 1, name, type, k.items, d);
  s += "    " + L + " rest = i, off = 0, c;\n";
  int64_t stride = 1;
  for (size_t a = y.size(); a-- > lead;) {  // innermost axis first
    const size_t xa = a - lead;
    const int64_t dim = x.shape[xa];
    s += "    c = rest % " + num(y[a]) + "; rest /= " + num(y[a]) + ";\n";
    if (tile) {
      s += "    c %= " + num(dim) + ";\n";
    } else if (broadcast) {
      if (dim == 1) s += "    c = 0;\n";
    } else {
      if (pads[xa] != 0) s += "    c -= " + num(pads[xa]) + ";\n";
      if (mode == PadMode::kEdge) {
        s += "    c = c < 0 ? 0 : (c > " + num(dim - 1) + " ? " + num(dim - 1) + " : c);\n";
      } else {  // reflect, excluding the edge (the shape rule keeps the pads under the axis)
        s += "    c = c < 0 ? -c : (c > " + num(dim - 1) + " ? " + num(2 * (dim - 1)) + " - c : c);\n";
      }
    }
    s += "    off += c * " + num(stride) + ";\n";
    stride *= dim;
  }
  s += "    y0[i] = x0[off];\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- ArgMax / ArgMin (+WithValue) of float32 along an axis: one work-item per output
// element scans the axis; the first extreme wins and a NaN never replaces the best (the
// reference's comparisons, so a leading NaN stays best) ----
StatusOr<RenderedKernel> argExtreme(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  if (x.dtype != DType::kFloat32) return unsupported(std::string(node.op->name) + " of " + dtypeName(x.dtype) + " (float32 only here)");
  if (g.tensors[node.outputs[0]].dtype != DType::kInt64) return unsupported(std::string(node.op->name) + " to another type than int64");
  if (node.outputs.size() > 1 && g.tensors[node.outputs[1]].dtype != DType::kFloat32) return unsupported("its values as float32 only");
  if (x.shape.empty()) return unsupported(std::string(node.op->name) + " of a scalar");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size())));
  const ops::AxisSplit at = ops::splitAtAxis(x.shape, axis);
  if (at.extent <= 0) return unsupported(std::string(node.op->name) + " over an empty axis");
  const bool max = isOp(node, "ArgMax") || isOp(node, "ArgMaxWithValue");
  const std::string L = d.long_type, gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  RenderedKernel k;
  k.name = name;
  k.items = at.outer * at.inner;
  std::string s = std::string(d.kernel_prefix) + " " + name + "(" + gp + L + "* y0, " +
                  (node.outputs.size() > 1 ? gp + "float* y1, " : std::string()) + gp + "const float* x0) {\n" + gridLoop(k.items, d);
  s += "    " + gp + "const float* p = x0 + (i / " + num(at.inner) + ") * " + num(at.extent * at.inner) + " + i % " + num(at.inner) + ";\n";
  s += "    " + L + " best = 0;\n    float best_v = p[0];\n";
  s += "    for (" + L + " e = 1; e < " + num(at.extent) + "; ++e) {\n";
  s += "      const float v = p[e * " + num(at.inner) + "];\n";
  s += std::string("      if (v ") + (max ? ">" : "<") + " best_v) { best = e; best_v = v; }\n    }\n";
  s += "    y0[i] = best;\n";
  if (node.outputs.size() > 1) s += "    y1[i] = best_v;\n";
  s += "  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- CumSum along an axis (float32, int32, int64): one work-item per (outer, inner)
// runs the prefix sum, forward or reversed, inclusive or exclusive ----
StatusOr<RenderedKernel> cumSum(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const char* type = d.typeName(x.dtype);
  if (!type || x.dtype == DType::kBool || dtypeSize(x.dtype) == 1) return unsupported("CumSum of " + std::string(dtypeName(x.dtype)) + " (float32, int32, int64 only)");
  const auto& a = node.attrs.get<CumSumAttrs>();
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(x.shape.size())));
  const ops::AxisSplit at = ops::splitAtAxis(x.shape, axis);
  const std::string L = d.long_type, gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "", T = type;
  RenderedKernel k;
  k.name = name;
  k.items = at.outer * at.inner;
  std::string s = elementwiseOpening(node, 1, name, T, k.items, d);
  s += "    const " + L + " base = (i / " + num(at.inner) + ") * " + num(at.extent * at.inner) + " + i % " + num(at.inner) + ";\n";
  s += "    " + T + " acc = 0;\n";
  s += "    for (" + L + " k = 0; k < " + num(at.extent) + "; ++k) {\n";
  s += "      const " + L + " at = base + (" + (a.reverse ? num(at.extent - 1) + " - k" : std::string("k")) + ") * " + num(at.inner) + ";\n";
  s += a.exclusive ? "      const " + T + " v = x0[at];\n      y0[at] = acc;\n      acc += v;\n" : "      acc += x0[at];\n      y0[at] = acc;\n";
  s += "    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// A program-scope table `name` of `v`, before the kernel.
template <class T>
std::string table(const KernelDialect& d, const char* type, const std::string& name, const std::vector<T>& v,
                  std::string (*literal)(T)) {
  std::string s = std::string(d.program_constant) + " " + type + " " + name + "[" + num(static_cast<int64_t>(v.size())) + "] = {";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? (k % 16 ? ", " : ",\n    ") : "") + literal(v[k]);
  return s + "};\n";
}
std::string intLiteral(int64_t v) { return num(v); }
std::string weightLiteral(float v) { return floatLiteral(v); }

// Source positions and weights of one axis: `taps` per output index.
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
};
AxisTaps axisTaps(const ResizeAttrs& a, int64_t in_len, int64_t out_len, float given_scale) {
  AxisTaps t;
  t.taps = a.mode == ResizeMode::kNearest ? 1 : a.mode == ResizeMode::kCubic ? 4 : 2;
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = ops::resizeSourceCoord(a.coordinate_transformation, o, in_len, out_len, given_scale);
    if (a.mode == ResizeMode::kNearest) {
      t.index.push_back(ops::resizeNearestIndex(a.nearest_mode, x, in_len));
    } else if (a.mode == ResizeMode::kCubic) {
      const ops::ResizeCubicTaps c = ops::resizeCubicTaps(x, in_len, a.cubic_coeff_a, a.exclude_outside);
      for (int k = 0; k < 4; ++k) t.index.push_back(c.index[k]), t.weight.push_back(static_cast<float>(c.weight[k]));
    } else {  // linear, as the reference: the coordinate clamped, the next pixel clamped
      const double c = std::min(std::max(x, 0.0), static_cast<double>(in_len - 1));
      const int64_t i0 = static_cast<int64_t>(c), i1 = std::min(i0 + 1, in_len - 1);
      const double f = c - static_cast<double>(i0);
      t.index.push_back(i0), t.index.push_back(i1);
      t.weight.push_back(static_cast<float>(1 - f)), t.weight.push_back(static_cast<float>(f));
    }
  }
  return t;
}

// ---- Resize(x [N, C, H, W]) -> [N, C, sizes] ----
StatusOr<RenderedKernel> resize(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const auto& a = node.attrs.get<ResizeAttrs>();
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const Shape& y = g.tensors[node.outputs[0]].shape;
  if (x.shape.size() != 4 || y.size() != 4) return unsupported("Resize of a 4-D NCHW tensor only");
  const bool nearest = a.mode == ResizeMode::kNearest;
  const char* type = nearest ? bitsType(x.dtype, d) : (x.dtype == DType::kFloat32 ? "float" : nullptr);
  if (!type) return unsupported("Resize of " + std::string(dtypeName(x.dtype)) + (nearest ? " (elements of 1, 2, 4 or 8 bytes only)" : " (float32 only when not nearest)"));
  const int64_t ih = x.shape[2], iw = x.shape[3], oh = y[2], ow = y[3];
  if (ih <= 0 || iw <= 0 || oh <= 0 || ow <= 0) return unsupported("Resize of an empty plane");
  const AxisTaps ty = axisTaps(a, ih, oh, a.scale_h), tx = axisTaps(a, iw, ow, a.scale_w);
  RenderedKernel k;
  k.name = name;
  k.items = numElements(y);
  const std::string L = d.long_type, T = num(ty.taps);
  std::string s = table(d, "int", name + "_ry", ty.index, intLiteral) + table(d, "int", name + "_rx", tx.index, intLiteral);
  if (!nearest) s += table(d, "float", name + "_wy", ty.weight, weightLiteral) + table(d, "float", name + "_wx", tx.weight, weightLiteral);
  s += elementwiseOpening(node, 1, name, type, k.items, d);
  s += "    const " + L + " w = i % " + num(ow) + ", h = (i / " + num(ow) + ") % " + num(oh) + ", plane = i / " + num(oh * ow) + ";\n";
  s += "    " + std::string(d.global_ptr[0] ? std::string(d.global_ptr) + " " : "") + "const " + type + "* src = x0 + plane * " +
       num(ih * iw) + ";\n";
  if (nearest) {
    s += "    y0[i] = src[(" + L + ")" + name + "_ry[h] * " + num(iw) + " + " + name + "_rx[w]];\n";
  } else {
    // sum over the row taps of weight * (sum over the column taps): the reference's order
    s += "    float v = 0.0f;\n";
    s += "    for (int r = 0; r < " + T + "; ++r) {\n";
    s += "      const " + L + " row = (" + L + ")" + name + "_ry[h * " + T + " + r] * " + num(iw) + ";\n";
    s += "      float acc = 0.0f;\n";
    s += "      for (int c = 0; c < " + num(tx.taps) + "; ++c) acc += " + name + "_wx[w * " + num(tx.taps) + " + c] * src[row + " + name +
         "_rx[w * " + num(tx.taps) + " + c]];\n";
    s += "      v += " + name + "_wy[h * " + T + " + r] * acc;\n    }\n";
    s += "    y0[i] = v;\n";
  }
  s += "  }\n}\n";
  k.source = std::move(s);
  return k;
}

// A C type for Gather's indices.
const char* indexType(DType t, const KernelDialect& d) {
  return t == DType::kFloat32 || t == DType::kBool ? nullptr : d.cTypeName(t);
}

}  // namespace

StatusOr<RenderedKernel> renderGatherKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                            const KernelDialect& d, int fault_id) {
  if (!usesFaultRecord(node)) return unsupported(kNotMovement);
  const bool elements = isOp(node, "GatherElements");
  const std::string op = node.op->name;
  if (node.inputs.size() != 2 || node.inputs[0] < 0 || node.inputs[1] < 0 || node.outputs.size() != 1 || node.outputs[0] < 0) {
    return unsupported(op + " needs its data, its indices and one output");
  }
  const ir::Tensor &x = g.tensors[node.inputs[0]], &ind = g.tensors[node.inputs[1]];
  const char* T = bitsType(x.dtype, d);
  const char* I = indexType(ind.dtype, d);
  if (!T) return unsupported(op + " of " + dtypeName(x.dtype) + " elements");
  if (!I) return unsupported(op + " indices of " + dtypeName(ind.dtype));
  if (!isStatic(x.shape) || !isStatic(ind.shape)) return unsupported(op + " of a dynamic shape");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size())));
  if (elements && ind.shape.size() != x.shape.size()) return unsupported("GatherElements indices of another rank");
  const ops::AxisSplit s = ops::splitAtAxis(x.shape, axis);
  const int64_t n_ind = numElements(ind.shape);
  const bool cl = std::strcmp(d.name, "opencl") == 0;
  const std::string L = d.long_type, gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  RenderedKernel k;
  k.name = name;
  k.items = elements ? n_ind : s.outer * n_ind * s.inner;
  std::string src = std::string(d.kernel_prefix) + " " + name + "(" + gp + T + "* y0, " + gp + "const " + T + "* x0, " + gp +
                    "const " + I + "* x1, " + gp + "int* fault) {\n" + gridLoop(k.items, d);
  if (elements) {  // output i: the indices' element i; its coordinates with the axis one replaced
    src += "    const " + L + " j = i;\n";
  } else {  // i = (o * n_ind + j) * inner + r  ->  x[(o * extent + index[j]) * inner + r]
    src += "    const " + L + " r = i % " + num(s.inner) + ", j = (i / " + num(s.inner) + ") % " + num(n_ind) + ", o = i / " +
           num(s.inner * n_ind) + ";\n";
  }
  src += "    " + L + " at = (" + L + ")x1[j];\n";
  src += "    if (at < 0) at += " + num(s.extent) + ";\n";
  // the fault record as ints: [0] the kernel, then the value and the position as 64-bit words 1 and 2
  src += "    if (at < 0 || at >= " + num(s.extent) + ") {\n";
  src += std::string("      if (") + (cl ? "atomic_cmpxchg" : "atomicCAS") + "(fault, 0, " + num(fault_id + 1) + ") == 0) {\n";
  src += "        ((" + gp + L + "*)fault)[1] = (" + L + ")x1[j];\n";
  src += "        ((" + gp + L + "*)fault)[2] = j;\n      }\n";
  src += "      y0[i] = 0;\n      continue;\n    }\n";
  if (elements) {
    src += "    " + L + " rest = i, off = 0, c;\n";
    int64_t stride = 1;
    for (size_t a = x.shape.size(); a-- > 0;) {
      src += "    c = rest % " + num(ind.shape[a]) + "; rest /= " + num(ind.shape[a]) + ";\n";
      src += "    off += " + std::string(static_cast<int64_t>(a) == axis ? "at" : "c") + " * " + num(stride) + ";\n";
      stride *= x.shape[a];
    }
    src += "    y0[i] = x0[off];\n  }\n}\n";
  } else {
    src += "    y0[i] = x0[(o * " + num(s.extent) + " + at) * " + num(s.inner) + " + r];\n  }\n}\n";
  }
  k.source = std::move(src);
  return k;
}

bool notAMovementKernel(const Status& status) { return status.message() == kNotMovement; }

bool usesFaultRecord(const ir::Node& node) { return isOp(node, "Gather") || isOp(node, "GatherElements"); }

StatusOr<RenderedKernel> renderMovementKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                              const KernelDialect& d) {
  const bool is_split = isOp(node, "Split"), is_resize = isOp(node, "Resize");
  const bool is_map = isOp(node, "Tile") || isOp(node, "BroadcastTo") ||
                      (isOp(node, "Pad") && node.attrs.get<PadAttrs>().mode != PadMode::kConstant);
  const bool is_arg = isOp(node, "ArgMax") || isOp(node, "ArgMin") || isOp(node, "ArgMaxWithValue") || isOp(node, "ArgMinWithValue");
  const bool is_cumsum = isOp(node, "CumSum");
  if (!is_split && !is_resize && !is_map && !is_arg && !is_cumsum) return unsupported(kNotMovement);
  if (node.inputs.empty() || node.inputs[0] < 0) return unsupported(std::string(node.op->name) + " without its input");
  for (int t : node.outputs) if (t < 0) return unsupported(std::string(node.op->name) + " with an absent output");
  for (int t : node.outputs) {
    if (!is_arg && g.tensors[t].dtype != g.tensors[node.inputs[0]].dtype) {
      return unsupported(std::string(node.op->name) + " changing the type");
    }
  }
  if (!isStatic(g.tensors[node.inputs[0]].shape)) return unsupported(std::string(node.op->name) + " of a dynamic shape");
  for (int t : node.outputs) if (!isStatic(g.tensors[t].shape)) return unsupported(std::string(node.op->name) + " of a dynamic shape");
  if (is_map) return indexMap(g, node, name, d);
  if (is_arg) return argExtreme(g, node, name, d);
  if (is_cumsum) return cumSum(g, node, name, d);
  return is_split ? split(g, node, name, d) : resize(g, node, name, d);
}

}  // namespace gkrt::codegen
