// MaxPool and AvgPool (2-D, float32) reading channel-blocked activations (nChw8c/nChw16c:
// 8 or 16 channels innermost) and writing them blocked or plain, the cpu backend's own kernel: each output pixel is the
// max or mean of its window's pixel vectors, split over (image, channel block, output
// row). oneDNN 2.6's jit:avx2 max pooling took ~1 ms for SqueezeNet's first 3x3/2 pool
// (64x111x111, ~3 GB/s); this loop does it at memory speed. Same results as the
// reference kernel (NaN skipped by max, count_include_pad choosing the divisor).
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// A MaxPool/AvgPool node of float32 NCHW tensors (no dilation) this kernel takes.
bool canRunBlockedPool(const ir::Graph& g, const ir::Node& node);
// `block`: 8 or 16, the input's layout; the output is blocked the same way or
// (out_blocked false) plain NCHW.
StatusOr<std::unique_ptr<Kernel>> compileBlockedPool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                     int block, bool out_blocked);

}  // namespace gkrt::cpu
