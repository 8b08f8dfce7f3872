// The block-quant prefill product on oneDNN (builds with GKRT_HAVE_DNNL): the weights'
// columns widened to float32, a chunk of columns at a time into a row-major [K, cols]
// buffer of the workspace (at most kChunkBytes), each chunk multiplied by oneDNN's
// matmul (its brgemm kernels on AVX2/AVX-512: 1.5-1.6x the packed GEMM of gemm.h on
// MiniLM's prompt projections), bias added by oneDNN. The widening is the caller's
// (block_quant_matmul_kernel.cc: AVX2 or portable loops, one column after another with
// no transpose: 10x faster than into row-major panels), run on the pool's threads;
// oneDNN runs on the same OpenMP threads after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/ir/ops/block_quant_matmul.h"

namespace gkrt::cpu {

class BlockQuantOneDnnGemm {
 public:
  // Null where this build has no oneDNN or oneDNN has only reference code for the shapes.
  static std::unique_ptr<BlockQuantOneDnnGemm> make(const ops::BlockQuantDims& d);
  virtual ~BlockQuantOneDnnGemm() = default;
  // Columns a chunk (the last chunk may have fewer) and the bytes of its widened weights.
  virtual int64_t width() const = 0;
  virtual size_t workspaceBytes() const = 0;
  // y[M, cols] (row stride N) = x[M, K] * w (+ bias[cols]): w the chunk's columns widened,
  // column j's K values at w + j * K; cols the chunk width or the last chunk's.
  virtual void multiply(const float* x, const float* w, const float* bias, float* y, int64_t cols) = 0;
  virtual std::string impl() const = 0;
};

}  // namespace gkrt::cpu
