// The cpu kernel of Slice and StridedSlice: the windows found at compile time, the
// innermost contiguous stretch of each output row copied with memcpy, rows over the
// threads. Any element type (bytes); rank up to 8. Allocates nothing per launch.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunSlice(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileSlice(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
