// Element types of gkrt tensors, with their sizes, names and float16 conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/ir/status.h"

namespace gkrt {

// Numbering matches schema/gkm.fbs `DType`.
// Values are only appended, so older model files keep their meaning.
enum class DType : uint8_t {
  kFloat32 = 0, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool,
  kFloat64, kInt16, kUInt16, kUInt32, kUInt64, kBFloat16,
};
constexpr int kNumDTypes = 13;

size_t dtypeSize(DType t);
const char* dtypeName(DType t);  // "float32", "int64", ...
StatusOr<DType> parseDType(std::string_view name);
bool isFloat(DType t);     // float16, bfloat16, float32, float64
bool isInteger(DType t);   // signed/unsigned ints, not bool
bool is16BitFloat(DType t);  // float16, bfloat16: stored as uint16_t bits
std::string dtypeList();   // "float32, float16, ..." for error messages

// IEEE half <-> float, round to nearest even.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
// bfloat16 (the top half of a float32) <-> float, round to nearest even.
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t h);

}  // namespace gkrt
