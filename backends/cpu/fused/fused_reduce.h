// The cpu backend's executor for clusters with reductions (and single Reduce ops):
// ReduceSum/Mean/Max/Min/Prod over one block of axes, the elementwise ops feeding
// them (prologue), ops on the reduced values, and full-shape ops reading those values
// broadcast back over their rows (epilogue), e.g. an expanded Softmax or LayerNorm.
//
// The reduction's input is viewed as [outer, extent, inner]; a thread takes rows of
// it, a block of up to kTile inner positions at a time. Per block, each reduction is
// one pass of tiles over the block that recomputes its prologue and accumulates into
// the row values; then come the ops on row values, and a last pass writes the
// full-shape outputs. Intermediates stay in tile buffers; a row is read once per pass
// while it is still in cache.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunReduce(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileReduce(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
