// MatMul, BatchMatMul (batch dims broadcast) and Gemm (alpha, beta, C broadcast) on
// the cpu backend's GEMM; constant B operands are packed once, at session compile.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunMatMul(const ir::Graph& g, const ir::Node& node);
// Outputs x K of 4096 or less: gkrt's GEMM (oneDNN's call costs more than the work).
bool isTinyMatMul(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileMatMul(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
