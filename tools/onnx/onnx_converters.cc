// ONNX op -> gkrt ops, one small function per ONNX op (or family). Attribute and
// opset differences are resolved here; unsupported attribute values return
// kUnsupported naming the attribute.
#include <cmath>
#include <map>
#include <numeric>

#include "runtime/ir/ops/op_helpers.h"
#include "tools/onnx/onnx_context.h"
#include "tools/onnx/onnx_import.h"

namespace gkrt::onnx_import {
namespace {

using Node = onnx::NodeProto;
using Outs = std::vector<Value>;

Status unsupported(const Node& n, const std::string& what) {
  return makeError(StatusCode::kUnsupported, n.op_type(), ": ", what);
}

Shape shapeOf(Context& c, Value v) { return c.tensor(v).shape; }
DType dtypeOf(Context& c, Value v) { return c.tensor(v).dtype; }

Value scalarLike(Context& c, float v, Value like) {
  HostTensor t(dtypeOf(c, like), {});
  ops::storeF(t.data(), t.dtype(), 0, v);
  return c.constant(t);
}

template <const char* kOp> Status unaryOp(Context& c, const Node& n, Outs& o) {
  o = {c.op1(kOp, {c.in(n, 0)})};
  return Status::Ok();
}
template <const char* kOp> Status binaryOp(Context& c, const Node& n, Outs& o) {
  o = {c.op1(kOp, {c.in(n, 0), c.in(n, 1)})};
  return Status::Ok();
}

#define NAME(var, text) constexpr char var[] = text
NAME(kAbs, "Abs"); NAME(kNeg, "Neg"); NAME(kExp, "Exp"); NAME(kLog, "Log"); NAME(kSqrt, "Sqrt");
NAME(kReciprocal, "Reciprocal"); NAME(kFloor, "Floor"); NAME(kCeil, "Ceil"); NAME(kRound, "Round");
NAME(kSin, "Sin"); NAME(kCos, "Cos"); NAME(kTan, "Tan"); NAME(kAsin, "Asin"); NAME(kAcos, "ACos");
NAME(kAtan, "Atan"); NAME(kSinh, "Sinh"); NAME(kCosh, "Cosh"); NAME(kAsinh, "Asinh"); NAME(kAcosh, "Acosh");
NAME(kTanh, "Tanh"); NAME(kSigmoid, "Sigmoid"); NAME(kRelu, "ReLU"); NAME(kSign, "Sign"); NAME(kErf, "Erf");
NAME(kIsNaN, "IsNan"); NAME(kNot, "LogicalNot"); NAME(kSoftsign, "Softsign"); NAME(kHardSwish, "HSwish");
NAME(kIdentity, "IdentityMath");
NAME(kAdd, "Add"); NAME(kSub, "Sub"); NAME(kMul, "Mul"); NAME(kDiv, "Div"); NAME(kEqual, "Equal");
NAME(kGreater, "Greater"); NAME(kGreaterEqual, "GreaterEqual"); NAME(kLess, "Less"); NAME(kLessEqual, "LessEqual");
NAME(kAnd, "LogicalAnd"); NAME(kOr, "LogicalOr"); NAME(kXor, "LogicalXor");
#undef NAME

Status pow(Context& c, const Node& n, Outs& o) {
  Value base = c.in(n, 0), e = c.in(n, 1);
  if (dtypeOf(c, e) != dtypeOf(c, base)) e = c.op1("Cast", {e}, CastAttrs{dtypeOf(c, base)});
  o = {c.op1("Pow", {base, e})};
  return Status::Ok();
}
Status mod(Context& c, const Node& n, Outs& o) {
  o = {c.op1(attrInt(n, "fmod", 0) ? "Mod" : "FloorMod", {c.in(n, 0), c.in(n, 1)})};
  return Status::Ok();
}
Status where(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Select", {c.in(n, 0), c.in(n, 1), c.in(n, 2)})};
  return Status::Ok();
}
template <bool kMax> Status variadicMinMax(Context& c, const Node& n, Outs& o) {
  Value acc = c.in(n, 0);
  for (int k = 1; k < n.input_size(); ++k) acc = c.op1(kMax ? "Maximum" : "Minimum", {acc, c.in(n, k)});
  o = {acc};
  return Status::Ok();
}
Status sum(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(c.in(n, k));
  o = {ins.size() == 1 ? c.op1("IdentityMath", ins) : c.op1("AddN", ins)};
  return Status::Ok();
}
Status mean(Context& c, const Node& n, Outs& o) {
  RETURN_IF_ERROR(sum(c, n, o));
  o[0] = c.op1("Mul", {o[0], scalarLike(c, 1.0f / static_cast<float>(n.input_size()), o[0])});
  return Status::Ok();
}

Status leakyRelu(Context& c, const Node& n, Outs& o) {
  o = {c.op1("LeakyReLU", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 0.01f)})};
  return Status::Ok();
}
Status elu(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Elu", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 1.0f)})};
  return Status::Ok();
}
Status selu(Context& c, const Node& n, Outs& o) {
  Value e = c.op1("Elu", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 1.67326319217681884765625f)});
  o = {c.op1("Mul", {e, scalarLike(c, attrFloat(n, "gamma", 1.05070102214813232421875f), e)})};
  return Status::Ok();
}
Status hardSigmoid(Context& c, const Node& n, Outs& o) {  // max(0, min(1, alpha x + beta))
  const float alpha = attrFloat(n, "alpha", 0.2f), beta = attrFloat(n, "beta", 0.5f);
  Value x = c.in(n, 0);
  Value lin = c.op1("Add", {c.op1("Mul", {x, scalarLike(c, alpha, x)}), scalarLike(c, beta, x)});
  o = {c.op1("Clip", {lin}, ClipAttrs{0.0f, 1.0f})};
  return Status::Ok();
}
Status softplus(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Softplus", {c.in(n, 0)}, SoftplusAttrs{1.0f, 20.0f})};
  return Status::Ok();
}
Status gelu(Context& c, const Node& n, Outs& o) {
  const std::string a = attrString(n, "approximate", "none");
  o = {c.op1("GeLU", {c.in(n, 0)}, GeluAttrs{a == "tanh" ? GeluApprox::kTanh : GeluApprox::kNone})};
  return Status::Ok();
}
Status prelu(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0), slope = c.in(n, 1);
  Value neg = c.op1("Less", {x, scalarLike(c, 0, x)});
  o = {c.op1("Select", {neg, c.op1("Mul", {x, slope}), x})};
  return Status::Ok();
}
Status isInf(Context& c, const Node& n, Outs& o) {
  if (!attrInt(n, "detect_negative", 1) || !attrInt(n, "detect_positive", 1)) {
    return unsupported(n, "detect_negative/detect_positive = 0 is not supported");
  }
  o = {c.op1("IsInf", {c.in(n, 0)})};
  return Status::Ok();
}
Status clip(Context& c, const Node& n, Outs& o) {
  ClipAttrs a;
  if (c.opset() < 11) {
    a.min = attrFloat(n, "min", a.min);
    a.max = attrFloat(n, "max", a.max);
  } else {
    if (c.present(n, 1)) {
      ASSIGN_OR_RETURN(a.min, c.constFloat(c.in(n, 1), "Clip min"));
    }
    if (c.present(n, 2)) {
      ASSIGN_OR_RETURN(a.max, c.constFloat(c.in(n, 2), "Clip max"));
    }
  }
  if (!isFloat(dtypeOf(c, c.in(n, 0)))) return unsupported(n, "integer inputs are not supported");
  o = {c.op1("Clip", {c.in(n, 0)}, a)};
  return Status::Ok();
}

StatusOr<DType> onnxDType(const Node& n, int64_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::kFloat32;
    case onnx::TensorProto::FLOAT16: return DType::kFloat16;
    case onnx::TensorProto::INT8: return DType::kInt8;
    case onnx::TensorProto::UINT8: return DType::kUInt8;
    case onnx::TensorProto::INT32: return DType::kInt32;
    case onnx::TensorProto::INT64: return DType::kInt64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    default: return makeError(StatusCode::kUnsupported, n.op_type(), ": element type ", t, " is not supported");
  }
}
Status cast(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(DType to, onnxDType(n, attrInt(n, "to", 1)));
  o = {c.op1("Cast", {c.in(n, 0)}, CastAttrs{to})};
  return Status::Ok();
}
Status castLike(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Cast", {c.in(n, 0)}, CastAttrs{dtypeOf(c, c.in(n, 1))})};
  return Status::Ok();
}
// Inference: the identity, and an all-true mask. training_mode must be absent or false.
Status dropout(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 2)) {
    ASSIGN_OR_RETURN(Ints training, c.constInts(c.in(n, 2), "Dropout training_mode"));
    if (!training.empty() && training[0]) return unsupported(n, "training_mode=true is not supported");
  }
  Value x = c.in(n, 0);
  HostTensor yes(DType::kBool, {});
  yes.as<uint8_t>()[0] = 1;
  o = {c.op1("IdentityMath", {x}), c.op1("BroadcastTo", {c.constant(yes)}, ShapeAttrs{shapeOf(c, x)})};
  return Status::Ok();
}

// ---- linear algebra ------------------------------------------------------------
Status matmul(Context& c, const Node& n, Outs& o) {
  Value a = c.in(n, 0), b = c.in(n, 1);
  const Shape sa = shapeOf(c, a), sb = shapeOf(c, b);
  if (sa.empty() || sb.empty()) return unsupported(n, "scalar operands");
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) a = c.op1("Reshape", {a}, ShapeAttrs{{1, sa[0]}});
  if (vb) b = c.op1("Reshape", {b}, ShapeAttrs{{sb[0], 1}});
  const bool batched = shapeOf(c, a).size() > 2 || shapeOf(c, b).size() > 2;
  Value y = c.op1(batched ? "BatchMatMul" : "MatMul", {a, b}, MatMulAttrs{});
  if (va || vb) {
    Shape s = shapeOf(c, y);
    if (vb) s.erase(s.end() - 1);
    if (va) s.erase(s.end() - (vb ? 1 : 2));
    y = c.op1("Reshape", {y}, ShapeAttrs{s});
  }
  o = {y};
  return Status::Ok();
}
Status gemm(Context& c, const Node& n, Outs& o) {
  GemmAttrs a{attrFloat(n, "alpha", 1.0f), attrFloat(n, "beta", 1.0f), attrInt(n, "transA", 0) != 0,
              attrInt(n, "transB", 0) != 0};
  std::vector<Value> ins = {c.in(n, 0), c.in(n, 1)};
  if (c.present(n, 2)) ins.push_back(c.in(n, 2));
  o = {c.op1("Gemm", ins, a)};
  return Status::Ok();
}

// auto_pad -> explicit {begin..., end...} for the spatial dims.
StatusOr<Ints> spatialPads(const Node& n, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dil) {
  const std::string auto_pad = attrString(n, "auto_pad", "NOTSET");
  const size_t r = kernel.size();
  Ints pads = attrInts(n, "pads", Ints(2 * r, 0));
  if (auto_pad == "NOTSET") return pads;
  if (auto_pad == "VALID") return Ints(2 * r, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return makeError(StatusCode::kUnsupported, n.op_type(), ": auto_pad ", auto_pad, " is not supported");
  }
  for (size_t d = 0; d < r; ++d) {
    const int64_t in = x[2 + d], out = (in + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - in);
    const int64_t small = total / 2, large = total - small;
    pads[d] = auto_pad == "SAME_UPPER" ? small : large;
    pads[d + r] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

Status conv(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0), w = c.in(n, 1);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 4) return unsupported(n, "only 2-D convolution (4-D input) is supported, got " + shapeToString(xs));
  const Shape ws = shapeOf(c, w);
  Conv2DAttrs a;
  a.strides = attrInts(n, "strides", {1, 1});
  a.dilations = attrInts(n, "dilations", {1, 1});
  a.groups = attrInt(n, "group", 1);
  ASSIGN_OR_RETURN(a.pads, spatialPads(n, xs, {ws[2], ws[3]}, a.strides, a.dilations));
  std::vector<Value> ins = {x, w, c.present(n, 2) ? c.in(n, 2) : Value{}};
  o = {c.op1("Conv2D", ins, a)};
  c.convs()[o[0].id] = {x, w, ins[2], a};
  return Status::Ok();
}

// Conv -> BatchNormalization with constant parameters, the Conv output read only by
// the BN: scale the weights and shift the bias instead (w' = w s, b' = (b - mean) s +
// beta with s = gamma / sqrt(var + eps)).
bool foldIntoConv(Context& c, const Node& n, float eps, Outs& o) {
  const Value y = c.in(n, 0);
  auto it = c.convs().find(y.id);
  if (it == c.convs().end() || c.uses(n.input(0)) != 1 || !c.isConstant(it->second.w)) return false;
  for (int k = 1; k <= 4; ++k) if (!c.isConstant(c.in(n, k)) || dtypeOf(c, c.in(n, k)) != DType::kFloat32) return false;
  const auto& conv = it->second;
  if (dtypeOf(c, conv.w) != DType::kFloat32 || (conv.b.id >= 0 && !c.isConstant(conv.b))) return false;
  HostTensor w = *c.constant(conv.w, "w");
  const auto gamma = c.constant(c.in(n, 1), "")->toFloats(), beta = c.constant(c.in(n, 2), "")->toFloats();
  const auto mean = c.constant(c.in(n, 3), "")->toFloats(), var = c.constant(c.in(n, 4), "")->toFloats();
  const int64_t out_ch = w.shape()[0], per = w.size() / std::max<int64_t>(out_ch, 1);
  if (static_cast<int64_t>(gamma.size()) != out_ch) return false;
  std::vector<float> bias(out_ch, 0.0f);
  if (conv.b.id >= 0) bias = c.constant(conv.b, "")->toFloats();
  HostTensor nb(DType::kFloat32, {out_ch});
  for (int64_t ch = 0; ch < out_ch; ++ch) {
    const double s = gamma[ch] / std::sqrt(static_cast<double>(var[ch]) + eps);
    for (int64_t i = 0; i < per; ++i) w.as<float>()[ch * per + i] = static_cast<float>(w.as<float>()[ch * per + i] * s);
    nb.as<float>()[ch] = static_cast<float>((bias[ch] - mean[ch]) * s + beta[ch]);
  }
  o = {c.op1("Conv2D", {conv.x, c.constant(w), c.constant(nb)}, conv.attrs)};  // the old Conv is dead now
  return true;
}

template <bool kMax> Status pool(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 4) return unsupported(n, "only 2-D pooling (4-D input) is supported");
  if (n.output_size() > 1 && !n.output(1).empty()) return unsupported(n, "the Indices output is not supported");
  for (int64_t d : attrInts(n, "dilations", {1, 1})) if (d != 1) return unsupported(n, "dilations other than 1");
  PoolAttrs a;
  a.kernel = attrInts(n, "kernel_shape");
  a.strides = attrInts(n, "strides", {1, 1});
  a.ceil_mode = attrInt(n, "ceil_mode", 0) != 0;
  a.count_include_pad = attrInt(n, "count_include_pad", 0) != 0;
  ASSIGN_OR_RETURN(a.pads, spatialPads(n, xs, a.kernel, a.strides, {1, 1}));
  o = {c.op1(kMax ? "MaxPool" : "AvgPool", {x}, a)};
  return Status::Ok();
}
Status globalAvgPool(Context& c, const Node& n, Outs& o) {
  o = {c.op1("GlobalAvgPool", {c.in(n, 0)})};
  return Status::Ok();
}
Status globalMaxPool(Context& c, const Node& n, Outs& o) {
  Ints axes;
  for (size_t d = 2; d < shapeOf(c, c.in(n, 0)).size(); ++d) axes.push_back(static_cast<int64_t>(d));
  o = {c.op1("ReduceMax", {c.in(n, 0)}, AxesAttrs{axes, true})};
  return Status::Ok();
}
Status batchNorm(Context& c, const Node& n, Outs& o) {
  if (attrInt(n, "training_mode", 0)) return unsupported(n, "training_mode=1 is not supported (inference only)");
  if (n.output_size() > 1) return unsupported(n, "running mean/var outputs are not supported (inference only)");
  if (foldIntoConv(c, n, attrFloat(n, "epsilon", 1e-5f), o)) return Status::Ok();
  o = {c.op1("BatchNorm", {c.in(n, 0), c.in(n, 1), c.in(n, 2), c.in(n, 3), c.in(n, 4)},
             NormAttrs{1, attrFloat(n, "epsilon", 1e-5f)})};
  return Status::Ok();
}

// ---- shape and data movement -------------------------------------------------------
Status reshape(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  Ints shape;
  if (c.opset() < 5) shape = attrInts(n, "shape");
  else {
    ASSIGN_OR_RETURN(shape, c.constInts(c.in(n, 1), "Reshape shape"));
  }
  const Shape xs = shapeOf(c, x);
  if (!attrInt(n, "allowzero", 0)) {
    for (size_t d = 0; d < shape.size(); ++d) if (shape[d] == 0 && d < xs.size()) shape[d] = xs[d];
  }
  o = {c.op1("Reshape", {x}, ShapeAttrs{shape})};
  return Status::Ok();
}
Status flatten(Context& c, const Node& n, Outs& o) {
  const Shape xs = shapeOf(c, c.in(n, 0));
  int64_t axis = attrInt(n, "axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis && d < static_cast<int64_t>(xs.size()); ++d) outer *= xs[d];
  o = {c.op1("Reshape", {c.in(n, 0)}, ShapeAttrs{{outer, -1}})};
  if (numElements(xs) == 0) o = {c.op1("Reshape", {c.in(n, 0)}, ShapeAttrs{{outer, 0}})};
  return Status::Ok();
}
StatusOr<Ints> axesOf(Context& c, const Node& n, int input, int64_t since_opset) {
  if (c.opset() >= since_opset) {
    if (!c.present(n, input)) return Ints{};
    return c.constInts(c.in(n, input), "axes");
  }
  return attrInts(n, "axes");
}
Status squeeze(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axes, axesOf(c, n, 1, 13));
  o = {c.op1("Squeeze", {c.in(n, 0)}, AxesAttrs{axes, false})};
  return Status::Ok();
}
Status unsqueeze(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axes, axesOf(c, n, 1, 13));
  o = {c.op1("ExpandDims", {c.in(n, 0)}, AxesAttrs{axes, false})};
  return Status::Ok();
}
Status transpose(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Transpose", {c.in(n, 0)}, PermAttrs{attrInts(n, "perm")})};
  return Status::Ok();
}
Status concat(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins;
  for (int k = 0; k < n.input_size(); ++k) if (c.present(n, k)) ins.push_back(c.in(n, k));
  o = {c.op1("Concat", ins, AxisAttrs{attrInt(n, "axis", 0), false})};
  return Status::Ok();
}
Status split(Context& c, const Node& n, Outs& o) {
  SplitAttrs a;
  a.axis = attrInt(n, "axis", 0);
  if (c.opset() >= 13 && c.present(n, 1)) {
    ASSIGN_OR_RETURN(a.sizes, c.constInts(c.in(n, 1), "Split split"));
  } else if (c.opset() < 13) {
    a.sizes = attrInts(n, "split");
  }
  const Shape xs = shapeOf(c, c.in(n, 0));
  const int parts = n.output_size();
  if (a.sizes.empty() && c.opset() >= 18 && findAttr(n, "num_outputs")) {  // last chunk may be smaller
    auto axis = normalizeAxis(a.axis, static_cast<int64_t>(xs.size()));
    if (!axis.ok()) return axis.status();
    const int64_t dim = xs[*axis], chunk = (dim + parts - 1) / parts;
    for (int k = 0; k < parts; ++k) a.sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
  }
  o = c.op("Split", {c.in(n, 0)}, a, parts);
  return Status::Ok();
}
Status slice(Context& c, const Node& n, Outs& o) {
  StridedSliceAttrs a;
  if (c.opset() < 10) {
    a.begins = attrInts(n, "starts");
    a.ends = attrInts(n, "ends");
    a.axes = attrInts(n, "axes");
  } else {
    ASSIGN_OR_RETURN(a.begins, c.constInts(c.in(n, 1), "Slice starts"));
    ASSIGN_OR_RETURN(a.ends, c.constInts(c.in(n, 2), "Slice ends"));
    if (c.present(n, 3)) {
      ASSIGN_OR_RETURN(a.axes, c.constInts(c.in(n, 3), "Slice axes"));
    }
    if (c.present(n, 4)) {
      ASSIGN_OR_RETURN(a.steps, c.constInts(c.in(n, 4), "Slice steps"));
    }
  }
  o = {c.op1("StridedSlice", {c.in(n, 0)}, a)};
  return Status::Ok();
}
Status gather(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Gather", {c.in(n, 0), c.in(n, 1)}, AxisAttrs{attrInt(n, "axis", 0), false})};
  return Status::Ok();
}
Status expand(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints shape, c.constInts(c.in(n, 1), "Expand shape"));
  ASSIGN_OR_RETURN(Shape target, broadcastShapes(shapeOf(c, c.in(n, 0)), shape));
  o = {c.op1("BroadcastTo", {c.in(n, 0)}, ShapeAttrs{target})};
  return Status::Ok();
}
Status tile(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints repeats, c.constInts(c.in(n, 1), "Tile repeats"));
  o = {c.op1("Tile", {c.in(n, 0)}, TileAttrs{repeats})};
  return Status::Ok();
}
Status pad(Context& c, const Node& n, Outs& o) {
  PadAttrs a;
  const std::string mode = attrString(n, "mode", "constant");
  if (mode == "reflect") a.mode = PadMode::kReflect;
  else if (mode == "edge") a.mode = PadMode::kEdge;
  else if (mode != "constant") return unsupported(n, "mode '" + mode + "' is not supported");
  const size_t rank = shapeOf(c, c.in(n, 0)).size();
  if (c.opset() < 11) {
    a.pads = attrInts(n, "pads");
    a.value = attrFloat(n, "value", 0.0f);
  } else {
    ASSIGN_OR_RETURN(Ints pads, c.constInts(c.in(n, 1), "Pad pads"));
    if (c.present(n, 2)) {
      ASSIGN_OR_RETURN(a.value, c.constFloat(c.in(n, 2), "Pad constant_value"));
    }
    if (c.present(n, 3)) {  // axes (opset 18): spread the pads over those axes
      ASSIGN_OR_RETURN(Ints axes, c.constInts(c.in(n, 3), "Pad axes"));
      Ints full(2 * rank, 0);
      for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t ax = axes[k] < 0 ? axes[k] + static_cast<int64_t>(rank) : axes[k];
        if (ax < 0 || ax >= static_cast<int64_t>(rank)) return unsupported(n, "axis out of range");
        full[ax] = pads[k];
        full[ax + rank] = pads[k + axes.size()];
      }
      pads = full;
    }
    a.pads = pads;
  }
  o = {c.op1("Pad", {c.in(n, 0)}, a)};
  return Status::Ok();
}
Status shape(Context& c, const Node& n, Outs& o) {
  const Shape s = shapeOf(c, c.in(n, 0));
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = attrInt(n, "start", 0), end = attrInt(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  o = {c.ints(Ints(s.begin() + start, s.begin() + end))};
  return Status::Ok();
}
Status size(Context& c, const Node& n, Outs& o) {
  HostTensor t(DType::kInt64, {});
  t.as<int64_t>()[0] = numElements(shapeOf(c, c.in(n, 0)));
  o = {c.constant(t)};
  return Status::Ok();
}
Status constant(Context& c, const Node& n, Outs& o) {
  if (const auto* a = findAttr(n, "value")) {
    ASSIGN_OR_RETURN(HostTensor t, tensorFromProto(a->t(), "."));
    o = {c.constant(t)};
  } else if (const auto* f = findAttr(n, "value_float")) {
    o = {c.constant(HostTensor::fromFloats({}, {f->f()}))};
  } else if (const auto* fs = findAttr(n, "value_floats")) {
    o = {c.constant(HostTensor::fromFloats({fs->floats_size()}, {fs->floats().begin(), fs->floats().end()}))};
  } else if (const auto* i = findAttr(n, "value_int")) {
    HostTensor t(DType::kInt64, {});
    t.as<int64_t>()[0] = i->i();
    o = {c.constant(t)};
  } else if (const auto* is = findAttr(n, "value_ints")) {
    o = {c.ints(Ints(is->ints().begin(), is->ints().end()))};
  } else {
    return unsupported(n, "only value, value_float(s) and value_int(s) are supported");
  }
  return Status::Ok();
}
Status constantOfShape(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints shape, c.constInts(c.in(n, 0), "ConstantOfShape shape"));
  HostTensor value = HostTensor::fromFloats({1}, {0.0f});
  if (const auto* a = findAttr(n, "value")) {
    ASSIGN_OR_RETURN(value, tensorFromProto(a->t(), "."));
  }
  const Value v = c.constant(value);
  o = {c.op1("FillV2", {v}, ShapeAttrs{shape})};
  return Status::Ok();
}
Status range(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(HostTensor start, c.constant(c.in(n, 0), "Range start"));
  ASSIGN_OR_RETURN(HostTensor limit, c.constant(c.in(n, 1), "Range limit"));
  ASSIGN_OR_RETURN(HostTensor delta, c.constant(c.in(n, 2), "Range delta"));
  const double s = start.toFloats()[0], l = limit.toFloats()[0], d = delta.toFloats()[0];
  if (d == 0) return unsupported(n, "delta is 0");
  const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  if (count > (int64_t{1} << 30)) return unsupported(n, "more than 2^30 elements");
  HostTensor out(start.dtype(), {count});
  for (int64_t i = 0; i < count; ++i) {
    if (start.dtype() == DType::kInt64) out.as<int64_t>()[i] = start.as<int64_t>()[0] + i * delta.as<int64_t>()[0];
    else ops::storeF(out.data(), out.dtype(), i, static_cast<float>(s + i * d));
  }
  o = {c.constant(out)};
  return Status::Ok();
}
Status oneHot(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(float depth, c.constFloat(c.in(n, 1), "OneHot depth"));
  ASSIGN_OR_RETURN(HostTensor values, c.constant(c.in(n, 2), "OneHot values"));
  if (values.size() != 2 || values.dtype() != DType::kFloat32) return unsupported(n, "values must be 2 float32 values");
  const auto v = values.toFloats();
  o = {c.op1("OneHot", {c.in(n, 0)}, OneHotAttrs{static_cast<int64_t>(depth), attrInt(n, "axis", -1), v[1], v[0]})};
  return Status::Ok();
}
Status cumSum(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axis, c.constInts(c.in(n, 1), "CumSum axis"));
  if (axis.size() != 1) return unsupported(n, "axis must hold one value");
  o = {c.op1("CumSum", {c.in(n, 0)}, CumSumAttrs{axis[0], attrInt(n, "exclusive", 0) != 0, attrInt(n, "reverse", 0) != 0})};
  return Status::Ok();
}

// ---- normalisation and reductions ----------------------------------------------------
template <bool kLog> Status softmax(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  const char* op = kLog ? "LogSoftmax" : "Softmax";
  if (c.opset() >= 13) {
    o = {c.op1(op, {x}, AxisAttrs{attrInt(n, "axis", -1), false})};
    return Status::Ok();
  }
  int64_t axis = attrInt(n, "axis", 1);  // before 13: coerce to 2-D at axis
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  Value flat = c.op1("Reshape", {x}, ShapeAttrs{{outer, numElements(xs) / std::max<int64_t>(outer, 1)}});
  o = {c.op1("Reshape", {c.op1(op, {flat}, AxisAttrs{1, false})}, ShapeAttrs{xs})};
  return Status::Ok();
}
Status layerNorm(Context& c, const Node& n, Outs& o) {
  const float eps = attrFloat(n, "epsilon", 1e-5f);
  std::vector<Value> ins = {c.in(n, 0), c.in(n, 1), c.present(n, 2) ? c.in(n, 2) : Value{}};
  auto outs = c.op("LayerNorm", ins, NormAttrs{attrInt(n, "axis", -1), eps}, 3);
  Value inv = c.op1("Rsqrt", {c.op1("Add", {outs[2], scalarLike(c, eps, outs[2])})});
  o = {outs[0], outs[1], inv};
  return Status::Ok();
}
Status rmsNorm(Context& c, const Node& n, Outs& o) {  // SimplifiedLayerNormalization (contrib-style)
  o = {c.op1("RmsNorm", {c.in(n, 0), c.in(n, 1)}, NormAttrs{attrInt(n, "axis", -1), attrFloat(n, "epsilon", 1e-5f)})};
  return Status::Ok();
}

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSumExp };
template <Red kRed> Status reduce(Context& c, const Node& n, Outs& o) {
  const int64_t axes_input_since = kRed == Red::kSum ? 13 : 18;
  ASSIGN_OR_RETURN(Ints axes, axesOf(c, n, 1, axes_input_since));
  const bool keep = attrInt(n, "keepdims", 1) != 0;
  Value x = c.in(n, 0);
  if (axes.empty() && attrInt(n, "noop_with_empty_axes", 0)) {
    o = {c.op1("IdentityMath", {x})};
    return Status::Ok();
  }
  const AxesAttrs a{axes, keep};
  switch (kRed) {
    case Red::kSum: o = {c.op1("ReduceSum", {x}, a)}; break;
    case Red::kMean: o = {c.op1("ReduceMean", {x}, a)}; break;
    case Red::kMax: o = {c.op1("ReduceMax", {x}, a)}; break;
    case Red::kMin: o = {c.op1("ReduceMin", {x}, a)}; break;
    case Red::kProd: o = {c.op1("ReduceProd", {x}, a)}; break;
    case Red::kL1: o = {c.op1("ReduceSum", {c.op1("Abs", {x})}, a)}; break;
    case Red::kL2: o = {c.op1("Sqrt", {c.op1("ReduceSum", {c.op1("Mul", {x, x})}, a)})}; break;
    case Red::kSumSquare: o = {c.op1("ReduceSum", {c.op1("Mul", {x, x})}, a)}; break;
    case Red::kLogSumExp: o = {c.op1("Log", {c.op1("ReduceSum", {c.op1("Exp", {x})}, a)})}; break;
  }
  return Status::Ok();
}
template <bool kMax> Status argReduce(Context& c, const Node& n, Outs& o) {
  if (attrInt(n, "select_last_index", 0)) return unsupported(n, "select_last_index=1 is not supported");
  o = {c.op1(kMax ? "ArgMax" : "ArgMin", {c.in(n, 0)}, AxisAttrs{attrInt(n, "axis", 0), attrInt(n, "keepdims", 1) != 0})};
  return Status::Ok();
}

Status resize(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 4) return unsupported(n, "only 4-D NCHW inputs are supported");
  ResizeAttrs a;
  const std::string mode = attrString(n, "mode", "nearest");
  if (mode == "linear") a.mode = ResizeMode::kLinear;
  else if (mode != "nearest") return unsupported(n, "mode '" + mode + "' is not supported");
  const std::string ct = attrString(n, "coordinate_transformation_mode", "half_pixel");
  const std::map<std::string, CoordTransform> cts = {{"half_pixel", CoordTransform::kHalfPixel},
      {"asymmetric", CoordTransform::kAsymmetric}, {"align_corners", CoordTransform::kAlignCorners},
      {"pytorch_half_pixel", CoordTransform::kPytorchHalfPixel}};
  if (!cts.count(ct)) return unsupported(n, "coordinate_transformation_mode '" + ct + "' is not supported");
  a.coordinate_transformation = cts.at(ct);
  const std::string nm = attrString(n, "nearest_mode", "round_prefer_floor");
  const std::map<std::string, NearestMode> nms = {{"round_prefer_floor", NearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", NearestMode::kRoundPreferCeil}, {"floor", NearestMode::kFloor}, {"ceil", NearestMode::kCeil}};
  if (!nms.count(nm)) return unsupported(n, "nearest_mode '" + nm + "' is not supported");
  a.nearest_mode = nms.at(nm);
  if (attrInt(n, "antialias", 0)) return unsupported(n, "antialias=1 is not supported");
  if (findAttr(n, "axes")) return unsupported(n, "the axes attribute is not supported");
  if (c.opset() >= 11 && c.present(n, 3)) {
    ASSIGN_OR_RETURN(Ints sizes, c.constInts(c.in(n, 3), "Resize sizes"));
    if (sizes.size() != 4 || sizes[0] != xs[0] || sizes[1] != xs[1]) return unsupported(n, "sizes must keep N and C");
    a.sizes = {sizes[2], sizes[3]};
  } else {
    ASSIGN_OR_RETURN(HostTensor scales, c.constant(c.in(n, c.opset() >= 11 ? 2 : 1), "Resize scales"));
    const auto s = scales.toFloats();
    if (s.size() != 4 || s[0] != 1.0f || s[1] != 1.0f) return unsupported(n, "scales must be 1 on N and C");
    a.sizes = {static_cast<int64_t>(std::floor(xs[2] * s[2])), static_cast<int64_t>(std::floor(xs[3] * s[3]))};
  }
  o = {c.op1("Resize", {x}, a)};
  return Status::Ok();
}

const std::map<std::string, Converter>& table() {
  static const std::map<std::string, Converter> t = {
      {"Abs", unaryOp<kAbs>}, {"Neg", unaryOp<kNeg>}, {"Exp", unaryOp<kExp>}, {"Log", unaryOp<kLog>},
      {"Sqrt", unaryOp<kSqrt>}, {"Reciprocal", unaryOp<kReciprocal>}, {"Floor", unaryOp<kFloor>},
      {"Ceil", unaryOp<kCeil>}, {"Round", unaryOp<kRound>}, {"Sin", unaryOp<kSin>}, {"Cos", unaryOp<kCos>},
      {"Tan", unaryOp<kTan>}, {"Asin", unaryOp<kAsin>}, {"Acos", unaryOp<kAcos>}, {"Atan", unaryOp<kAtan>},
      {"Sinh", unaryOp<kSinh>}, {"Cosh", unaryOp<kCosh>}, {"Asinh", unaryOp<kAsinh>}, {"Acosh", unaryOp<kAcosh>},
      {"Tanh", unaryOp<kTanh>}, {"Sigmoid", unaryOp<kSigmoid>}, {"Relu", unaryOp<kRelu>}, {"Sign", unaryOp<kSign>},
      {"Erf", unaryOp<kErf>}, {"IsNaN", unaryOp<kIsNaN>}, {"Not", unaryOp<kNot>}, {"Softsign", unaryOp<kSoftsign>},
      {"HardSwish", unaryOp<kHardSwish>}, {"Identity", unaryOp<kIdentity>},
      {"Add", binaryOp<kAdd>}, {"Sub", binaryOp<kSub>}, {"Mul", binaryOp<kMul>}, {"Div", binaryOp<kDiv>},
      {"Equal", binaryOp<kEqual>}, {"Greater", binaryOp<kGreater>}, {"GreaterOrEqual", binaryOp<kGreaterEqual>},
      {"Less", binaryOp<kLess>}, {"LessOrEqual", binaryOp<kLessEqual>}, {"And", binaryOp<kAnd>},
      {"Or", binaryOp<kOr>}, {"Xor", binaryOp<kXor>},
      {"Pow", pow}, {"Mod", mod}, {"Where", where}, {"Max", variadicMinMax<true>}, {"Min", variadicMinMax<false>},
      {"Sum", sum}, {"Mean", mean}, {"LeakyRelu", leakyRelu}, {"Elu", elu}, {"Selu", selu},
      {"HardSigmoid", hardSigmoid}, {"Softplus", softplus}, {"Gelu", gelu}, {"PRelu", prelu}, {"IsInf", isInf},
      {"Clip", clip}, {"Cast", cast}, {"CastLike", castLike}, {"Dropout", dropout},
      {"MatMul", matmul}, {"Gemm", gemm}, {"Conv", conv}, {"MaxPool", pool<true>}, {"AveragePool", pool<false>},
      {"GlobalAveragePool", globalAvgPool}, {"GlobalMaxPool", globalMaxPool}, {"BatchNormalization", batchNorm},
      {"Reshape", reshape}, {"Flatten", flatten}, {"Squeeze", squeeze}, {"Unsqueeze", unsqueeze},
      {"Transpose", transpose}, {"Concat", concat}, {"Split", split}, {"Slice", slice}, {"Gather", gather},
      {"Expand", expand}, {"Tile", tile}, {"Pad", pad}, {"Shape", shape}, {"Size", size}, {"Constant", constant},
      {"ConstantOfShape", constantOfShape}, {"Range", range}, {"OneHot", oneHot}, {"CumSum", cumSum},
      {"Softmax", softmax<false>}, {"LogSoftmax", softmax<true>}, {"LayerNormalization", layerNorm},
      {"SimplifiedLayerNormalization", rmsNorm},
      {"ReduceSum", reduce<Red::kSum>}, {"ReduceMean", reduce<Red::kMean>}, {"ReduceMax", reduce<Red::kMax>},
      {"ReduceMin", reduce<Red::kMin>}, {"ReduceProd", reduce<Red::kProd>}, {"ReduceL1", reduce<Red::kL1>},
      {"ReduceL2", reduce<Red::kL2>}, {"ReduceSumSquare", reduce<Red::kSumSquare>},
      {"ReduceLogSumExp", reduce<Red::kLogSumExp>}, {"ArgMax", argReduce<true>}, {"ArgMin", argReduce<false>},
      {"Resize", resize},
  };
  return t;
}

}  // namespace

const Converter* findConverter(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : table()) names.push_back(name);
  return names;
}

}  // namespace gkrt::onnx_import
