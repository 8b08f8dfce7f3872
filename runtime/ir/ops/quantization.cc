// The ONNX quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
// Reference kernels only, following the ONNX definitions (and onnx.reference):
//   quantize:   y = saturate(round_half_even(x / scale) + zero_point)   integer outputs
//               y = cast(x / scale + zero_point, saturate)               float8/float4 outputs
//   dequantize: y = (x - zero_point) * scale
// with scale and zero point per tensor (one element), per axis (1-D along `axis`) or per
// block (same rank as x, `block_size` elements of x along `axis` per scale element).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/quant_helpers.h"

namespace gkrt::ops {
namespace {

// Where scale element of x element (outer, a, inner) lives, by quantization mode.
struct ScaleIndexer {
  enum class Mode { kTensor, kAxis, kBlock } mode = Mode::kTensor;
  AxisSplit split{1, 1, 1};
  int64_t block_size = 0, scale_extent = 1;
  int64_t operator()(int64_t outer, int64_t a, int64_t inner) const {
    switch (mode) {
      case Mode::kTensor: return 0;
      case Mode::kAxis: return a;
      case Mode::kBlock: return (outer * scale_extent + a / block_size) * split.inner + inner;
    }
    return 0;
  }
};

// Checks scale (and zero point) against x for the node's axis and block size.
StatusOr<ScaleIndexer> scaleIndexer(const ir::Node& n, const Shape& x, const Shape& scale, const Shape* zero_point) {
  const auto& a = n.attrs.get<QuantAttrs>();
  const int64_t rank = static_cast<int64_t>(x.size());
  if (zero_point && *zero_point != scale && !(numElements(*zero_point) == 1 && numElements(scale) == 1)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": zero point shape ", shapeToString(*zero_point),
                     " differs from scale shape ", shapeToString(scale));
  }
  ScaleIndexer s;
  if (numElements(scale) == 1 && (scale.size() <= 1 || a.block_size == 0)) return s;  // per tensor
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  if (axis < 0 || axis >= rank) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": axis ", a.axis, " is outside rank ", rank,
                     " of x ", shapeToString(x));
  }
  s.split = splitAtAxis(x, axis);
  if (a.block_size < 0) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": block_size ", a.block_size, " must be >= 0");
  }
  if (a.block_size == 0) {
    if (scale.size() != 1 || scale[0] != x[axis]) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, ": per-axis scale must be 1-D with x's dim ",
                       x[axis], " (axis ", axis, "), got ", shapeToString(scale),
                       "; give a scalar scale, or block_size for blocked quantization");
    }
    s.mode = ScaleIndexer::Mode::kAxis;
    return s;
  }
  Shape want = x;
  want[axis] = (x[axis] + a.block_size - 1) / a.block_size;
  if (scale != want) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": blocked scale for x ", shapeToString(x),
                     " with block_size ", a.block_size, " on axis ", axis, " must be ", shapeToString(want), ", got ",
                     shapeToString(scale));
  }
  s.mode = ScaleIndexer::Mode::kBlock;
  s.block_size = a.block_size;
  s.scale_extent = want[axis];
  return s;
}

bool isQuantizedType(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kUInt16 || isNarrowInteger(t) ||
         (isNarrowFloat(t) && t != DType::kFloat8E8M0);
}

double loadD(const TensorView& t, int64_t i) {
  if (t.dtype == DType::kFloat64) return t.as<double>()[i];
  if (isInteger(t.dtype)) return static_cast<double>(loadIndex(t, i));
  return loadF(t.data, t.dtype, i);
}

Status dtypeQuantize(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const auto& a = n.attrs.get<QuantAttrs>();
  if (!isFloat(in[0]->dtype) && in[0]->dtype != DType::kInt32) {
    return makeError(StatusCode::kInvalidArgument, "QuantizeLinear x must be float or int32, got ", dtypeName(in[0]->dtype));
  }
  RETURN_IF_ERROR(requireFloat(n, in[1], 1));
  if (!isQuantizedType(a.to)) {
    return makeError(StatusCode::kInvalidArgument, "QuantizeLinear cannot produce ", dtypeName(a.to),
                     "; valid: int8, uint8, int16, uint16, int4, uint4, int2, uint2, float8e4m3fn, float8e4m3fnuz, "
                     "float8e5m2, float8e5m2fnuz, float4e2m1");
  }
  if (!isFloat(a.precision)) {
    return makeError(StatusCode::kInvalidArgument, "QuantizeLinear precision must be a float type, got ",
                     dtypeName(a.precision));
  }
  if (in.size() > 2 && in[2] && in[2]->dtype != a.to) {
    return makeError(StatusCode::kInvalidArgument, "QuantizeLinear zero point is ", dtypeName(in[2]->dtype),
                     " but the output is ", dtypeName(a.to), "; they must match");
  }
  out = {a.to};
  return Status::Ok();
}

Status dtypeDequantize(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const auto& a = n.attrs.get<QuantAttrs>();
  if (!isQuantizedType(in[0]->dtype) && in[0]->dtype != DType::kInt32) {
    return makeError(StatusCode::kInvalidArgument, "DequantizeLinear cannot read ", dtypeName(in[0]->dtype),
                     "; x must be int8, uint8, int16, uint16, int32, a 4-/2-bit int, float8 or float4e2m1");
  }
  RETURN_IF_ERROR(requireFloat(n, in[1], 1));
  if (in.size() > 2 && in[2] && in[2]->dtype != in[0]->dtype) {
    return makeError(StatusCode::kInvalidArgument, "DequantizeLinear zero point is ", dtypeName(in[2]->dtype),
                     " but x is ", dtypeName(in[0]->dtype), "; they must match");
  }
  if (!isFloat(a.to)) {
    return makeError(StatusCode::kInvalidArgument, "DequantizeLinear output must be a float type, got ", dtypeName(a.to));
  }
  out = {a.to};
  return Status::Ok();
}

Status shapeQuantize(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape* zp = in.size() > 2 && in[2] ? &in[2]->shape : nullptr;
  RETURN_IF_ERROR(scaleIndexer(n, in[0]->shape, in[1]->shape, zp).status());
  out = {in[0]->shape};
  return Status::Ok();
}

Status quantizeKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<QuantAttrs>();
  const TensorView &x = c.in(0), &scale = c.in(1);
  const TensorView* zp = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const MutableTensorView& y = c.out(0);
  ASSIGN_OR_RETURN(ScaleIndexer idx, scaleIndexer(c.node, x.shape, scale.shape, zp ? &zp->shape : nullptr));
  const bool to_float = isNarrowFloat(y.dtype);
  int64_t lo = 0, hi = 0;
  if (!to_float) quantIntRange(y.dtype, lo, hi);
  const AxisSplit& s = idx.split;
  const int64_t outer = x.size() / std::max<int64_t>(s.extent * s.inner, 1);
  int64_t i = 0;
  for (int64_t o = 0; o < (idx.mode == ScaleIndexer::Mode::kTensor ? x.size() : outer); ++o) {
    const int64_t extent = idx.mode == ScaleIndexer::Mode::kTensor ? 1 : s.extent;
    const int64_t inner = idx.mode == ScaleIndexer::Mode::kTensor ? 1 : s.inner;
    for (int64_t e = 0; e < extent; ++e) {
      for (int64_t k = 0; k < inner; ++k, ++i) {
        const int64_t si = idx(o, e, k);
        const double q = roundToFloatType(a.precision, roundToFloatType(a.precision, loadD(x, i)) / roundToFloatType(a.precision, loadD(scale, si)));
        if (to_float) {
          const double z = zp ? loadF(zp->data, zp->dtype, si) : 0.0;
          y.as<uint8_t>()[i] = floatToNarrow(static_cast<float>(q + z), y.dtype, a.saturate);
          continue;
        }
        const double r = std::isnan(q) ? 0.0 : std::nearbyint(std::clamp(q, -9.0e15, 9.0e15));  // half to even
        const int64_t v = std::clamp<int64_t>(static_cast<int64_t>(r) + (zp ? loadIndex(*zp, si) : 0), lo, hi);
        withIntegerType(y.dtype, [&](auto tag) { y.as<decltype(tag)>()[i] = static_cast<decltype(tag)>(v); });
      }
    }
  }
  return Status::Ok();
}

Status dequantizeKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &scale = c.in(1);
  const TensorView* zp = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const MutableTensorView& y = c.out(0);
  ASSIGN_OR_RETURN(ScaleIndexer idx, scaleIndexer(c.node, x.shape, scale.shape, zp ? &zp->shape : nullptr));
  const bool exact_int = !isNarrowFloat(x.dtype);
  const AxisSplit& s = idx.split;
  const bool per_tensor = idx.mode == ScaleIndexer::Mode::kTensor;
  const int64_t extent = per_tensor ? 1 : s.extent, inner = per_tensor ? 1 : s.inner;
  const int64_t outer = x.size() / std::max<int64_t>(extent * inner, 1);
  int64_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t e = 0; e < extent; ++e) {
      for (int64_t k = 0; k < inner; ++k, ++i) {
        const int64_t si = idx(o, e, k);
        // x - zero_point in float32 (exact for every type but large int32), times scale
        // rounded once to float32, as ONNX's reference computes it.
        const double dx = exact_int ? static_cast<double>(loadIndex(x, i) - (zp ? loadIndex(*zp, si) : 0))
                                    : static_cast<double>(loadF(x.data, x.dtype, i)) - (zp ? loadF(zp->data, zp->dtype, si) : 0.0f);
        const double v = static_cast<double>(static_cast<float>(dx)) * loadD(scale, si);
        if (y.dtype == DType::kFloat64) y.as<double>()[i] = v;
        else storeF(y.data, y.dtype, i, static_cast<float>(v));
      }
    }
  }
  return Status::Ok();
}

// y = saturate(round(x / scale) + zp) with scale = (max(x, 0) - min(x, 0)) / 255 and
// zp = round(clamp(-min(x, 0) / scale, 0, 255)), in float32 as the ONNX definition.
Status dynamicQuantizeKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  float maxx = 0.0f, minx = 0.0f;
  for (int64_t i = 0; i < x.size(); ++i) {
    const float v = loadF(x.data, x.dtype, i);
    maxx = std::max(maxx, v);
    minx = std::min(minx, v);
  }
  const float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
  const float initial_zp = 0.0f - minx / scale;
  const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  for (int64_t i = 0; i < x.size(); ++i) {
    const float q = std::nearbyint(loadF(x.data, x.dtype, i) / scale) + zp;
    c.out(0).as<uint8_t>()[i] = static_cast<uint8_t>(std::isnan(q) ? 0.0f : std::clamp(q, 0.0f, 255.0f));
  }
  storeF(c.out(1).data, c.out(1).dtype, 0, scale);
  c.out(2).as<uint8_t>()[0] = static_cast<uint8_t>(zp);
  return Status::Ok();
}

Status dtypeDynamicQuantize(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  out = {DType::kUInt8, in[0]->dtype, DType::kUInt8};
  return Status::Ok();
}

Status shapeDynamicQuantize(const ir::Node&, const In& in, std::vector<Shape>& out) {
  out = {in[0]->shape, Shape{}, Shape{}};
  return Status::Ok();
}

}  // namespace

void registerQuantizationOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("QuantizeLinear")) t.push_back({"QuantizeLinear", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kQuant,
               dtypeQuantize, shapeQuantize, quantizeKernel,
               "y = saturate(round_half_even(x / scale) + zero_point) to `to` (float8/float4: cast(x / scale), `saturate`); "
               "scale per tensor, per axis or per block"});
  if constexpr (opSelected("DequantizeLinear")) t.push_back({"DequantizeLinear", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kQuant,
               dtypeDequantize, shapeQuantize, dequantizeKernel,
               "y = (x - zero_point) * scale, as `to`; scale per tensor, per axis or per block"});
  if constexpr (opSelected("DynamicQuantizeLinear")) t.push_back({"DynamicQuantizeLinear", OpClass::kOpaque, 1, 1, 3, 3,
               AttrKind::kNone, dtypeDynamicQuantize, shapeDynamicQuantize, dynamicQuantizeKernel,
               "uint8 y, scale = (max(x,0) - min(x,0)) / 255, zero_point = round(-min(x,0) / scale), as ONNX"});
}

}  // namespace gkrt::ops
