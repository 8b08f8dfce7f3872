// ONNX normalisations written as gkrt reductions and elementwise ops (the fusion
// pipeline clusters them): InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization, LpNormalization, RMSNormalization; and Hardmax, Upsample.
// 16-bit float inputs are normalised in float32, as ONNX's stash_type does.
#include <cmath>
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

bool is16Bit(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
Value widen(Context& c, Value x) {
  return is16Bit(dtypeOf(c, x)) ? c.op1("Cast", {x}, CastAttrs{DType::kFloat32}) : x;
}
Value narrowTo(Context& c, Value y, DType t) { return is16Bit(t) ? c.op1("Cast", {y}, CastAttrs{t}) : y; }

Ints axesFrom(int64_t first, size_t rank) {
  Ints axes;
  for (int64_t d = first; d < static_cast<int64_t>(rank); ++d) axes.push_back(d);
  return axes;
}
// (x - mean) / sqrt(var + eps) over `axes`, kept dims.
Value standardize(Context& c, Value x, const Ints& axes, float eps) {
  const AxesAttrs keep{axes, true};
  const Value d = c.op1("Sub", {x, c.op1("ReduceMean", {x}, keep)});
  const Value var = c.op1("ReduceMean", {c.op1("Mul", {d, d})}, keep);
  return c.op1("Mul", {d, c.op1("Rsqrt", {c.op1("Add", {var, scalarLike(c, eps, var)})})});
}
// A per-channel vector {C} shaped to broadcast over axis 1 of a rank-`rank` tensor.
Value perChannel(Context& c, Value v, size_t rank) {
  Ints s(rank - 1, 1);
  s[0] = numElements(shapeOf(c, v));
  return c.op1("Reshape", {widen(c, v)}, ShapeAttrs{s});
}

Status instanceNorm(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() < 3) return unsupported(n, "input needs rank >= 3 (N, C, spatial...), got " + shapeToString(xs));
  Value y = standardize(c, widen(c, x), axesFrom(2, xs.size()), attrFloat(n, "epsilon", 1e-5f));
  y = c.op1("Add", {c.op1("Mul", {y, perChannel(c, c.in(n, 1), xs.size())}), perChannel(c, c.in(n, 2), xs.size())});
  o = {narrowTo(c, y, dtypeOf(c, x))};
  return Status::Ok();
}

// Groups of C / num_groups channels; scale and bias per channel (opset 21) or per
// group (opset 18).
Status groupNorm(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  const int64_t groups = attrInt(n, "num_groups", 0);
  if (xs.size() < 3 || groups < 1 || xs[1] % groups != 0) {
    return unsupported(n, "needs an input N, C, spatial... whose C divides by num_groups, got " + shapeToString(xs) +
                              " and num_groups " + std::to_string(groups));
  }
  const int64_t per_scale = numElements(shapeOf(c, c.in(n, 1)));
  if (per_scale != xs[1] && per_scale != groups) {
    return unsupported(n, "scale has " + std::to_string(per_scale) + " elements, needs C or num_groups");
  }
  Value y = c.op1("Reshape", {widen(c, x)}, ShapeAttrs{{xs[0], groups, -1}});
  y = standardize(c, y, {2}, attrFloat(n, "epsilon", 1e-5f));
  const size_t scale_rank = per_scale == xs[1] ? xs.size() : 3;
  if (per_scale != xs[1]) {
    y = c.op1("Add", {c.op1("Mul", {y, perChannel(c, c.in(n, 1), 3)}), perChannel(c, c.in(n, 2), 3)});
  }
  y = c.op1("Reshape", {y}, ShapeAttrs{xs});
  if (per_scale == xs[1]) {
    y = c.op1("Add", {c.op1("Mul", {y, perChannel(c, c.in(n, 1), scale_rank)}), perChannel(c, c.in(n, 2), scale_rank)});
  }
  o = {narrowTo(c, y, dtypeOf(c, x))};
  return Status::Ok();
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
Status meanVarianceNorm(Context& c, const Node& n, Outs& o) {
  const Value x = widen(c, c.in(n, 0));
  const AxesAttrs keep{attrInts(n, "axes", {0, 2, 3}), true};
  const Value mean = c.op1("ReduceMean", {x}, keep);
  const Value var = c.op1("Sub", {c.op1("ReduceMean", {c.op1("Mul", {x, x})}, keep), c.op1("Mul", {mean, mean})});
  const Value sd = c.op1("Add", {c.op1("Sqrt", {var}), scalarLike(c, 1e-9f, var)});
  o = {narrowTo(c, c.op1("RealDiv", {c.op1("Sub", {x, mean}), sd}), dtypeOf(c, c.in(n, 0)))};
  return Status::Ok();
}

// x / ||x||_p along axis, p 1 or 2; a zero vector stays zero (ONNX's reference).
Status lpNorm(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const int64_t p = attrInt(n, "p", 2);
  if (p != 1 && p != 2) return unsupported(n, "p must be 1 or 2, got " + std::to_string(p));
  const AxesAttrs keep{{attrInt(n, "axis", -1)}, true};
  const Value norm = p == 1 ? c.op1("ReduceSum", {c.op1("Abs", {x})}, keep)
                            : c.op1("Sqrt", {c.op1("ReduceSum", {c.op1("Mul", {x, x})}, keep)});
  const Value zero = c.op1("Equal", {norm, scalarLike(c, 0.0f, norm)});
  o = {c.op1("RealDiv", {x, c.op1("Select", {zero, scalarLike(c, 1.0f, norm), norm})})};
  return Status::Ok();
}

// x / sqrt(mean(x^2 over axes [axis, rank)) + eps) * scale.
Status rmsNormalization(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrInt(n, "axis", -1), static_cast<int64_t>(xs.size())));
  const Value w = widen(c, x);
  const Value ms = c.op1("ReduceMean", {c.op1("Mul", {w, w})}, AxesAttrs{axesFrom(axis, xs.size()), true});
  const Value inv = c.op1("Rsqrt", {c.op1("Add", {ms, scalarLike(c, attrFloat(n, "epsilon", 1e-5f), ms)})});
  o = {narrowTo(c, c.op1("Mul", {c.op1("Mul", {w, inv}), widen(c, c.in(n, 1))}), dtypeOf(c, x))};
  return Status::Ok();
}

// One-hot of the first maximum along axis (before opset 13: of the 2-D coercion at axis).
Status hardmax(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrInt(n, "axis", c.opset() >= 13 ? -1 : 1), rank));
  if (c.opset() < 13) {
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    x = c.op1("Reshape", {x}, ShapeAttrs{{outer, numElements(xs) / std::max<int64_t>(outer, 1)}});
    axis = 1;
  }
  const int64_t depth = shapeOf(c, x)[axis];
  const Value idx = c.op1("ArgMax", {x}, AxisAttrs{axis, false});
  Value y = c.op1("OneHot", {idx}, OneHotAttrs{depth, axis, 1.0f, 0.0f});
  if (dtypeOf(c, c.in(n, 0)) != DType::kFloat32) y = c.op1("Cast", {y}, CastAttrs{dtypeOf(c, c.in(n, 0))});
  o = {c.op1("Reshape", {y}, ShapeAttrs{xs})};
  return Status::Ok();
}

// Upsample (opset 7-9): Resize with asymmetric coordinates, nearest rounding down.
Status upsample(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  std::vector<float> scales;
  if (c.opset() >= 9) {
    ASSIGN_OR_RETURN(HostTensor t, c.constant(c.in(n, 1), "Upsample scales"));
    scales = t.toFloats();
  } else {
    if (const auto* a = findAttr(n, "scales")) scales.assign(a->floats().begin(), a->floats().end());
  }
  if (xs.size() != 4 || scales.size() != 4 || scales[0] != 1.0f || scales[1] != 1.0f) {
    return unsupported(n, "only 4-D NCHW inputs scaled in H and W are supported");
  }
  ResizeAttrs a;
  const std::string mode = attrString(n, "mode", "nearest");
  if (mode == "linear" || mode == "bilinear") a.mode = ResizeMode::kLinear;
  else if (mode != "nearest") return unsupported(n, "mode '" + mode + "' is not supported");
  a.coordinate_transformation = CoordTransform::kAsymmetric;
  a.nearest_mode = NearestMode::kFloor;
  a.sizes = {static_cast<int64_t>(std::floor(xs[2] * static_cast<double>(scales[2]))),
             static_cast<int64_t>(std::floor(xs[3] * static_cast<double>(scales[3])))};
  a.scale_h = scales[2];
  a.scale_w = scales[3];
  o = {c.op1("Resize", {x}, a)};
  return Status::Ok();
}

}  // namespace

void registerNormConverters(std::map<std::string, Converter>& t) {
  t["InstanceNormalization"] = instanceNorm;
  t["GroupNormalization"] = groupNorm;
  t["MeanVarianceNormalization"] = meanVarianceNorm;
  t["LpNormalization"] = lpNorm;
  t["RMSNormalization"] = rmsNormalization;
  t["Hardmax"] = hardmax;
  t["Upsample"] = upsample;
}

}  // namespace gkrt::onnx_import
