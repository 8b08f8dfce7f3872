// The cpu kernel of Rotary (runtime/ir/ops/rotary.h): rows of x over the threads, each
// row's cos/sin offset found at compile time; float32.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

std::unique_ptr<Kernel> makeRotaryKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
