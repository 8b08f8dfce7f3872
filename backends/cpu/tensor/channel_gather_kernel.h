// Gather along the channels of a 4-D float32 tensor with constant indices: a channel
// permutation or selection, e.g. ShuffleNet's channel shuffle, which
// channel_shuffle_fusion (fusion/passes/channel_shuffle_fusion.cc) writes as one.
// Input and output in one layout of the plan (blocked_layout.h): plain NCHW (block 1),
// channel blocks of 8/16, or NHWC (the block is the channel count); each output element
// is read from its source channel at the same pixel.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunChannelGather(const ir::Graph& g, const ir::Node& node);
// x_block / y_block: the input's and output's blocks (1: plain NCHW).
StatusOr<std::unique_ptr<Kernel>> compileChannelGather(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                       int x_block, int y_block);

}  // namespace gkrt::cpu
