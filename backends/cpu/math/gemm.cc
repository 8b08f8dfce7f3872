#include "backends/cpu/math/gemm.h"

#include "backends/cpu/cpu_tier.h"

#include <algorithm>
#include <cstring>

namespace gkrt::cpu {

void packB(const float* b, int64_t K, int64_t N, bool transpose, PackedB* out) {
  const int64_t panels = (N + kGemmNR - 1) / kGemmNR;
  out->K = K;
  out->N = N;
  out->panels.assign(static_cast<size_t>(panels * K * kGemmNR), 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    float* dst = out->panels.data() + p * K * kGemmNR;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < kGemmNR && p * kGemmNR + j < N; ++j) {
        const int64_t col = p * kGemmNR + j;
        dst[k * kGemmNR + j] = transpose ? b[col * K + k] : b[k * N + col];
      }
    }
  }
}

namespace {

// C block (rows x cols, rows <= MR, cols <= 16) = A block (K x MR, packed) * B panel.
// The MR x 16 accumulator is kept in registers as vectors of the machine's width: one
// zmm per row with AVX-512, two ymm with AVX2, four xmm/q registers with SSE2/NEON. (One
// 64-byte GCC vector per row, as this was first written, compiles well only for
// AVX-512: with AVX2 GCC moved its halves through the stack, ~3 GMAC/s.)
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));

// One body for every tile: A packed (kPacked: row r of step k at a[k * MR + r]) or read
// in place (row r at ar[r], step k at ar[r][k]); B as kPanels 16-column panels, panel p
// at b + p * panel_stride, row k at + k * ldb; C gets rows x cols (plus bias[r]).
template <int MR, class V, int kPanels, bool kPacked>
inline __attribute__((always_inline)) void microKernelBody(int64_t K, const float* a, const float* const* ar,
                                                           const float* b, int64_t ldb, int64_t panel_stride,
                                                           float* c, int64_t ldc, int64_t rows, int64_t cols,
                                                           const float* bias) {
  constexpr int kLanes = sizeof(V) / sizeof(float), kPerPanel = kGemmNR / kLanes, kVecs = kPanels * kPerPanel;
  V acc[MR][kVecs] = {};
  for (int64_t k = 0; k < K; ++k) {
    V bk[kVecs];
    for (int j = 0; j < kVecs; ++j) {
      std::memcpy(&bk[j], b + (j / kPerPanel) * panel_stride + k * ldb + (j % kPerPanel) * kLanes, sizeof(V));
    }
    for (int r = 0; r < MR; ++r) {
      float ark;
      if constexpr (kPacked) {
        ark = a[k * MR + r];
      } else {
        ark = ar[r][k];
      }
      for (int j = 0; j < kVecs; ++j) acc[r][j] += ark * bk[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float v[kPanels * kGemmNR];
    for (int j = 0; j < kVecs; ++j) {
      V x = acc[r][j];
      if (bias) x += bias[r];
      std::memcpy(v + j * kLanes, &x, sizeof x);
    }
    std::memcpy(c + r * ldc, v, cols * sizeof(float));
  }
}

// The packed GEMM's tile (B packed: ldb 16) and the in-place tile of gemmRowsSerial.
template <int MR, class V>
inline __attribute__((always_inline)) void packedTile(int64_t K, const float* a, const float* b, float* c, int64_t ldc,
                                                      int64_t rows, int64_t cols, const float* bias) {
  microKernelBody<MR, V, 1, true>(K, a, nullptr, b, kGemmNR, 0, c, ldc, rows, cols, bias);
}
template <int MR, class V, int kPanels = 1>
inline __attribute__((always_inline)) void rowsTile(int64_t K, const float* const* ar, const float* b, int64_t ldb,
                                                    int64_t panel_stride, float* c, int64_t ldc, int64_t rows,
                                                    int64_t cols) {
  microKernelBody<MR, V, kPanels, false>(K, nullptr, ar, b, ldb, panel_stride, c, ldc, rows, cols, nullptr);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// AVX-512 machines have two FMA pipes of latency 4: eight rows (eight independent zmm
// accumulators) keep both busy. Elsewhere four rows fit the register file.
__attribute__((target("avx512f"))) void microKernel8(int64_t K, const float* a, const float* b, float* c, int64_t ldc,
                                                      int64_t rows, int64_t cols, const float* bias) {
  packedTile<8, V16>(K, a, b, c, ldc, rows, cols, bias);
}
__attribute__((target("avx512f"))) void microKernelRows8(int64_t K, const float* const* ar, const float* b, int64_t ldb,
                                                          int64_t panel_stride, float* c, int64_t ldc, int64_t rows,
                                                          int64_t cols) {
  rowsTile<8, V16>(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
}
// Two panels (32 columns) at once: 16 zmm accumulators, half the A broadcasts per FMA.
__attribute__((target("avx512f"))) void microKernelRows8x2(int64_t K, const float* const* ar, const float* b,
                                                            int64_t ldb, int64_t panel_stride, float* c, int64_t ldc,
                                                            int64_t rows, int64_t cols) {
  rowsTile<8, V16, 2>(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
}
// AVX2+FMA and baseline builds of the 4-row kernels, picked by the CPU's features
// (cpu_tier.h; the "arch=haswell" clone this had ran SSE2 on AMD CPUs).
__attribute__((target("avx2,fma"))) void microKernelRows4Fma(int64_t K, const float* const* ar, const float* b,
                                                             int64_t ldb, int64_t panel_stride, float* c, int64_t ldc,
                                                             int64_t rows, int64_t cols) {
  rowsTile<4, V8>(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
}
void microKernelRows4(int64_t K, const float* const* ar, const float* b, int64_t ldb, int64_t panel_stride, float* c,
                      int64_t ldc, int64_t rows, int64_t cols) {
  if (cpuTier().has(CpuIsa::kAvx2)) return microKernelRows4Fma(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
  rowsTile<4, V4>(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
}
__attribute__((target("avx2,fma"))) void microKernel4Fma(int64_t K, const float* a, const float* b, float* c,
                                                         int64_t ldc, int64_t rows, int64_t cols, const float* bias) {
  packedTile<4, V8>(K, a, b, c, ldc, rows, cols, bias);
}
void microKernel4(int64_t K, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols,
                  const float* bias) {
  if (cpuTier().has(CpuIsa::kAvx2)) return microKernel4Fma(K, a, b, c, ldc, rows, cols, bias);
  packedTile<4, V4>(K, a, b, c, ldc, rows, cols, bias);
}
int64_t detectMR() { return cpuTier().has(CpuIsa::kAvx512) ? 8 : 4; }
#else
void microKernel8(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, const float*) {}
void microKernelRows8(int64_t, const float* const*, const float*, int64_t, int64_t, float*, int64_t, int64_t, int64_t) {}
void microKernelRows8x2(int64_t, const float* const*, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                        int64_t) {}
void microKernelRows4(int64_t K, const float* const* ar, const float* b, int64_t ldb, int64_t panel_stride, float* c,
                      int64_t ldc, int64_t rows, int64_t cols) {
  rowsTile<4, V4>(K, ar, b, ldb, panel_stride, c, ldc, rows, cols);
}
void microKernel4(int64_t K, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols,
                  const float* bias) {
  packedTile<4, V4>(K, a, b, c, ldc, rows, cols, bias);
}
int64_t detectMR() { return 4; }
#endif

inline void microKernel(int64_t K, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols,
                        const float* bias) {
  if (gemmMR() == 8) return microKernel8(K, a, b, c, ldc, rows, cols, bias);
  microKernel4(K, a, b, c, ldc, rows, cols, bias);
}

}  // namespace

int64_t gemmMR() {
  static const int64_t mr = detectMR();
  return mr;
}

void packA(const float* a, int64_t M, int64_t K, bool transpose, float* dst) {
  const int64_t mr = gemmMR();
  const int64_t blocks = (M + mr - 1) / mr;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    float* d = dst + blk * K * mr;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t r = 0; r < mr; ++r) {
        const int64_t i = blk * mr + r;
        d[k * mr + r] = i >= M ? 0.0f : transpose ? a[k * M + i] : a[i * K + k];
      }
    }
  }
}

void gemmPacked(int64_t M, const float* a_pack, const PackedB& b, float* c, int64_t ldc, const float* row_bias,
                ThreadPool& pool) {
  const int64_t K = b.K, N = b.N, mr = gemmMR();
  const int64_t blocks = (M + mr - 1) / mr, panels = (N + kGemmNR - 1) / kGemmNR;
  // Panels are taken in chunks that stay in L2 while every A block passes over them.
  const int64_t chunk = std::max<int64_t>(1, (256 << 10) / std::max<int64_t>(1, K * kGemmNR * 4));
  const int64_t work_per_task = K * mr * kGemmNR;
  pool.parallelFor(blocks * panels, 1, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, work_per_task)),
                   [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t first = t / (blocks * chunk) * chunk, width = std::min(chunk, panels - first);
      const int64_t within = t - first * blocks;
      const int64_t blk = within / width, p = first + within % width;
      const int64_t row = blk * mr, col = p * kGemmNR;
      microKernel(K, a_pack + blk * K * mr, b.panels.data() + p * K * kGemmNR, c + row * ldc + col, ldc,
                  std::min(mr, M - row), std::min(kGemmNR, N - col), row_bias ? row_bias + row : nullptr);
    }
  });
}

void gemmSerial(int64_t M, const float* a_pack, int64_t K, const float* panels, int64_t N, float* c, int64_t ldc,
                const float* row_bias) {
  const int64_t mr = gemmMR();
  const int64_t blocks = (M + mr - 1) / mr, num_panels = (N + kGemmNR - 1) / kGemmNR;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t row = blk * mr;
    for (int64_t p = 0; p < num_panels; ++p) {
      microKernel(K, a_pack + blk * K * mr, panels + p * K * kGemmNR, c + row * ldc + p * kGemmNR, ldc,
                  std::min(mr, M - row), std::min(kGemmNR, N - p * kGemmNR), row_bias ? row_bias + row : nullptr);
    }
  }
}

void gemmRowsSerial(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
                    int64_t b_panel_stride, float* c, int64_t ldc) {
  const int64_t mr = gemmMR();
  const float* ar[8];
  for (int64_t row = 0; row < M; row += mr) {
    const int64_t rows = std::min(mr, M - row);
    for (int64_t r = 0; r < mr; ++r) ar[r] = a + (row + std::min(r, rows - 1)) * lda;  // spare lanes repeat a row
    int64_t col = 0;
    if (mr == 8) {  // AVX-512: 32 columns a tile while two panels remain
      for (; col + kGemmNR < N; col += 2 * kGemmNR) {
        microKernelRows8x2(K, ar, b + (col / kGemmNR) * b_panel_stride, ldb, b_panel_stride, c + row * ldc + col, ldc,
                           rows, std::min(2 * kGemmNR, N - col));
      }
    }
    for (; col < N; col += kGemmNR) {
      const float* panel = b + (col / kGemmNR) * b_panel_stride;
      const int64_t cols = std::min(kGemmNR, N - col);
      if (mr == 8) {
        microKernelRows8(K, ar, panel, ldb, b_panel_stride, c + row * ldc + col, ldc, rows, cols);
      } else {
        microKernelRows4(K, ar, panel, ldb, b_panel_stride, c + row * ldc + col, ldc, rows, cols);
      }
    }
  }
}

void gemm(int64_t M, const float* a, bool transpose_a, const PackedB& b, float* c, float* a_pack, ThreadPool& pool) {
  packA(a, M, b.K, transpose_a, a_pack);
  gemmPacked(M, a_pack, b, c, b.N, nullptr, pool);
}

}  // namespace gkrt::cpu
