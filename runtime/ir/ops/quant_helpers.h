// Shared by the quantization op families (quantization.cc, quant_linear.cc).
#pragma once

#include <limits>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

// Integer range of an integer quantized type (int8/16, uint8/16, the 4-/2-bit ints, int32).
inline void quantIntRange(DType t, int64_t& lo, int64_t& hi) {
  if (isNarrowInteger(t)) {
    lo = narrowIntMin(t);
    hi = narrowIntMax(t);
    return;
  }
  withIntegerType(t, [&](auto tag) {
    using T = decltype(tag);
    lo = static_cast<int64_t>(std::numeric_limits<T>::lowest());
    hi = static_cast<int64_t>(std::numeric_limits<T>::max());
  });
}

// `v` rounded to a float dtype's precision (ONNX computes scale arithmetic in the
// scales' type: float16 scales round after every step).
inline double roundToFloatType(DType t, double v) {
  if (t == DType::kFloat64) return v;
  float f = static_cast<float>(v);
  if (t == DType::kFloat16) f = halfToFloat(floatToHalf(f));
  if (t == DType::kBFloat16) f = bfloat16ToFloat(floatToBFloat16(f));
  return f;
}

}  // namespace gkrt::ops
