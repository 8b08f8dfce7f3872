// The cpu kernel of Pad (constant, edge and reflect, negative pads cropping), plain
// tensors of any element type: each output row along the last axis is its input row's
// middle copied with memcpy and its few border values filled, rows over the threads (the
// reference kernel maps every element's index: Silero VAD's reflect pad of 16 frames took
// 0.1 ms of a 1.1 ms run). Allocates nothing per launch.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunPad(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compilePad(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
