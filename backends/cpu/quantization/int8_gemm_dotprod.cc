// The int8 GEMM's aarch64 path for CPUs with the dot-product instructions (Armv8.2
// FEAT_DotProd: Cortex-A55/A75 and later, most boards since 2018): SDOT multiplies four
// int8 pairs and adds them into an int32 lane, 16 MACs per instruction. Only the kernel
// function is compiled for armv8.2-a+dotprod (a target attribute), and it is called only
// when the CPU tier includes it (cpu_tier.h: dotprod and above), so the binary still runs
// on older cores.
//
// Operands as int8: b' = b - bzp must fit int8 (the caller checks); a enters as
// a8 = a (int8) or a - 128 (uint8, by flipping the top bit), and
//   sum_k (a - azp) b' = sum_k a8 b' + (offset - azp) sum_k b',  offset = 128 or 0.
#include "backends/cpu/quantization/int8_gemm_dotprod.h"

#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_tier.h"


namespace gkrt::cpu {

bool cpuHasDotProd() { return cpuTier().has(CpuIsa::kDotProd); }

void packDotProdB(const int8_t* b_shifted, int64_t K, int64_t N, DotProdB* out) {
  out->K = K;
  out->N = N;
  out->k_groups = (K + 3) / 4;
  const int64_t panels = (N + 15) / 16;
  out->panels.assign(static_cast<size_t>(panels * out->k_groups * 64), 0);
  out->col_sums.assign(static_cast<size_t>(N), 0);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t col = 0; col < N; ++col) {
      const int8_t v = b_shifted[k * N + col];
      const int64_t p = col / 16, c = col % 16;
      out->panels[static_cast<size_t>(((p * out->k_groups + k / 4) * 16 + c) * 4 + k % 4)] = v;
      out->col_sums[col] += v;
    }
  }
}

__attribute__((target("arch=armv8.2-a+dotprod"))) void dotProdRows(const void* a, bool a_unsigned, int64_t rows,
                                                                    int32_t correction, const DotProdB& b, int32_t* c,
                                                                    int8_t* a_pack) {
  const int64_t K = b.K, N = b.N, G = b.k_groups, panels = (N + 15) / 16;
  // The rows as int8, four k per 32-bit lane, row r in lane r: [G][4 rows][4 k].
  std::memset(a_pack, 0, static_cast<size_t>(G * 16));
  const auto* au = static_cast<const uint8_t*>(a);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t v = au[r * K + k];
      a_pack[(k / 4) * 16 + r * 4 + k % 4] = static_cast<int8_t>(a_unsigned ? v ^ 0x80 : v);
    }
  }
  for (int64_t p = 0; p < panels; ++p) {
    int32x4_t acc[4][4];
    for (auto& row : acc) for (auto& v : row) v = vdupq_n_s32(0);
    const int8_t* bp = b.panels.data() + p * G * 64;
    for (int64_t g = 0; g < G; ++g) {
      const int8x16_t av = vld1q_s8(a_pack + g * 16);
      const int8x16_t b0 = vld1q_s8(bp + g * 64), b1 = vld1q_s8(bp + g * 64 + 16);
      const int8x16_t b2 = vld1q_s8(bp + g * 64 + 32), b3 = vld1q_s8(bp + g * 64 + 48);
#define GKRT_SDOT_ROW(r)                                  \
  acc[r][0] = vdotq_laneq_s32(acc[r][0], b0, av, r);      \
  acc[r][1] = vdotq_laneq_s32(acc[r][1], b1, av, r);      \
  acc[r][2] = vdotq_laneq_s32(acc[r][2], b2, av, r);      \
  acc[r][3] = vdotq_laneq_s32(acc[r][3], b3, av, r);
      GKRT_SDOT_ROW(0)
      GKRT_SDOT_ROW(1)
      GKRT_SDOT_ROW(2)
      GKRT_SDOT_ROW(3)
#undef GKRT_SDOT_ROW
    }
    const int64_t cols = std::min<int64_t>(16, N - p * 16);
    for (int64_t r = 0; r < rows; ++r) {
      int32_t out[16];
      for (int q = 0; q < 4; ++q) vst1q_s32(out + 4 * q, acc[r][q]);
      for (int64_t j = 0; j < cols; ++j) c[r * N + p * 16 + j] = out[j] + correction * b.col_sums[p * 16 + j];
    }
  }
}

}  // namespace gkrt::cpu

#else  // no aarch64 dot product in this build

namespace gkrt::cpu {
bool cpuHasDotProd() { return false; }
void packDotProdB(const int8_t*, int64_t, int64_t, DotProdB*) {}
void dotProdRows(const void*, bool, int64_t, int32_t, const DotProdB&, int32_t*, int8_t*) {}
}  // namespace gkrt::cpu

#endif
