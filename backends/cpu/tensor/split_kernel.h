// Split and Concat of any dtype along one axis as block copies, in plain layout or, for a 4-D
// float32 tensor split on channels at multiples of the block, channel-blocked
// (blocked_layout.h): there a channel split is a split of the channel-block axis. Concat
// likewise, the inverse copies.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunSplit(const ir::Graph& g, const ir::Node& node);
// Whether every output of a channel split of a 4-D tensor starts at a multiple of `block`.
bool splitTakesBlocked(const ir::Graph& g, const ir::Node& node, int block);
bool canRunConcat(const ir::Graph& g, const ir::Node& node);
// Whether the concat's inputs and output share one layout in `blocked` (per tensor, as
// LayoutPlan::blocked) and, blocked, every input holds whole channel blocks.
bool concatCopiesIn(const ir::Graph& g, const ir::Node& node, const std::vector<char>& blocked, int block);
StatusOr<std::unique_ptr<Kernel>> compileConcat(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block = 0);
// A 4-D Concat along the channels with every operand NHWC (the int8 layout plan's).
bool canRunNhwcConcat(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileNhwcConcat(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);
StatusOr<std::unique_ptr<Kernel>> compileSplit(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block = 0);

}  // namespace gkrt::cpu
