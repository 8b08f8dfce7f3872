#include "backends/cpu/quantization/int8_vnni_gemm.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_tier.h"

#ifdef GKRT_X86_TIERS
// GCC 12's AVX-512 intrinsics hand an undefined vector to the builtins as the pass-through
// of their unmasked forms, which -W(maybe-)uninitialized reports in every caller.
#ifndef __clang__  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define GKRT_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")))
#endif

namespace gkrt::cpu {

bool vnniGemmAvailable() {
#ifdef GKRT_X86_TIERS
  return cpuTier().has(CpuIsa::kAvx512Vnni);
#else
  return false;
#endif
}

void packVnniB(const int8_t* w8, int64_t K, int64_t N, VnniB* out) {
  out->K = K;
  out->N = N;
  out->groups = (K + 3) / 4;
  out->panels = (N + 15) / 16;
  out->data.assign(out->panels * out->groups * 64, 0);
  out->colsum.assign(N, 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const int8_t v = w8[k * N + j];
      out->data[((j / 16) * out->groups + k / 4) * 64 + (j % 16) * 4 + k % 4] = v;
      out->colsum[j] += v;
    }
}

#ifdef GKRT_X86_TIERS
namespace {

// R rows x P panels (R * P accumulators), starting at panel p.
template <int R, int P>
GKRT_TARGET_AVX512_VNNI __attribute__((always_inline)) inline void tile(const uint8_t* a, int64_t lda, const VnniB& b, int32_t* c, int64_t ldc, int64_t p) {
  __m512i acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) acc[r][q] = _mm512_setzero_si512();
  const int8_t* w = b.data.data() + p * b.groups * 64;
  const int64_t stride = b.groups * 64;
  for (int64_t g = 0; g < b.groups; ++g) {
    __m512i wv[P];
    for (int q = 0; q < P; ++q) wv[q] = _mm512_loadu_si512(w + q * stride + g * 64);
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * lda + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(four);
      for (int q = 0; q < P; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], av, wv[q]);
    }
  }
  for (int q = 0; q < P; ++q) {
    const int64_t j0 = (p + q) * 16, cols = std::min<int64_t>(16, b.N - j0);
    const __mmask16 m = static_cast<__mmask16>((1u << cols) - 1);
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_epi32(c + r * ldc + j0, m, acc[r][q]);
  }
}

template <int R>
GKRT_TARGET_AVX512_VNNI __attribute__((always_inline)) inline void rowsBody(const uint8_t* a, int64_t lda, const VnniB& b, int32_t* c, int64_t ldc, int64_t p0,
                                                  int64_t p1) {
  // 8 panels for one or two rows (16 independent vpdpbusd chains at most), 4 for more
  constexpr int P = R <= 2 ? 8 : 4;
  int64_t p = p0;
  for (; p + P <= p1; p += P) tile<R, P>(a, lda, b, c, ldc, p);
  for (; p < p1; ++p) tile<R, 1>(a, lda, b, c, ldc, p);
}

GKRT_TARGET_AVX512_VNNI void vnniGemmAvx512(int64_t M, const uint8_t* a, int64_t lda, const VnniB& b, int32_t* c, int64_t ldc,
                                            int64_t p0, int64_t p1) {
  for (int64_t m = 0; m < M; m += 4) {
    const uint8_t* am = a + m * lda;
    int32_t* cm = c + m * ldc;
    switch (std::min<int64_t>(4, M - m)) {
      case 1: rowsBody<1>(am, lda, b, cm, ldc, p0, p1); break;
      case 2: rowsBody<2>(am, lda, b, cm, ldc, p0, p1); break;
      case 3: rowsBody<3>(am, lda, b, cm, ldc, p0, p1); break;
      default: rowsBody<4>(am, lda, b, cm, ldc, p0, p1); break;
    }
  }
}

}  // namespace
#endif

void vnniGemm(int64_t M, const uint8_t* a, int64_t lda, const VnniB& b, int32_t* c, int64_t ldc, int64_t p0, int64_t p1) {
#ifdef GKRT_X86_TIERS
  vnniGemmAvx512(M, a, lda, b, c, ldc, p0, p1);
#else
  (void)M, (void)a, (void)lda, (void)b, (void)c, (void)ldc, (void)p0, (void)p1;
#endif
}

}  // namespace gkrt::cpu
