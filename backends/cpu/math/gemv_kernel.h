// The cpu backend's kernel for matmuls of a few rows against constant float32 weights
// (a decoder's projections at decode time, M = 1): bandwidth-bound, so the weights are
// packed once into panels of 64 columns ([N/64][K][64]) that each task streams from
// start to end, the 64 sums in registers; the epilogue (bias, the residual of MatMulAdd)
// is added on the way out. Allocates nothing per launch. The packed copy is the weights'
// size again, as oneDNN's reordered weights are. GKRT_CPU_GEMV=off (read by the
// backend with its other environment overrides) leaves these matmuls to oneDNN.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// MatMul / BatchMatMul / MatMulAdd / MatMulBiasAdd / MatMulSplit with float32 operands, 2-D constant
// weights not transposed, no transposed activations, and at most kGemvMaxRows rows.
constexpr int64_t kGemvMaxRows = 4;
bool canRunGemv(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileGemv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
