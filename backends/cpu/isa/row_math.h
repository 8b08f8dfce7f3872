// Inline row helpers of the cpu kernels' softmax loops (norm_kernels.cc, the
// FlashAttention kernel): written so that the caller's loop, compiled in a cloned
// AVX-512/AVX2 function, vectorises as one.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace gkrt::cpu {

// The sum of term(i) over [0, n) in 16 independent lanes, so the compiler vectorises
// without reassociating (one float accumulator is a chain it may not reorder: such loops
// stayed scalar, ~1.7 ns an element). `term` may also store (a fused add, say).
template <class Term>
inline __attribute__((always_inline)) float laneSumOf(int64_t n, Term term) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += term(i + j);
  float s = 0.0f;
  for (; i < n; ++i) s += term(i);
  for (float a : acc) s += a;
  return s;
}

inline float laneSum(const float* x, int64_t n) {
  return laneSumOf(n, [x](int64_t i) { return x[i]; });
}

// Max with two 8-lane vector accumulators (GCC vector extensions: one ymm each on
// AVX2/AVX-512 clones, two SSE registers on baseline x86-64, NEON q registers on
// boards); the 16 scalar lanes it had before did not vectorise (0.27 ns an element).
typedef float Lanes8 __attribute__((vector_size(32)));
inline float laneMax(const float* x, int64_t n) {
  const float inf = -INFINITY;
  Lanes8 a0 = {inf, inf, inf, inf, inf, inf, inf, inf}, a1 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Lanes8 v0, v1;
    std::memcpy(&v0, x + i, sizeof v0);
    std::memcpy(&v1, x + i + 8, sizeof v1);
    a0 = v0 > a0 ? v0 : a0;
    a1 = v1 > a1 ? v1 : a1;
  }
  float m = -INFINITY;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int j = 0; j < 8; ++j) {
    m = a0[j] > m ? a0[j] : m;
    m = a1[j] > m ? a1[j] : m;
  }
  return m;
}

// exp(v) for v <= 0 (softmax's x - max), inline so the row's loop vectorises as one:
// Cody-Waite reduction by ln 2, degree-6 polynomial, 2^k through the exponent bits;
// max relative error 2.2e-7 (SLEEF's 1-ulp expf through vecMath took 0.3 ns an element
// on 128-wide rows); v below -87 (and -inf, a masked score) gives 0, NaN stays NaN.
inline float expNonPositive(float v) {
  const float c = v < -87.0f ? -87.0f : v;
  const float k = (c * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest, |k| < 2^22
  const float r = c - k * 0.693145751953125f - k * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) * (1 << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return v < -87.0f ? 0.0f : p * scale;
}

// Sigmoid through expNonPositive of -|x|, for loops that vectorise whole: relative
// error ~3e-7.
inline float sigmoidOf(float x) {
  const float e = expNonPositive(-std::fabs(x));
  const float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

// tanh within about 1 ulp (relative) everywhere, for loops that vectorise whole (vecMath's
// tanh, the recurrent kernels' gates): below |x| = 0.9 the odd polynomial x + x^3 q(x^2)
// (q of degree 6, fitted to tanh's relative error on [0, 0.9]: 0.8 ulp in float32),
// beyond it 1 - 2e / (1 + e) with e = expNonPositive(-2|x|) (0.8 ulp); (1 - e) / (1 + e)
// alone lost the relative precision near 0. SLEEF's 1-ulp tanhf took 2.4 ns an element
// on AVX-512, 4.5x its expf. NaN stays NaN; +-inf gives +-1.
inline float tanhOf(float x) {
  const float a = std::fabs(x), u = x * x;
  float q = -4.2021501576527953e-04f;
  q = q * u + 2.4785601999610662e-03f;
  q = q * u - 8.1422803923487663e-03f;
  q = q * u + 2.1591059863567352e-02f;
  q = q * u - 5.3906600922346115e-02f;
  q = q * u + 1.3332621753215790e-01f;
  q = q * u - 3.3333298563957214e-01f;
  const float small = x + x * u * q;
  const float e = expNonPositive(-2.0f * a);
  const float large = std::copysign(1.0f - 2.0f * e / (1.0f + e), x);
  return a < 0.9f ? small : large;  // NaN: the comparison fails, `large` is NaN
}

}  // namespace gkrt::cpu
