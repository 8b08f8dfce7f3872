// The cpu kernel of CachedAttention (runtime/ir/ops/cached_attention.h): the new keys and
// values copied into the caches, then one task per (batch, query head, query row) over
// the threads: scores against the cached keys of its KV head, softmax, the weighted sum
// of the cached values. A decode step's query row reads past + 1 cached positions.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

std::unique_ptr<Kernel> makeCachedAttentionKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
