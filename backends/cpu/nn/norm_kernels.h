// Softmax and LogSoftmax along any axis, LayerNorm over trailing axes, on float
// tensors: rows across threads, exp through the vector math (vector_math.h).
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunNorm(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileNorm(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
