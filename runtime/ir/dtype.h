// Element types of gkrt tensors, with their sizes, names and float16 conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/ir/status.h"

namespace gkrt {

// Numbering matches schema/gkm.fbs `DType`.
enum class DType : uint8_t { kFloat32 = 0, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool };
constexpr int kNumDTypes = 7;

size_t dtypeSize(DType t);
const char* dtypeName(DType t);  // "float32", "int64", ...
StatusOr<DType> parseDType(std::string_view name);
bool isFloat(DType t);
bool isInteger(DType t);  // signed/unsigned ints, not bool

// IEEE half <-> float, round to nearest even.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

}  // namespace gkrt
