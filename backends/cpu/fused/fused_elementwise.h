// The cpu backend's fused-loop executor for elementwise/broadcast clusters (and single
// elementwise ops): the output index space is cut into tiles of kTile elements; per
// tile each input is read once (in place when it has the output's shape, through its
// broadcast strides otherwise), every op runs as a simple loop over tile buffers that
// stay in L1, and only the cluster's outputs are written to memory. Tiles are split
// across the pool's threads.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// Whether `node` (a Fused node, or one elementwise op) can run as one tiled loop:
// float32 throughout (but for a Cast to float32 of a whole int32/int8/uint8 input,
// converted as it loads), supported ops, outputs of one shape that every input
// broadcasts to.
bool canRunElementwise(const ir::Graph& g, const ir::Node& node);

// `block` > 0: the outputs and full-size inputs are stored channel-blocked
// (blocked_layout.h); broadcast inputs stay plain and are read through blocked
// broadcast strides.
StatusOr<std::unique_ptr<Kernel>> compileElementwise(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                     int block = 0);

// Whether the layout plan may store this node's full-size operands blocked: an
// elementwise kernel with no reshape inside and every input either of the output's
// shape or a broadcast one (fewer elements).
bool elementwiseTakesBlocked(const ir::Graph& g, const ir::Node& node);

}  // namespace gkrt::cpu
