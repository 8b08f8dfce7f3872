// Building blocks shared by the op families: dtype and shape rules, element access
// across dtypes, and broadcast iteration for reference kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/ir/op_def.h"

namespace gkrt::ops {

using In = std::vector<const TensorType*>;

// ---- Resize (indexing.cc; shared with the cpu backend's resize kernel) ---------
// Source coordinate of output index o under ONNX Resize's coordinate transform.
double resizeSourceCoord(CoordTransform t, int64_t o, int64_t in_len, int64_t out_len, float given_scale);
// The nearest input index to coordinate x, clamped to [0, len).
int64_t resizeNearestIndex(NearestMode m, double x, int64_t len);
// ONNX cubic resize along one axis: the 4 input positions around coordinate x (edges
// repeated) and their weights, `a` the cubic coefficient; exclude_outside zeroes the
// weights of positions outside [0, len) and renormalises.
struct ResizeCubicTaps {
  int64_t index[4];
  double weight[4];
};
ResizeCubicTaps resizeCubicTaps(double x, int64_t len, double a, bool exclude_outside);

// ---- dtype rules -------------------------------------------------------------
Status requireSameDType(const ir::Node& n, const In& in, size_t first, size_t last);
Status requireFloat(const ir::Node& n, const TensorType* t, size_t index);

Status dtypeFloatSame(const ir::Node& n, const In& in, std::vector<DType>& out);    // float inputs, same -> same
Status dtypeNumericSame(const ir::Node& n, const In& in, std::vector<DType>& out);  // non-bool, same -> same
Status dtypeAnySame(const ir::Node& n, const In& in, std::vector<DType>& out);      // any, same -> same
Status dtypeCompare(const ir::Node& n, const In& in, std::vector<DType>& out);      // same -> bool
Status dtypeLogical(const ir::Node& n, const In& in, std::vector<DType>& out);      // bool -> bool
Status dtypeFloatToBool(const ir::Node& n, const In& in, std::vector<DType>& out);  // float -> bool
Status dtypeFirst(const ir::Node& n, const In& in, std::vector<DType>& out);        // any -> in0 (all outputs)
Status dtypeComputeSame(const ir::Node& n, const In& in, std::vector<DType>& out);  // any but storage-only, same -> same
// ONNX only moves, casts and (de)quantizes the narrow types (dtype.h isStorageOnly):
// compute ops refuse them with this error.
Status rejectStorageOnly(const ir::Node& n, const In& in);

// ---- shape rules -------------------------------------------------------------
Status shapeSame(const ir::Node& n, const In& in, std::vector<Shape>& out);        // every output = in0
Status shapeBroadcast(const ir::Node& n, const In& in, std::vector<Shape>& out);   // broadcast of all inputs
Status shapeScalar(const ir::Node& n, const In& in, std::vector<Shape>& out);      // every output rank 0
// NCHW x OIHW convolution output (linear.cc; Conv2DAttrs on the node): x in[0], w in[1], bias in[2].
Status shapeConv2D(const ir::Node& n, const In& in, std::vector<Shape>& out);

// ---- element access ------------------------------------------------------------
// Float-to-integer conversion truncating toward zero and saturating at the type's
// range (NaN -> 0): never the undefined behaviour of an out-of-range static_cast.
template <class Dst, class Src> Dst castValue(Src v) {
  if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
    if (std::isnan(v)) return Dst(0);
    constexpr double lo = static_cast<double>(std::numeric_limits<Dst>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<Dst>::max());
    const double d = static_cast<double>(v);
    return d <= lo ? std::numeric_limits<Dst>::lowest() : d >= hi ? std::numeric_limits<Dst>::max() : static_cast<Dst>(d);
  } else {
    return static_cast<Dst>(v);
  }
}

// Reference kernels compute float math in float32: every dtype widens to it and narrows
// back (float64 keeps float32 precision through such kernels; exact paths use the
// storage type).
inline float loadF(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat16: return halfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16: return bfloat16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat64: return static_cast<float>(static_cast<const double*>(p)[i]);
    case DType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DType::kUInt8: return static_cast<const uint8_t*>(p)[i];
    case DType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DType::kInt32: return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case DType::kUInt32: return static_cast<float>(static_cast<const uint32_t*>(p)[i]);
    case DType::kInt64: return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt64: return static_cast<float>(static_cast<const uint64_t*>(p)[i]);
    case DType::kBool: return static_cast<const uint8_t*>(p)[i] ? 1.0f : 0.0f;
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kUInt4: case DType::kInt4: case DType::kFloat4E2M1: case DType::kFloat8E8M0: case DType::kUInt2:
    case DType::kInt2: return narrowToFloat(static_cast<const uint8_t*>(p)[i], t);
  }
  return 0.0f;
}
inline void storeF(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kFloat32: static_cast<float*>(p)[i] = v; break;
    case DType::kFloat16: static_cast<uint16_t*>(p)[i] = floatToHalf(v); break;
    case DType::kBFloat16: static_cast<uint16_t*>(p)[i] = floatToBFloat16(v); break;
    case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DType::kInt8: static_cast<int8_t*>(p)[i] = castValue<int8_t>(v); break;
    case DType::kUInt8: static_cast<uint8_t*>(p)[i] = castValue<uint8_t>(v); break;
    case DType::kInt16: static_cast<int16_t*>(p)[i] = castValue<int16_t>(v); break;
    case DType::kUInt16: static_cast<uint16_t*>(p)[i] = castValue<uint16_t>(v); break;
    case DType::kInt32: static_cast<int32_t*>(p)[i] = castValue<int32_t>(v); break;
    case DType::kUInt32: static_cast<uint32_t*>(p)[i] = castValue<uint32_t>(v); break;
    case DType::kInt64: static_cast<int64_t*>(p)[i] = castValue<int64_t>(v); break;
    case DType::kUInt64: static_cast<uint64_t*>(p)[i] = castValue<uint64_t>(v); break;
    case DType::kBool: static_cast<uint8_t*>(p)[i] = v != 0.0f; break;
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: case DType::kFloat8E8M0:  // nearest even; saturating; e8m0 to nearest
      static_cast<uint8_t*>(p)[i] = floatToNarrow(v, t, true, E8M0Rounding::kNearest);
      break;
    case DType::kUInt4: case DType::kInt4: case DType::kUInt2: case DType::kInt2:  // saturate, as for the wider ints
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(std::isnan(v) ? 0 : std::clamp<float>(std::trunc(v),
          static_cast<float>(narrowIntMin(t)), static_cast<float>(narrowIntMax(t))));
      break;
  }
}

// Calls fn(T{}) with the C++ type holding the elements of integer or bool `t` (the
// 4-/2-bit integers: their one-byte storage, for kernels that only move elements;
// compute ops refuse those types in their dtype rules).
template <class Fn> void withIntegerType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8: case DType::kInt4: case DType::kInt2: fn(int8_t{}); break;
    case DType::kUInt8: case DType::kBool: case DType::kUInt4: case DType::kUInt2: fn(uint8_t{}); break;
    case DType::kInt16: fn(int16_t{}); break;
    case DType::kUInt16: fn(uint16_t{}); break;
    case DType::kInt32: fn(int32_t{}); break;
    case DType::kUInt32: fn(uint32_t{}); break;
    case DType::kInt64: fn(int64_t{}); break;
    case DType::kUInt64: fn(uint64_t{}); break;
    default: break;  // float types: callers take their float path first
  }
}
// Calls fn(T{}) with the C++ type holding `t`'s elements, 16-bit floats excluded
// (callers handle those through loadF/storeF); the narrow floats as their bits (uint8_t),
// for kernels that only move elements.
template <class Fn> void withStorageType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: fn(float{}); break;
    case DType::kFloat64: fn(double{}); break;
    case DType::kFloat16: case DType::kBFloat16: break;
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: case DType::kFloat8E8M0: fn(uint8_t{}); break;
    default: withIntegerType(t, fn);
  }
}

// Integer read of an index tensor.
inline int64_t loadIndex(const TensorView& t, int64_t i) {
  int64_t v = 0;
  if (isInteger(t.dtype) || t.dtype == DType::kBool) {
    withIntegerType(t.dtype, [&](auto tag) { v = static_cast<int64_t>(t.as<decltype(tag)>()[i]); });
    return v;
  }
  return castValue<int64_t>(loadF(t.data, t.dtype, i));
}

// ---- broadcast iteration -------------------------------------------------------
// Strides (in elements) of `in` read as `out_rank` dims, 0 on broadcast dims.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);

// Visits every output element in row-major order, handing fn(out_index, offsets)
// with each input's element offset.
template <size_t N, class Fn>
void forEachBroadcast(const Shape& out, const std::array<const Shape*, N>& ins, Fn&& fn) {
  const size_t r = out.size();
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = broadcastStrides(*ins[k], out);
  const int64_t total = numElements(out);
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> off{};
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off);
    for (size_t d = r; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Normalised, sorted, de-duplicated reduce axes; empty `axes` means all.
StatusOr<std::vector<int64_t>> reduceAxes(const Ints& axes, int64_t rank);
Shape reducedShape(const Shape& in, const std::vector<int64_t>& axes, bool keep_dims);

// Slice (begin + size) and StridedSlice (ONNX: clamped [begin, end) by step), per axis:
// out[i] reads in[start + i * step].
struct SliceWindow { int64_t start, step, count; };
StatusOr<std::vector<SliceWindow>> sliceWindows(const ir::Node& n, const Shape& x);

// An inference BatchNorm as the per-channel affine map x * scale + shift: scale = gamma /
// sqrt(var + eps) and shift = beta - mean * scale, each in double, rounded once (the
// ONNX converter's form of a BatchNormalization with constant parameters, and
// ArithmeticSimplify's of a BatchNorm whose parameters became constants later).
void batchNormAffine(const std::vector<float>& gamma, const std::vector<float>& beta, const std::vector<float>& mean,
                     const std::vector<float>& var, float eps, std::vector<float>* scale, std::vector<float>* shift);

// Splits `shape` around `axis` into outer x extent x inner element counts.
struct AxisSplit { int64_t outer, extent, inner; };
AxisSplit splitAtAxis(const Shape& shape, int64_t axis);

// A norm over axes [axis, rank) of `shape` (NormAttrs of `n`) as rows of `cols`
// elements; an error names the op when the axis does not fit the rank.
struct NormRows { int64_t rows, cols, axis; };
StatusOr<NormRows> normRowsOf(const ir::Node& n, const Shape& shape);

}  // namespace gkrt::ops

namespace gkrt::ops {

// Multi-index of flat row-major index `i` in `shape`.
inline void unravel(int64_t i, const Shape& shape, std::vector<int64_t>& idx) {
  idx.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t s = shape[d] ? shape[d] : 1;
    idx[d] = i % s;
    i /= s;
  }
}

// Copies element `src_i` of `src` into element `dst_i` of `dst` (any dtype).
inline void copyElement(const MutableTensorView& dst, int64_t dst_i, const TensorView& src, int64_t src_i) {
  const size_t es = dtypeSize(src.dtype);
  std::memcpy(static_cast<uint8_t*>(dst.data) + dst_i * es, static_cast<const uint8_t*>(src.data) + src_i * es, es);
}

// Output element i takes input element srcIndex(out multi-index); any dtype.
template <class SrcIndexFn> void gatherCopy(const TensorView& in, const MutableTensorView& out, SrcIndexFn&& src_index) {
  std::vector<int64_t> idx;
  const std::vector<int64_t> in_strides = contiguousStrides(in.shape);
  for (int64_t i = 0, n = out.size(); i < n; ++i) {
    unravel(i, out.shape, idx);
    copyElement(out, i, in, src_index(idx, in_strides));
  }
}

}  // namespace gkrt::ops
