// ONNX linear algebra, convolution, pooling, normalisation, reductions and Resize.
#include <cmath>
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {

namespace {

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
    // A MatMul the builder refused has no shape: its error is reported after this node.
    if (s.size() < (va ? 2u : 1u)) {
      o = {y};
      return Status::Ok();
    }
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
  if (strides.size() < r || dil.size() < r || x.size() < 2 + r) {
    return makeError(StatusCode::kInvalidModel, n.op_type(), ": auto_pad ", auto_pad, " needs strides and dilations for ",
                     "each of the ", r, " kernel dims and an input of rank ", 2 + r);
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

// A 1-D window attribute list as its 2-D form with a height of 1.
Ints as2D(const Ints& v, int64_t fill) { return v.size() == 1 ? Ints{fill, v[0]} : v; }
Ints pads2D(const Ints& p) { return p.size() == 2 ? Ints{0, p[0], 0, p[1]} : p; }
Shape with1(Shape s) {  // [N, C, L] -> [N, C, 1, L]
  s.insert(s.begin() + 2, 1);
  return s;
}

Status conv(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0), w = c.in(n, 1);
  Shape xs = shapeOf(c, x), ws = shapeOf(c, w);
  const bool one_d = xs.size() == 3;
  if (xs.size() != 4 && !one_d) return unsupported(n, "only 1-D and 2-D convolution are supported, got " + shapeToString(xs));
  if (one_d) {
    x = c.op1("Reshape", {x}, ShapeAttrs{with1(xs)});
    w = c.op1("Reshape", {w}, ShapeAttrs{with1(ws)});
    xs = with1(xs);
    ws = with1(ws);
  }
  Conv2DAttrs a;
  a.strides = as2D(attrInts(n, "strides", {1, 1}), 1);
  a.dilations = as2D(attrInts(n, "dilations", {1, 1}), 1);
  a.groups = attrInt(n, "group", 1);
  ASSIGN_OR_RETURN(Ints pads, spatialPads(n, xs, {ws[2], ws[3]}, a.strides, a.dilations));
  a.pads = pads2D(pads);
  std::vector<Value> ins = {x, w, c.present(n, 2) ? c.in(n, 2) : Value{}};
  o = {c.op1("Conv2D", ins, a)};
  if (one_d) {
    Shape ys = shapeOf(c, o[0]);
    if (ys.size() < 3) return Status::Ok();  // the builder refused the convolution; its error follows the node
    ys.erase(ys.begin() + 2);
    o = {c.op1("Reshape", {o[0]}, ShapeAttrs{ys})};
  } else {
    c.convs()[o[0].id] = {x, w, ins[2], a};
  }
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

// BatchNormalization with constant float32 parameters that no Conv takes (DenseNet's
// BN after a Concat): x * s + (beta - mean s), s = gamma / sqrt(var + eps), with
// per-channel constants of shape {C, 1, ..., 1}, which clusters with the ReLU after it
// (and runs on channel-blocked activations) where a BatchNorm op would not.
bool perChannelAffine(Context& c, const Node& n, float eps, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() < 3 || dtypeOf(c, x) != DType::kFloat32) return false;
  for (int k = 1; k <= 4; ++k) if (!c.isConstant(c.in(n, k)) || dtypeOf(c, c.in(n, k)) != DType::kFloat32) return false;
  const auto gamma = c.constant(c.in(n, 1), "")->toFloats(), beta = c.constant(c.in(n, 2), "")->toFloats();
  const auto mean = c.constant(c.in(n, 3), "")->toFloats(), var = c.constant(c.in(n, 4), "")->toFloats();
  const int64_t C = xs[1];
  if (static_cast<int64_t>(gamma.size()) != C || beta.size() != gamma.size() || mean.size() != gamma.size() ||
      var.size() != gamma.size()) {
    return false;
  }
  Shape ps(xs.size() - 1, 1);
  ps[0] = C;
  std::vector<float> s, t;
  ops::batchNormAffine(gamma, beta, mean, var, eps, &s, &t);
  o = {c.op1("Add", {c.op1("Mul", {x, c.constant(HostTensor::fromFloats(ps, s))}), c.constant(HostTensor::fromFloats(ps, t))})};
  return true;
}

// 3-D pooling of an NCDHW x (dilations supported): MaxPool3D / AvgPool3D.
StatusOr<Value> pool3DOf(Context& c, const Node& n, Value x, bool max, bool count_include_pad) {
  PoolAttrs a;
  a.kernel = attrInts(n, "kernel_shape");
  if (a.kernel.size() != 3) return unsupported(n, "kernel_shape must list 3 values for a 5-D input");
  a.strides = attrInts(n, "strides", {1, 1, 1});
  a.dilations = attrInts(n, "dilations", {1, 1, 1});
  a.ceil_mode = attrInt(n, "ceil_mode", 0) != 0;
  a.count_include_pad = count_include_pad;
  ASSIGN_OR_RETURN(a.pads, spatialPads(n, shapeOf(c, x), a.kernel, a.strides, a.dilations));
  return c.op1(max ? "MaxPool3D" : "AvgPool3D", {x}, a);
}

// Max or average pooling of x with n's window attributes; 1-D through a height of 1.
StatusOr<Value> poolOf(Context& c, const Node& n, Value x, bool max, bool count_include_pad) {
  Shape xs = shapeOf(c, x);
  if (xs.size() == 5) return pool3DOf(c, n, x, max, count_include_pad);
  const bool one_d = xs.size() == 3;
  if (xs.size() != 4 && !one_d) return unsupported(n, "only 1-D, 2-D and 3-D pooling are supported");
  if (one_d) {
    x = c.op1("Reshape", {x}, ShapeAttrs{with1(xs)});
    xs = with1(xs);
  }
  for (int64_t d : attrInts(n, "dilations", {1, 1})) if (d != 1) return unsupported(n, "dilations other than 1");
  PoolAttrs a;
  a.kernel = as2D(attrInts(n, "kernel_shape"), 1);
  a.strides = as2D(attrInts(n, "strides", one_d ? Ints{1} : Ints{1, 1}), 1);
  a.ceil_mode = attrInt(n, "ceil_mode", 0) != 0;
  a.count_include_pad = count_include_pad;
  ASSIGN_OR_RETURN(Ints pads, spatialPads(n, xs, a.kernel, a.strides, {1, 1}));
  a.pads = pads2D(pads);
  Value y = c.op1(max ? "MaxPool" : "AvgPool", {x}, a);
  if (one_d) {
    Shape ys = shapeOf(c, y);
    if (ys.size() < 3) return y;  // a pool the builder refused: its error is reported after this node
    ys.erase(ys.begin() + 2);
    y = c.op1("Reshape", {y}, ShapeAttrs{ys});
  }
  return y;
}
template <bool kMax> Status pool(Context& c, const Node& n, Outs& o) {
  if (n.output_size() > 1 && !n.output(1).empty()) return unsupported(n, "the Indices output is not supported");
  ASSIGN_OR_RETURN(Value y, poolOf(c, n, c.in(n, 0), kMax, attrInt(n, "count_include_pad", 0) != 0));
  o = {y};
  return Status::Ok();
}
// LpPool: (sum over the window of |x|^p)^(1/p) = (window size * the average of |x|^p
// with the zero pads counted)^(1/p).
Status lpPool(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const float p = static_cast<float>(attrInt(n, "p", 2));
  if (p < 1) return unsupported(n, "p must be >= 1");
  const Value ax = c.op1("Abs", {x});
  const Value powered = p == 1 ? ax : p == 2 ? c.op1("Mul", {x, x}) : c.op1("Pow", {ax, scalarLike(c, p, x)});
  ASSIGN_OR_RETURN(Value avg, poolOf(c, n, powered, false, true));
  int64_t window = 1;
  for (int64_t k : attrInts(n, "kernel_shape")) window *= k;
  const Value sum = c.op1("Mul", {avg, scalarLike(c, static_cast<float>(window), x)});
  o = {p == 1 ? sum : p == 2 ? c.op1("Sqrt", {sum}) : c.op1("Pow", {sum, scalarLike(c, 1.0f / p, x)})};
  return Status::Ok();
}
// LRN: x / (bias + alpha / size * sum over a window of `size` channels of x^2)^beta.
// The channel-window sum is a 1x1 convolution with a banded 0/1 weight matrix.
Status lrn(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 4 || dtypeOf(c, x) != DType::kFloat32) return unsupported(n, "only 4-D float32 inputs are supported");
  const int64_t size = attrInt(n, "size", 0), ch = xs[1];
  if (size <= 0) return unsupported(n, "size must be positive");
  const float alpha = attrFloat(n, "alpha", 1e-4f), beta = attrFloat(n, "beta", 0.75f), bias = attrFloat(n, "bias", 1.0f);
  HostTensor band(DType::kFloat32, {ch, ch, 1, 1});
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // window [c - lo, c + hi]
  for (int64_t i = 0; i < ch; ++i)
    for (int64_t j = std::max<int64_t>(0, i - lo); j <= std::min(ch - 1, i + hi); ++j) band.as<float>()[i * ch + j] = 1.0f;
  Value sq = c.op1("Mul", {x, x});
  Value window = c.op1("Conv2D", {sq, c.constant(band), Value{}}, Conv2DAttrs{});
  Value denom = c.op1("Add", {c.op1("Mul", {window, scalarLike(c, alpha / static_cast<float>(size), x)}), scalarLike(c, bias, x)});
  o = {c.op1("RealDiv", {x, c.op1("Pow", {denom, scalarLike(c, beta, x)})})};
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
  if (perChannelAffine(c, n, attrFloat(n, "epsilon", 1e-5f), o)) return Status::Ok();
  o = {c.op1("BatchNorm", {c.in(n, 0), c.in(n, 1), c.in(n, 2), c.in(n, 3), c.in(n, 4)},
             NormAttrs{1, attrFloat(n, "epsilon", 1e-5f)})};
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
  if (axis < 0 || axis > static_cast<int64_t>(xs.size()) || !isStatic(xs)) {
    return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "': axis ", attrInt(n, "axis", 1),
                     " does not fit input ", shapeToString(xs), " (opset ", c.opset(), " coerces to 2-D at the axis)");
  }
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

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSumExp, kLogSum };
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
    case Red::kLogSum: o = {c.op1("Log", {c.op1("ReduceSum", {x}, a)})}; break;
  }
  return Status::Ok();
}
// select_last_index=1: the first extreme of the reversed axis, counted from the end.
template <bool kMax> Status argReduce(Context& c, const Node& n, Outs& o) {
  const AxisAttrs a{attrInt(n, "axis", 0), attrInt(n, "keepdims", 1) != 0};
  Value x = c.in(n, 0);
  if (!attrInt(n, "select_last_index", 0)) {
    o = {c.op1(kMax ? "ArgMax" : "ArgMin", {x}, a)};
    return Status::Ok();
  }
  const Shape xs = shapeOf(c, x);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(xs.size())));
  Value flipped = c.op1("StridedSlice", {x}, StridedSliceAttrs{{-1}, {INT64_MIN}, {axis}, {-1}});
  Value idx = c.op1(kMax ? "ArgMax" : "ArgMin", {flipped}, a);
  HostTensor last(DType::kInt64, {});
  last.as<int64_t>()[0] = xs[axis] - 1;
  o = {c.op1("Sub", {c.constant(last), idx})};
  return Status::Ok();
}

Status resize(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 4) return unsupported(n, "only 4-D NCHW inputs are supported");
  ResizeAttrs a;
  const std::string mode = attrString(n, "mode", "nearest");
  if (mode == "linear") a.mode = ResizeMode::kLinear;
  else if (mode == "cubic") a.mode = ResizeMode::kCubic;
  else if (mode != "nearest") return unsupported(n, "mode '" + mode + "' is not supported");
  a.cubic_coeff_a = attrFloat(n, "cubic_coeff_a", -0.75f);
  a.exclude_outside = attrInt(n, "exclude_outside", 0) != 0;
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
  // Sizes or scales name the listed axes (all by default); gkrt resizes H and W only.
  Ints axes = attrInts(n, "axes", {0, 1, 2, 3});
  for (int64_t& ax : axes) {
    if (ax < 0) ax += 4;
    if (ax < 0 || ax > 3) return unsupported(n, "axis out of range");
  }
  if (c.isDynamic(x)) {  // sizes from the run's input: scales as attributes, or computed sizes as input 1
    if (attrInts(n, "axes", {}).size() || attrString(n, "keep_aspect_ratio_policy", "stretch") != "stretch") {
      return unsupported(n, "axes or keep_aspect_ratio_policy with dynamic input dims are not supported");
    }
    if (c.opset() >= 11 && c.present(n, 3)) {
      o = {c.op1("DynamicResize", {x, c.in(n, 3)}, a)};
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(HostTensor scales, c.constant(c.in(n, c.opset() >= 11 ? 2 : 1), "Resize scales"));
    const auto sc = scales.toFloats();
    if (sc.size() != 4 || sc[0] != 1.0f || sc[1] != 1.0f) return unsupported(n, "only H and W may be resized");
    a.scale_h = sc[2];
    a.scale_w = sc[3];
    o = {c.op1("DynamicResize", {x}, a)};
    return Status::Ok();
  }
  Shape out = xs;
  if (c.opset() >= 11 && c.present(n, 3)) {
    ASSIGN_OR_RETURN(Ints sizes, c.constInts(c.in(n, 3), "Resize sizes"));
    if (sizes.size() != axes.size()) return unsupported(n, "sizes and axes differ in length");
    const std::string policy = attrString(n, "keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) out[axes[k]] = sizes[k];
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double scale = policy == "not_larger" ? 1e300 : 0.0;
      for (size_t k = 0; k < axes.size(); ++k) {
        const double r = static_cast<double>(sizes[k]) / static_cast<double>(xs[axes[k]]);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      for (int64_t ax : axes) out[ax] = static_cast<int64_t>(std::round(scale * static_cast<double>(xs[ax])));
    } else {
      return unsupported(n, "keep_aspect_ratio_policy '" + policy + "' is not supported");
    }
  } else {
    ASSIGN_OR_RETURN(HostTensor scales, c.constant(c.in(n, c.opset() >= 11 ? 2 : 1), "Resize scales"));
    const auto sc = scales.toFloats();
    if (sc.size() != axes.size()) return unsupported(n, "scales and axes differ in length");
    for (size_t k = 0; k < axes.size(); ++k) {
      out[axes[k]] = static_cast<int64_t>(std::floor(static_cast<double>(xs[axes[k]]) * sc[k]));
      if (axes[k] == 2) a.scale_h = sc[k];
      if (axes[k] == 3) a.scale_w = sc[k];
    }
  }
  if (out[0] != xs[0] || out[1] != xs[1]) return unsupported(n, "only H and W may be resized");
  a.sizes = {out[2], out[3]};
  o = {c.op1("Resize", {x}, a)};
  return Status::Ok();
}

}  // namespace

void registerNNConverters(std::map<std::string, Converter>& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["MaxPool"] = pool<true>;
  t["AveragePool"] = pool<false>;
  t["GlobalAveragePool"] = globalAvgPool;
  t["GlobalMaxPool"] = globalMaxPool;
  t["BatchNormalization"] = batchNorm;
  t["Softmax"] = softmax<false>;
  t["LogSoftmax"] = softmax<true>;
  t["LayerNormalization"] = layerNorm;
  t["SimplifiedLayerNormalization"] = rmsNorm;
  t["ReduceSum"] = reduce<Red::kSum>;
  t["ReduceL1"] = reduce<Red::kL1>;
  t["ReduceL2"] = reduce<Red::kL2>;
  t["ReduceMean"] = reduce<Red::kMean>;
  t["ReduceMax"] = reduce<Red::kMax>;
  t["ReduceMin"] = reduce<Red::kMin>;
  t["ReduceProd"] = reduce<Red::kProd>;
  t["ReduceSumSquare"] = reduce<Red::kSumSquare>;
  t["ReduceLogSumExp"] = reduce<Red::kLogSumExp>;
  t["ArgMax"] = argReduce<true>;
  t["ArgMin"] = argReduce<false>;
  t["Resize"] = resize;
  t["LRN"] = lrn;
  t["ReduceLogSum"] = reduce<Red::kLogSum>;
  t["LpPool"] = lpPool;
}

}  // namespace gkrt::onnx_import
