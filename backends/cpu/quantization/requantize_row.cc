// requantizeRow (quant_kernels.h), one build per x86-64 tier: the int32 sums held in
// float32 times the multiplier in double (as the reference computes it), rounded half to
// even by the double-to-int32 conversion in the default rounding mode, plus the zero
// point, saturated into 8 bits. On AVX-512 16 values a step (two halves of 8 doubles,
// vpmovsdb/vpmovusdb saturating straight to bytes); on AVX2 8; SSE2 4 (the baseline
// build, and the only one elsewhere). With the SSE2 build SqueezeNet's 16 -> 64 channel
// 1 x 1 int8 convolution at 55 x 55 took 0.22 ms with an odd output zero point against
// 0.04 with an even one (oneDNN writes the bytes itself); 0.12-0.13 with the AVX-512
// build (1 thread, a full-width AVX-512 Xeon). Every build gives the same bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/quantization/quant_kernels.h"

#ifdef GKRT_X86_TIERS
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics hand an undefined vector to the builtins as the pass-through
// of their unmasked forms, which -W(maybe-)uninitialized reports in every caller.
#ifndef __clang__  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace gkrt::cpu {
namespace {

constexpr double kLimit = 1.0e9;  // |v| past this saturates anyway

template <class T> void requantizeTail(const float* a, const float* s, float s1, int zp, T* y, int64_t i, int64_t n) {
  constexpr int lo = std::is_signed_v<T> ? -128 : 0, hi = std::is_signed_v<T> ? 127 : 255;
  for (; i < n; ++i) {
    const double v = static_cast<double>(a[i]) * static_cast<double>(s ? s[i] : s1);
    const double r = v == v ? std::nearbyint(std::min(std::max(v, -kLimit), kLimit)) : 0.0;
    y[i] = static_cast<T>(std::min(std::max(static_cast<int>(r) + zp, lo), hi));
  }
}

template <class T> void requantizePortable(const float* a, const float* s, float s1, int zp, T* y, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  const __m128d big = _mm_set1_pd(kLimit), small = _mm_set1_pd(-kLimit), m1 = _mm_set1_pd(s1);
  const __m128i z = _mm_set1_epi32(zp);
  const auto round4 = [&](int64_t k) {  // 4 products in double, rounded half to even by cvtpd2dq
    const __m128 v = _mm_loadu_ps(a + k);
    __m128d lo2 = _mm_cvtps_pd(v), hi2 = _mm_cvtps_pd(_mm_movehl_ps(v, v));
    if (s) {
      const __m128 m = _mm_loadu_ps(s + k);
      lo2 = _mm_mul_pd(lo2, _mm_cvtps_pd(m));
      hi2 = _mm_mul_pd(hi2, _mm_cvtps_pd(_mm_movehl_ps(m, m)));
    } else {
      lo2 = _mm_mul_pd(lo2, m1);
      hi2 = _mm_mul_pd(hi2, m1);
    }
    lo2 = _mm_and_pd(lo2, _mm_cmpord_pd(lo2, lo2));
    hi2 = _mm_and_pd(hi2, _mm_cmpord_pd(hi2, hi2));
    const __m128i r = _mm_unpacklo_epi64(_mm_cvtpd_epi32(_mm_min_pd(_mm_max_pd(lo2, small), big)),
                                         _mm_cvtpd_epi32(_mm_min_pd(_mm_max_pd(hi2, small), big)));
    return _mm_add_epi32(r, z);
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i l = _mm_packs_epi32(round4(i), round4(i + 4)), h = _mm_packs_epi32(round4(i + 8), round4(i + 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), std::is_signed_v<T> ? _mm_packs_epi16(l, h) : _mm_packus_epi16(l, h));
  }
#endif
  requantizeTail(a, s, s1, zp, y, i, n);
}

#ifdef GKRT_X86_TIERS
// 8 products, NaN as 0, clamped, rounded half to even.
GKRT_TARGET_AVX512 inline __m256i rounded8(__m512d v) {
  v = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(v, v, _CMP_ORD_Q), v);
  return _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(v, _mm512_set1_pd(-kLimit)), _mm512_set1_pd(kLimit)));
}
template <class T> GKRT_TARGET_AVX512 void requantizeAvx512(const float* a, const float* s, float s1, int zp, T* y, int64_t n) {
  const __m512d m1 = _mm512_set1_pd(s1);
  const __m512i z = _mm512_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(a + i);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v)), hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    if (s) {
      const __m512 m = _mm512_loadu_ps(s + i);
      lo = _mm512_mul_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(m)));
      hi = _mm512_mul_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(m, 1)));
    } else {
      lo = _mm512_mul_pd(lo, m1);
      hi = _mm512_mul_pd(hi, m1);
    }
    const __m512i r = _mm512_add_epi32(_mm512_inserti64x4(_mm512_castsi256_si512(rounded8(lo)), rounded8(hi), 1), z);
    const __m128i b = std::is_signed_v<T> ? _mm512_cvtsepi32_epi8(r) : _mm512_cvtusepi32_epi8(_mm512_max_epi32(r, _mm512_setzero_si512()));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), b);
  }
  requantizeTail(a, s, s1, zp, y, i, n);
}

// 4 products, NaN as 0, clamped, rounded half to even, plus the zero point.
GKRT_TARGET_AVX2 inline __m128i rounded4(__m256d v, __m128i z) {
  v = _mm256_and_pd(v, _mm256_cmp_pd(v, v, _CMP_ORD_Q));
  return _mm_add_epi32(_mm256_cvtpd_epi32(_mm256_min_pd(_mm256_max_pd(v, _mm256_set1_pd(-kLimit)), _mm256_set1_pd(kLimit))), z);
}
template <class T> GKRT_TARGET_AVX2 void requantizeAvx2(const float* a, const float* s, float s1, int zp, T* y, int64_t n) {
  const __m256d m1 = _mm256_set1_pd(s1);
  const __m128i z = _mm_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(a + i);
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    if (s) {
      const __m256 m = _mm256_loadu_ps(s + i);
      lo = _mm256_mul_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(m)));
      hi = _mm256_mul_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(m, 1)));
    } else {
      lo = _mm256_mul_pd(lo, m1);
      hi = _mm256_mul_pd(hi, m1);
    }
    const __m128i w = _mm_packs_epi32(rounded4(lo, z), rounded4(hi, z));  // 8 int16, saturated
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), std::is_signed_v<T> ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
  }
  requantizeTail(a, s, s1, zp, y, i, n);
}
#endif

template <class T> using RequantizeFn = void (*)(const float*, const float*, float, int, T*, int64_t);
template <class T> RequantizeFn<T> requantizeForTier() {
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx512)) return requantizeAvx512<T>;
  if (cpuTier().has(CpuIsa::kAvx2)) return requantizeAvx2<T>;
#endif
  return requantizePortable<T>;
}

}  // namespace

void requantizeRow(const float* a, const float* s, float s1, int zp, int8_t* y, int64_t n) {
  static const RequantizeFn<int8_t> fn = requantizeForTier<int8_t>();
  fn(a, s, s1, zp, y, n);
}
void requantizeRow(const float* a, const float* s, float s1, int zp, uint8_t* y, int64_t n) {
  static const RequantizeFn<uint8_t> fn = requantizeForTier<uint8_t>();
  fn(a, s, s1, zp, y, n);
}

}  // namespace gkrt::cpu
