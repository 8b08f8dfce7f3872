// The cpu backend's own single-precision GEMM: B packed into 16-column panels (once,
// at session compile, when B is a constant), A packed into MR-row blocks, an MRx16
// register-tile micro-kernel the compiler vectorises (x86: 8x16 on AVX-512, 4x16 cloned
// for AVX2+FMA and baseline, picked by cpuTier(); ARM: 4x16 on NEON), tiles split across the pool's threads.
// Used where oneDNN is not (cross builds for boards).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

constexpr int64_t kGemmNR = 16;
// Rows of the micro-kernel's tile: 8 on AVX-512 machines, 4 elsewhere (fixed per process).
int64_t gemmMR();

struct PackedB {
  int64_t K = 0, N = 0;
  std::vector<float> panels;  // [ceil(N/16)][K][16], zero-padded
};

// op(B) is K x N; transposed B is stored N x K.
void packB(const float* b, int64_t K, int64_t N, bool transpose, PackedB* out);

// Floats packA writes for an M x K operand.
inline int64_t packedASize(int64_t M, int64_t K) { return (M + gemmMR() - 1) / gemmMR() * gemmMR() * K; }
// op(A) [M, K] into MR-row blocks [ceil(M/MR)][K][MR], zero-padded; transposed A is K x M.
void packA(const float* a, int64_t M, int64_t K, bool transpose, float* dst);

// C[M, N] (row stride ldc) = packed A * B, plus row_bias[i] on row i when given.
void gemmPacked(int64_t M, const float* a_pack, const PackedB& b, float* c, int64_t ldc, const float* row_bias,
                ThreadPool& pool);

// The same on the calling thread only, B given as raw panels [ceil(N/16)][K][16].
void gemmSerial(int64_t M, const float* a_pack, int64_t K, const float* panels, int64_t N, float* c, int64_t ldc,
                const float* row_bias);

// C[M, N] = A[M, K] * B[K, N] on the calling thread with A read in place (row-major,
// row stride lda: no packing, for tiles that sit in cache) and B as 16-column panels,
// panel p at b + p * b_panel_stride, its row k at + k * ldb: packed panels (ldb 16,
// stride K * 16) or a row-major matrix (ldb its row stride, stride 16). Every panel
// must have 16 readable columns (the last one zero-padded or followed by data).
void gemmRowsSerial(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
                    int64_t b_panel_stride, float* c, int64_t ldc);

// C[M, N] = op(A)[M, K] * B (row-major; op(A) transposed is stored K x M). `a_pack`
// needs packedASize(M, K) floats.
void gemm(int64_t M, const float* a, bool transpose_a, const PackedB& b, float* c, float* a_pack, ThreadPool& pool);

}  // namespace gkrt::cpu
