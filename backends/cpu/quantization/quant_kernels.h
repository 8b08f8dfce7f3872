// The cpu backend's own loops for the per-tensor quantization ops around int8 kernels:
// QuantizeLinear (float32 -> int8/uint8), DequantizeLinear (int8/uint8 -> float32) and
// QLinearAdd / QLinearMul with operands broadcast to the output any way, and
// DynamicQuantizeLinear (range and quantization, each one pass over the
// threads), with results equal to the reference kernels' (the same float32 operations,
// in the same order: x / scale, not x * (1 / scale)), vectorised and split over the
// threads. Per-axis, blocked and other types run the reference kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// sat(rint(v) + zp) into T (int8 or uint8), NaN as 0: the reference kernels' rule.
// v is clamped to +-2^22 first (the result saturates long before) and rounded half to
// even by adding and subtracting 1.5 * 2^23 (exact in float32 in the default rounding
// mode), so no libm call. A file that uses it is compiled with -ffp-contract=off:
// v * scale + 1.5 * 2^23 as one FMA would round once where the reference rounds twice.
constexpr float kQuantClamp = 4194304.0f;
// Elements per thread below which the quantization loops (here and in onednn_int8.cc)
// stay on the calling thread.
constexpr int64_t kQuantMinPerThread = 8192;
template <class T> inline T saturateQuant(float v, int zp) {
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  constexpr float kRound = 12582912.0f;
  v = v == v ? v : 0.0f;
  v = std::min(std::max(v, -kQuantClamp), kQuantClamp);
  const float r = ((v + kRound) - kRound) + static_cast<float>(zp);
  return static_cast<T>(static_cast<int>(std::min(std::max(r, lo), hi)));
}

// y[i] = saturateQuant<T>(value(i), zp) for i < n, where vec(i) gives value(i..i+3) as
// an __m128 (SSE2: round half to even by cvtps2dq in the default rounding mode, the
// saturation by the packs; GCC's own vectorisation of saturateQuant ran at ~1 ns an
// element) and one(i) gives value(i).
template <class T, class Vec, class One> inline void saturateRow(const Vec& vec, const One& one, int zp, T* y, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  const __m128 big = _mm_set1_ps(kQuantClamp), small = _mm_set1_ps(-kQuantClamp);
  const __m128i z = _mm_set1_epi32(zp);
  const auto round4 = [&](__m128 v) {
    v = _mm_and_ps(v, _mm_cmpord_ps(v, v));  // NaN -> 0
    return _mm_add_epi32(_mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(v, small), big)), z);
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm_packs_epi32(round4(vec(i)), round4(vec(i + 4)));
    const __m128i hi = _mm_packs_epi32(round4(vec(i + 8)), round4(vec(i + 12)));
    const __m128i r = std::is_signed_v<T> ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), r);
  }
#endif
  for (; i < n; ++i) y[i] = saturateQuant<T>(one(i), zp);
}

// The QLinear ops' requantization as the reference computes it (runtime/ir/ops/
// quant_linear.cc): y[i] = sat(rint(double(a[i]) * m) + zp), the product in double, m =
// s[i] or, where s is null, s1 (a float32 multiplier); a[i] an integer sum held exactly
// in float32. NaN as 0.
// One build per tier (requantize_row.cc: 16 values a step in 8-double halves on AVX-512,
// 8 on AVX2, 4 on SSE2 and a scalar loop elsewhere), picked once by cpuTier(); every
// build gives the same bytes.
void requantizeRow(const float* a, const float* s, float s1, int zp, int8_t* y, int64_t n);
void requantizeRow(const float* a, const float* s, float s1, int zp, uint8_t* y, int64_t n);

bool canRunQuantElementwise(const ir::Graph& g, const ir::Node& node);
// Whether `node` is a per-tensor QuantizeLinear/DequantizeLinear on a static 4-D tensor:
// its loop then takes the int8 side NCHW or NHWC and the float side NCHW or nChw{B}c
// (the layout plans of blocked_layout.h and int8_layout.h).
bool quantTakesLayouts(const ir::Graph& g, const ir::Node& node);
// `int8_nhwc`, `float_block`: those layouts (false / 0: plain NCHW).
StatusOr<std::unique_ptr<Kernel>> compileQuantElementwise(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                          bool int8_nhwc = false, int float_block = 0);

// Gather(table, x) of a constant 256-entry one-byte table by int8/uint8 x (negative int8
// values from the end): the lookup quant_dq_op_q_fusion makes of Q(f(DQ(x))). One byte
// load a value, over the threads.
bool canRunByteLookup(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileByteLookup(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

// MaxPool of uint8/int8 activations (QOperator and QDQ networks pool their quantized
// values: max commutes with the monotonic quantization), 4-D, undilated, in their own
// type: NCHW a plane at a time, or NHWC (int8_layout.h keeps x and y in one layout) as
// the elementwise max of the window's channel rows. Padding never wins, as the reference.
bool canRunBytePool(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileBytePool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, bool nhwc);

}  // namespace gkrt::cpu
