// The narrow ONNX element types: float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0),
// float4e2m1 and the 4-/2-bit integers. Conversions follow the ONNX Cast definition
// and its reference implementation (ml_dtypes for the minifloats, to_float8e8m0).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/ir/dtype.h"

namespace gkrt {
namespace {

// A minifloat layout: sign bit on top, then exponent and mantissa fields.
struct MiniFloat {
  int exp_bits, mant_bits, bias;
  bool has_inf;  // e5m2: exponent all ones is inf (mantissa 0) or NaN
  bool fnuz;     // the sign bit with zero exponent and mantissa (0x80) is the only NaN; no -0
  bool has_nan;  // float4e2m1 has none
  float max;
};

const MiniFloat& format(DType t) {
  static const MiniFloat e4m3fn{4, 3, 7, false, false, true, 448.0f};
  static const MiniFloat e4m3fnuz{4, 3, 8, false, true, true, 240.0f};
  static const MiniFloat e5m2{5, 2, 15, true, false, true, 57344.0f};
  static const MiniFloat e5m2fnuz{5, 2, 16, false, true, true, 57344.0f};
  static const MiniFloat e2m1{2, 1, 1, false, false, false, 6.0f};
  switch (t) {
    case DType::kFloat8E4M3FNUZ: return e4m3fnuz;
    case DType::kFloat8E5M2: return e5m2;
    case DType::kFloat8E5M2FNUZ: return e5m2fnuz;
    case DType::kFloat4E2M1: return e2m1;
    default: return e4m3fn;
  }
}

uint8_t signBit(const MiniFloat& f) { return static_cast<uint8_t>(1u << (f.exp_bits + f.mant_bits)); }

uint8_t nanBits(const MiniFloat& f, bool negative) {
  if (f.fnuz) return 0x80;
  const uint8_t s = negative ? signBit(f) : 0;
  if (f.has_inf) return static_cast<uint8_t>(s | 0x7e);  // e5m2 quiet NaN, as ml_dtypes writes it
  return static_cast<uint8_t>(s | 0x7f);                  // e4m3fn: S.1111.111
}

uint8_t encodeMax(const MiniFloat& f, bool negative) {
  const int mant_all = (1 << f.mant_bits) - 1;
  int field, mant;
  if (f.has_inf) { field = (1 << f.exp_bits) - 2; mant = mant_all; }                         // e5m2: 0x7b
  else if (f.fnuz || !f.has_nan) { field = (1 << f.exp_bits) - 1; mant = mant_all; }         // 0x7f, float4 0x7
  else { field = (1 << f.exp_bits) - 1; mant = mant_all - 1; }                               // e4m3fn: 0x7e
  return static_cast<uint8_t>((negative ? signBit(f) : 0) | (field << f.mant_bits) | mant);
}

// Round half to even of a non-negative double.
double roundHalfEven(double v) {
  const double fl = std::floor(v);
  const double diff = v - fl;
  if (diff > 0.5 || (diff == 0.5 && std::fmod(fl, 2.0) != 0.0)) return fl + 1.0;
  return fl;
}

uint8_t miniFloatFromFloat(float x, const MiniFloat& f, bool saturate) {
  const bool negative = std::signbit(x);
  if (std::isnan(x)) return f.has_nan ? nanBits(f, negative) : signBit(f);  // float4e2m1: NaN -> -0, as ml_dtypes
  double a = std::fabs(static_cast<double>(x));
  if (saturate || !f.has_nan) {
    if (a > f.max) return encodeMax(f, negative);
  } else if (std::isinf(x)) {
    return f.has_inf ? static_cast<uint8_t>(signBit(f) * negative | 0x7c) : nanBits(f, negative);
  }
  const int emin = 1 - f.bias;
  int e2 = 0;
  std::frexp(a, &e2);
  int exp = std::max(e2 - 1, emin);
  double r = roundHalfEven(std::ldexp(a, f.mant_bits - exp));  // integer significand
  if (r == 0.0) return f.fnuz || !negative ? 0 : signBit(f);
  if (std::ldexp(r, exp - f.mant_bits) > f.max) {  // rounded past the largest finite value
    if (!f.has_nan) return encodeMax(f, negative);
    return f.has_inf ? static_cast<uint8_t>(signBit(f) * negative | 0x7c) : nanBits(f, negative);
  }
  const double implicit = std::ldexp(1.0, f.mant_bits);
  if (r >= 2 * implicit) { r /= 2; ++exp; }
  int field = 0, mant = static_cast<int>(r);
  if (r >= implicit) {
    field = exp + f.bias;
    mant -= static_cast<int>(implicit);
  }
  return static_cast<uint8_t>((negative ? signBit(f) : 0) | (field << f.mant_bits) | mant);
}

float miniFloatToFloat(uint8_t bits, const MiniFloat& f) {
  const int width = 1 + f.exp_bits + f.mant_bits;
  bits &= static_cast<uint8_t>((1u << width) - 1);
  const bool negative = (bits & signBit(f)) != 0;
  const int field = (bits >> f.mant_bits) & ((1 << f.exp_bits) - 1);
  const int mant = bits & ((1 << f.mant_bits) - 1);
  if (f.fnuz && bits == 0x80) return NAN;
  if (f.has_inf && field == (1 << f.exp_bits) - 1) return mant ? NAN : (negative ? -INFINITY : INFINITY);
  if (!f.fnuz && f.has_nan && !f.has_inf && field == (1 << f.exp_bits) - 1 && mant == (1 << f.mant_bits) - 1) return NAN;
  const float v = field == 0 ? std::ldexp(static_cast<float>(mant), 1 - f.bias - f.mant_bits)
                             : std::ldexp(1.0f + std::ldexp(static_cast<float>(mant), -f.mant_bits), field - f.bias);
  return negative ? -v : v;
}

// ONNX's to_float8e8m0: the float32 exponent, rounded by the mantissa bits as asked.
uint8_t e8m0FromFloat(float x, bool saturate, E8M0Rounding rounding) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu) return 0xff;  // NaN and inf
  bool up = false;
  if (rounding == E8M0Rounding::kUp) {
    up = (bits & 0x7fffffu) != 0;
  } else if (rounding == E8M0Rounding::kNearest) {
    const bool g = bits & 0x400000u, r = bits & 0x200000u, s = (bits & 0x1fffffu) != 0, lsb = exponent > 0;
    up = g && (r || s || lsb);
  }
  if (up && saturate && exponent == 0xfeu) up = false;
  exponent += up ? 1 : 0;
  return static_cast<uint8_t>(exponent);  // 0xff (NaN) when rounding overflowed without saturation
}

}  // namespace

uint8_t floatToNarrow(float f, DType t, bool saturate, E8M0Rounding e8m0_rounding) {
  switch (t) {
    case DType::kFloat8E8M0: return e8m0FromFloat(f, saturate, e8m0_rounding);
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: return miniFloatFromFloat(f, format(t), saturate);
    default: {  // narrow integers: truncate toward zero, then wrap (ONNX Cast, as ml_dtypes)
      if (std::isnan(f)) return 0;
      const double d = std::trunc(static_cast<double>(f));
      const int64_t v = d <= -9.2e18 ? INT64_MIN : d >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(d);
      return static_cast<uint8_t>(wrapToNarrowInt(v, t));
    }
  }
}

float narrowToFloat(uint8_t bits, DType t) {
  switch (t) {
    case DType::kFloat8E8M0: return bits == 0xff ? NAN : std::ldexp(1.0f, static_cast<int>(bits) - 127);
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: return miniFloatToFloat(bits, format(t));
    case DType::kInt4: case DType::kInt2: return static_cast<float>(static_cast<int8_t>(bits));
    default: return static_cast<float>(bits);
  }
}

float narrowFloatMax(DType t) { return t == DType::kFloat8E8M0 ? std::ldexp(1.0f, 127) : format(t).max; }

int narrowIntMin(DType t) { return t == DType::kInt4 ? -8 : t == DType::kInt2 ? -2 : 0; }
int narrowIntMax(DType t) { return t == DType::kInt4 ? 7 : t == DType::kUInt4 ? 15 : t == DType::kInt2 ? 1 : 3; }

int8_t wrapToNarrowInt(int64_t v, DType t) {
  const int bits = bitWidth(t);
  const uint64_t low = static_cast<uint64_t>(v) & ((1u << bits) - 1);
  if ((t == DType::kInt4 || t == DType::kInt2) && (low >> (bits - 1))) {
    return static_cast<int8_t>(static_cast<int64_t>(low) - (int64_t{1} << bits));
  }
  return static_cast<int8_t>(low);
}

size_t packedBytes(DType t, int64_t count) {
  const int per_byte = 8 / std::min(bitWidth(t), 8);
  return static_cast<size_t>((count + per_byte - 1) / per_byte) * std::max<size_t>(dtypeSize(t), 1);
}

void unpackSubByte(DType t, const uint8_t* packed, int64_t count, uint8_t* out) {
  const int bits = bitWidth(t);
  if (bits >= 8) {
    std::memcpy(out, packed, static_cast<size_t>(count) * dtypeSize(t));
    return;
  }
  const int per_byte = 8 / bits;
  const bool is_signed = t == DType::kInt4 || t == DType::kInt2;
  for (int64_t i = 0; i < count; ++i) {
    const int v = (packed[i / per_byte] >> ((i % per_byte) * bits)) & ((1 << bits) - 1);
    out[i] = static_cast<uint8_t>(is_signed && (v >> (bits - 1)) ? v - (1 << bits) : v);
  }
}

void packSubByte(DType t, const uint8_t* in, int64_t count, uint8_t* packed) {
  const int bits = bitWidth(t);
  if (bits >= 8) {
    std::memcpy(packed, in, static_cast<size_t>(count) * dtypeSize(t));
    return;
  }
  const int per_byte = 8 / bits;
  std::memset(packed, 0, packedBytes(t, count));
  for (int64_t i = 0; i < count; ++i) {
    packed[i / per_byte] |= static_cast<uint8_t>((in[i] & ((1 << bits) - 1)) << ((i % per_byte) * bits));
  }
}

}  // namespace gkrt
