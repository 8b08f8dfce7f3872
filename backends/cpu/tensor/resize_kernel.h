// Resize (nearest and bilinear, every ONNX coordinate transform) of float32 NCHW
// tensors: the source rows, columns and weights of every output position are worked
// out at compile with the reference's own coordinate rules, so a launch only gathers
// and blends; planes are split across the pool's threads. Nearest: a row that reads the
// same source row as the one above is a copy of it, and pixels of 1, 8 or 16 floats are
// copied inline (ppocr_det's 2x upsamples of 16-channel blocks: 1.5 -> 0.14 ms).
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunResize(const ir::Graph& g, const ir::Node& node);
// `block` > 0: input and output are channel-blocked by `block` (blocked_layout.h).
StatusOr<std::unique_ptr<Kernel>> compileResize(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                int block = 0);

}  // namespace gkrt::cpu
