// Ops that select or synthesise elements by index: Slice, StridedSlice, Gather, Pad,
// OneHot, Resize.
#include <algorithm>
#include <cmath>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

StatusOr<std::vector<SliceWindow>> sliceWindows(const ir::Node& n, const Shape& x) {
  using Window = SliceWindow;
  std::vector<Window> w(x.size());
  for (size_t d = 0; d < x.size(); ++d) w[d] = {0, 1, x[d]};
  if (n.attrs.kind() == AttrKind::kSlice) {  // begin + size, size -1 = to the end
    const auto& a = n.attrs.get<SliceAttrs>();
    if (a.begins.size() != x.size() || a.sizes.size() != x.size()) {
      return makeError(StatusCode::kInvalidArgument, "Slice needs ", x.size(), " begins and sizes, got ",
                       a.begins.size(), " and ", a.sizes.size());
    }
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t b = a.begins[d], s = a.sizes[d] == -1 ? x[d] - a.begins[d] : a.sizes[d];
      if (b < 0 || s < 0 || b > x[d] || s > x[d] - b) {
        return makeError(StatusCode::kInvalidArgument, "Slice axis ", d, ": begin ", b, " size ", a.sizes[d],
                         " exceeds dim ", x[d]);
      }
      w[d] = {b, 1, s};
    }
    return w;
  }
  const auto& a = n.attrs.get<StridedSliceAttrs>();  // ONNX Slice: clamped [begin, end) by step
  const size_t k = a.begins.size();
  if (a.ends.size() != k || (!a.axes.empty() && a.axes.size() != k) || (!a.steps.empty() && a.steps.size() != k)) {
    return makeError(StatusCode::kInvalidArgument, "StridedSlice begins/ends/axes/steps lengths differ");
  }
  std::vector<char> seen(x.size(), 0);
  for (size_t i = 0; i < k; ++i) {
    ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axes.empty() ? static_cast<int64_t>(i) : a.axes[i],
                                                 static_cast<int64_t>(x.size())));
    if (seen[axis]) return makeError(StatusCode::kInvalidArgument, "StridedSlice axis ", axis, " given twice");
    seen[axis] = 1;
    const int64_t dim = x[axis], step = a.steps.empty() ? 1 : a.steps[i];
    if (step == 0) return makeError(StatusCode::kInvalidArgument, "StridedSlice step is 0 on axis ", axis);
    int64_t b = a.begins[i], e = a.ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? (e - b + step - 1) / step : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? (b - e - step - 1) / (-step) : 0;
    }
    w[axis] = {b, step, count};
  }
  return w;
}

namespace {

Status shapeSlice(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(auto w, sliceWindows(n, in[0]->shape));
  Shape s;
  for (const SliceWindow& x : w) s.push_back(x.count);
  out = {s};
  return Status::Ok();
}
Status sliceKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(auto w, sliceWindows(c.node, c.in(0).shape));
  gatherCopy(c.in(0), c.out(0), [&](const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (w[d].start + idx[d] * w[d].step) * st[d];
    return off;
  });
  return Status::Ok();
}

// Gather(data, indices): out = data[:axis] + indices.shape + data[axis+1:].
Status dtypeGather(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (!isInteger(in[1]->dtype)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " indices must be an integer type, got ",
                     dtypeName(in[1]->dtype));
  }
  out = {in[0]->dtype};
  return Status::Ok();
}
Status shapeGather(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& x = in[0]->shape;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.size())));
  Shape s(x.begin(), x.begin() + axis);
  s.insert(s.end(), in[1]->shape.begin(), in[1]->shape.end());
  s.insert(s.end(), x.begin() + axis + 1, x.end());
  out = {s};
  return Status::Ok();
}
Status gatherKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &ind = c.in(1);
  const int64_t axis = *normalizeAxis(c.node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size()));
  const AxisSplit s = splitAtAxis(x.shape, axis);
  const int64_t n_ind = ind.size();
  const size_t es = dtypeSize(x.dtype);
  for (int64_t j = 0; j < n_ind; ++j) {
    int64_t k = loadIndex(ind, j);
    if (k < 0) k += s.extent;
    if (k < 0 || k >= s.extent) {
      return makeError(StatusCode::kInvalidArgument, "Gather index ", loadIndex(ind, j), " at position ", j,
                       " is out of range for axis ", axis, " of size ", s.extent);
    }
    for (int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(static_cast<uint8_t*>(c.out(0).data) + ((o * n_ind + j) * s.inner) * es,
                  static_cast<const uint8_t*>(x.data) + ((o * s.extent + k) * s.inner) * es, s.inner * es);
    }
  }
  return Status::Ok();
}

Status shapePad(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<PadAttrs>();
  const Shape& x = in[0]->shape;
  if (a.pads.size() != 2 * x.size()) {
    return makeError(StatusCode::kInvalidArgument, "Pad needs ", 2 * x.size(), " pads (begins then ends) for rank ",
                     x.size(), ", got ", a.pads.size());
  }
  Shape s(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t b = a.pads[d], e = a.pads[d + x.size()];
    if (__builtin_add_overflow(x[d], b, &s[d]) || __builtin_add_overflow(s[d], e, &s[d])) {
      return makeError(StatusCode::kInvalidArgument, "Pad of ", b, "/", e, " on axis ", d, " overflows int64");
    }
    if (s[d] < 0) return makeError(StatusCode::kInvalidArgument, "Pad makes axis ", d, " negative");
    if (a.mode == PadMode::kReflect && (b >= x[d] || e >= x[d]) && (b > 0 || e > 0)) {
      return makeError(StatusCode::kInvalidArgument, "reflect Pad of ", b, "/", e, " needs axis ", d,
                       " longer than the pad, it has ", x[d]);
    }
    if (a.mode == PadMode::kEdge && x[d] == 0 && s[d] > 0) {
      return makeError(StatusCode::kInvalidArgument, "edge Pad of an empty axis ", d);
    }
  }
  out = {s};
  return Status::Ok();
}
Status padKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<PadAttrs>();
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const size_t r = x.shape.size();
  const std::vector<int64_t> st = contiguousStrides(x.shape);
  std::vector<int64_t> idx;
  for (int64_t i = 0, n = y.size(); i < n; ++i) {
    unravel(i, y.shape, idx);
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < r; ++d) {
      int64_t s = idx[d] - a.pads[d];
      const int64_t dim = x.shape[d];
      if (s < 0 || s >= dim) {
        if (a.mode == PadMode::kConstant) { inside = false; break; }
        if (a.mode == PadMode::kEdge) s = std::clamp<int64_t>(s, 0, dim - 1);
        else s = s < 0 ? -s : 2 * (dim - 1) - s;  // reflect, excluding the edge
      }
      off += s * st[d];
    }
    if (inside) copyElement(y, i, x, off);
    else storeF(y.data, y.dtype, i, a.value);
  }
  return Status::Ok();
}

// OneHot(indices) -> float32 with `depth` inserted at axis.
Status dtypeOneHot(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (in[0]->dtype == DType::kBool) {
    return makeError(StatusCode::kInvalidArgument, "OneHot indices must be numbers, got bool");
  }
  out = {DType::kFloat32};
  return Status::Ok();
}
Status shapeOneHot(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<OneHotAttrs>();
  if (a.depth <= 0) return makeError(StatusCode::kInvalidArgument, "OneHot depth must be positive, got ", a.depth);
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size()) + 1;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, rank));
  Shape s = in[0]->shape;
  s.insert(s.begin() + axis, a.depth);
  out = {s};
  return Status::Ok();
}
Status oneHotKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<OneHotAttrs>();
  const MutableTensorView& y = c.out(0);
  const int64_t axis = *normalizeAxis(a.axis, static_cast<int64_t>(y.shape.size()));
  const AxisSplit s = splitAtAxis(y.shape, axis);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t k = loadIndex(c.in(0), o * s.inner + in);
      if (k < 0) k += a.depth;
      for (int64_t d = 0; d < s.extent; ++d) {
        y.as<float>()[(o * s.extent + d) * s.inner + in] = d == k ? a.on_value : a.off_value;
      }
    }
  }
  return Status::Ok();
}

// Resize of the last two axes of an NCHW tensor to `sizes` = {H, W}.
Status shapeResize(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<ResizeAttrs>();
  if (in[0]->shape.size() != 4 || a.sizes.size() != 2 || a.sizes[0] <= 0 || a.sizes[1] <= 0 ||
      in[0]->shape[2] == 0 || in[0]->shape[3] == 0) {
    return makeError(StatusCode::kInvalidArgument, "Resize needs a 4-D NCHW input with H, W > 0 and positive sizes "
                     "{H, W}, got ", shapeToString(in[0]->shape), " and ", a.sizes.size(), " sizes");
  }
  out = {Shape{in[0]->shape[0], in[0]->shape[1], a.sizes[0], a.sizes[1]}};
  return Status::Ok();
}
}  // namespace

// ONNX Resize's coordinate transforms. With a given scale, ONNX takes the resized
// length as in_len * scale, unrounded (it matters for align_corners).
double resizeSourceCoord(CoordTransform t, int64_t o, int64_t in_len, int64_t out_len, float given_scale) {
  const double scale = given_scale > 0 ? given_scale : static_cast<double>(out_len) / static_cast<double>(in_len);
  const double resized = given_scale > 0 ? in_len * scale : static_cast<double>(out_len);
  switch (t) {
    case CoordTransform::kHalfPixel: return (o + 0.5) / scale - 0.5;
    case CoordTransform::kAsymmetric: return o / scale;
    case CoordTransform::kAlignCorners:
      return resized > 1 ? o * static_cast<double>(in_len - 1) / (resized - 1) : 0.0;
    case CoordTransform::kPytorchHalfPixel: return resized > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  }
  return 0.0;
}
int64_t resizeNearestIndex(NearestMode m, double x, int64_t len) {
  double r;
  switch (m) {
    case NearestMode::kRoundPreferFloor: r = std::ceil(x - 0.5); break;
    case NearestMode::kRoundPreferCeil: r = std::floor(x + 0.5); break;
    case NearestMode::kFloor: r = std::floor(x); break;
    default: r = std::ceil(x); break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, len - 1);
}
// ONNX cubic resize along one axis: the 4 input positions around `x` (edges repeated)
// and their weights, with `a` the cubic coefficient. An integral x takes x - 1 as its
// left pixel (ratio 1), as ONNX's reference does; exclude_outside zeroes the weights of
// positions outside the input and renormalises.
ResizeCubicTaps resizeCubicTaps(double x, int64_t len, double a, bool exclude_outside) {
  const double left = std::ceil(x) - 1, r = x - left;  // r in (0, 1]
  const double d[4] = {1 + r, r, 1 - r, 2 - r};       // distances to left - 1 .. left + 2
  ResizeCubicTaps t;
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    const double s = d[k];
    t.weight[k] = s <= 1 ? ((a + 2) * s - (a + 3)) * s * s + 1 : ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    const int64_t at = static_cast<int64_t>(left) - 1 + k;
    if (exclude_outside && (at < 0 || at >= len)) t.weight[k] = 0;
    sum += t.weight[k];
    t.index[k] = std::clamp<int64_t>(at, 0, len - 1);
  }
  if (exclude_outside && sum != 0) for (double& w : t.weight) w /= sum;
  return t;
}

namespace {

Status resizeKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<ResizeAttrs>();
  const TensorView& x = c.in(0);
  const int64_t planes = x.shape[0] * x.shape[1], ih = x.shape[2], iw = x.shape[3];
  const int64_t oh = a.sizes[0], ow = a.sizes[1];
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t h = 0; h < oh; ++h) {
      const double sy = resizeSourceCoord(a.coordinate_transformation, h, ih, oh, a.scale_h);
      for (int64_t w = 0; w < ow; ++w) {
        const double sx = resizeSourceCoord(a.coordinate_transformation, w, iw, ow, a.scale_w);
        const int64_t dst = (p * oh + h) * ow + w;
        if (a.mode == ResizeMode::kNearest) {
          copyElement(c.out(0), dst, x, (p * ih + resizeNearestIndex(a.nearest_mode, sy, ih)) * iw +
                                            resizeNearestIndex(a.nearest_mode, sx, iw));
          continue;
        }
        if (a.mode == ResizeMode::kCubic) {
          const ResizeCubicTaps ty = resizeCubicTaps(sy, ih, a.cubic_coeff_a, a.exclude_outside);
          const ResizeCubicTaps tx = resizeCubicTaps(sx, iw, a.cubic_coeff_a, a.exclude_outside);
          double v = 0;
          for (int i = 0; i < 4; ++i) {
            double row = 0;
            for (int j = 0; j < 4; ++j) {
              row += tx.weight[j] * static_cast<double>(loadF(x.data, x.dtype, (p * ih + ty.index[i]) * iw + tx.index[j]));
            }
            v += ty.weight[i] * row;
          }
          storeF(c.out(0).data, c.out(0).dtype, dst, static_cast<float>(v));
          continue;
        }
        const double cy = std::clamp(sy, 0.0, static_cast<double>(ih - 1));
        const double cx = std::clamp(sx, 0.0, static_cast<double>(iw - 1));
        const int64_t y0 = static_cast<int64_t>(cy), x0 = static_cast<int64_t>(cx);
        const int64_t y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
        const double fy = cy - y0, fx = cx - x0;
        auto at = [&](int64_t yy, int64_t xx) { return static_cast<double>(loadF(x.data, x.dtype, (p * ih + yy) * iw + xx)); };
        const double v = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
        storeF(c.out(0).data, c.out(0).dtype, dst, static_cast<float>(v));
      }
    }
  }
  return Status::Ok();
}
Status dtypeResize(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (n.attrs.get<ResizeAttrs>().mode != ResizeMode::kNearest) RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  out = {in[0]->dtype};
  return Status::Ok();
}

}  // namespace

void registerIndexingOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Slice")) t.push_back({"Slice", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kSlice, dtypeFirst, shapeSlice, sliceKernel,
               "x[begin : begin+size] per axis (size -1 = to the end)"});
  if constexpr (opSelected("StridedSlice")) t.push_back({"StridedSlice", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kStridedSlice, dtypeFirst, shapeSlice,
               sliceKernel, "x[begin:end:step] on `axes`, bounds clamped (ONNX Slice)"});
  if constexpr (opSelected("Gather")) t.push_back({"Gather", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kAxis, dtypeGather, shapeGather, gatherKernel,
               "take indices (negative from the end) along axis"});
  if constexpr (opSelected("Pad")) t.push_back({"Pad", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPad, dtypeFirst, shapePad, padKernel,
               "pad with a constant, by reflection or by edge copies"});
  if constexpr (opSelected("OneHot")) t.push_back({"OneHot", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kOneHot, dtypeOneHot, shapeOneHot, oneHotKernel,
               "float32 one-hot of indices (floats truncate); out-of-range rows are all off_value"});
  if constexpr (opSelected("Resize")) t.push_back({"Resize", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kResize, dtypeResize, shapeResize, resizeKernel,
               "NCHW resize of H, W to `sizes`, nearest, bilinear or bicubic"});
}

}  // namespace gkrt::ops
