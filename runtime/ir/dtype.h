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
  kFloat8E4M3FN, kFloat8E4M3FNUZ, kFloat8E5M2, kFloat8E5M2FNUZ, kUInt4, kInt4,
  kFloat4E2M1, kFloat8E8M0, kUInt2, kInt2,
};
constexpr int kNumDTypes = 23;

size_t dtypeSize(DType t);
const char* dtypeName(DType t);  // "float32", "int64", ...
StatusOr<DType> parseDType(std::string_view name);
bool isFloat(DType t);     // float16, bfloat16, float32, float64 (the types gkrt computes in)
bool isInteger(DType t);   // int8..int64, uint8..uint64 (not bool, not the 4-/2-bit ints)
// The ONNX storage types that ops only move, cast and (de)quantize, never compute in:
// float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4e2m1, int4, uint4, int2, uint2.
// In memory each element takes ONE byte: the float types hold their bit pattern in the
// low bits (float4e2m1: bits 0-3), int4/int2 a sign-extended int8, uint4/uint2 a uint8.
// ONNX's packed form (two 4-bit or four 2-bit elements per byte) exists only in ONNX
// files; the converter unpacks it (packSubByte/unpackSubByte below).
bool isNarrowFloat(DType t);
bool isNarrowInteger(DType t);  // int4, uint4, int2, uint2
bool isStorageOnly(DType t);    // isNarrowFloat || isNarrowInteger
int bitWidth(DType t);          // bits of one element: 4 for int4, 8 for int8, 32 for float32, ...
bool is16BitFloat(DType t);  // float16, bfloat16: stored as uint16_t bits
std::string dtypeList();   // "float32, float16, ..." for error messages

// IEEE half <-> float, round to nearest even.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
// bfloat16 (the top half of a float32) <-> float, round to nearest even.
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t h);

// ---- the narrow float types (one byte per element) --------------------------------
// float -> bits with ONNX Cast's rules: round to nearest even; with `saturate` a finite
// value beyond the type's range (and +-inf for the types without inf) becomes +-max,
// without it the overflow encoding (inf for e5m2, NaN for the others); NaN -> NaN; the
// fnuz types have no -0 (-0 and tiny negatives round to +0). float4e2m1 has no inf/NaN:
// it always saturates, and NaN becomes -0 (as ml_dtypes, ONNX's reference, does).
// float8e8m0 (2^(e-127), 0xff = NaN, no sign, no zero) rounds as `e8m0_rounding` says.
enum class E8M0Rounding : uint8_t { kUp = 0, kDown, kNearest };
uint8_t floatToNarrow(float f, DType t, bool saturate = true, E8M0Rounding e8m0_rounding = E8M0Rounding::kUp);
float narrowToFloat(uint8_t bits, DType t);
// The largest finite value of a narrow float type (448 for e4m3fn, 6 for float4e2m1, ...).
float narrowFloatMax(DType t);
// Valid range of a narrow integer type: int4 -8..7, uint4 0..15, int2 -2..1, uint2 0..3.
int narrowIntMin(DType t);
int narrowIntMax(DType t);
// Wraps an integer to a narrow integer type's bits (two's complement), as C++ narrows.
int8_t wrapToNarrowInt(int64_t v, DType t);

// ONNX packing of 4-bit (two per byte, first element in the low nibble) and 2-bit
// (four per byte, first in bits 0-1) types; other types are one element per byte.
// `count` elements; packed size is packedBytes(t, count); unpacking sign-extends int4/int2.
size_t packedBytes(DType t, int64_t count);
void unpackSubByte(DType t, const uint8_t* packed, int64_t count, uint8_t* out);
void packSubByte(DType t, const uint8_t* in, int64_t count, uint8_t* packed);

}  // namespace gkrt
