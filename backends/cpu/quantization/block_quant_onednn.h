// The block-quant prefill product on oneDNN (builds with GKRT_HAVE_DNNL): the weights'
// columns widened to float32 into a [K, N] buffer of the workspace, each column's values
// in a row, then oneDNN's matmul (its brgemm kernels), bias added by oneDNN. The widening
// is the caller's (block_quant_matmul_kernel.cc: AVX2 or portable loops, one column after
// another with no transpose: 10x faster than into row-major panels), on the pool's
// threads; oneDNN runs on the same OpenMP threads after it.
//
// Taken for at least kMinRows rows and widened weights of at most kMaxWideBytes, where it
// measured faster than the packed GEMM on 64-column panels (gemm.h) that the kernel runs
// otherwise: MiniLM's prompt of 128 (K 384 and 1536) 0.19 against 0.21 ms and 0.73
// against 0.78 a product at 2 threads. Below 64 rows (oneDNN's copy of the runtime weights
// costs as much as the product: 16 x 768 x 3072 1.22 against 0.53 ms), or where the
// weights would be widened in several chunks (768 x 3072 at 4 MB chunks: 3.5 against 2.9
// ms), the panels are faster, and they need 64 columns a thread, not the whole matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/ir/ops/block_quant_matmul.h"

namespace gkrt::cpu {

class BlockQuantOneDnnGemm {
 public:
  static constexpr int64_t kMinRows = 64;
  static constexpr int64_t kMaxWideBytes = int64_t{4} << 20;
  // Null where this build has no oneDNN, the shapes are outside the bounds above, or
  // oneDNN has only reference code for them.
  static std::unique_ptr<BlockQuantOneDnnGemm> make(const ops::BlockQuantDims& d);
  virtual ~BlockQuantOneDnnGemm() = default;
  // The widened weights' bytes.
  virtual size_t workspaceBytes() const = 0;
  // y[M, N] = x[M, K] * w (+ bias[N]): w the weights widened, column j's K values at w + j * K.
  virtual void multiply(const float* x, const float* w, const float* bias, float* y) = 0;
  virtual std::string impl() const = 0;
};

}  // namespace gkrt::cpu
