// The cpu backend's kernel for matmuls of a few rows against constant float32 weights
// (a decoder's projections at decode time, M = 1): bandwidth-bound, so the weights are
// packed once into panels of 64 columns ([N/64][K][64]) that each task streams from
// start to end, the 64 sums in registers; the epilogue (bias, the residual of MatMulAdd)
// is added on the way out. A few rows more (kFewRowsMax) stream the panels once, K in
// L1-sized chunks that each block of rows reuses, the next chunk prefetched meanwhile.
// Allocates nothing per launch. The packed copy is the weights' size again, as oneDNN's
// reordered weights are. GKRT_CPU_GEMV=off (read by the backend with its other
// environment overrides) leaves these matmuls to oneDNN.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// MatMul / BatchMatMul / MatMulAdd / MatMulBiasAdd / MatMulSplit / Gemm (alpha 1, a bias
// of N values or none) with float32 operands, 2-D constant weights (transposed or not), no
// transposed activations, and at most kGemvMaxRows rows; on the AVX-512 tier also up to
// kFewRowsMax rows against weights of at least kFewRowsMinBytes (a recogniser's per-frame
// classifier: weights streamed from memory once, rows in blocks of 5 against them).
constexpr int64_t kGemvMaxRows = 4;
constexpr int64_t kFewRowsMax = 32;
constexpr int64_t kFewRowsMinBytes = int64_t(4) << 20;
bool canRunGemv(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileGemv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
