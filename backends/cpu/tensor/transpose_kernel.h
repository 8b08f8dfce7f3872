// Transpose of any element type as merged strided runs (memcpy where the last output
// axis is contiguous in the input), rows across threads.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunTranspose(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileTranspose(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
