// The cpu backend's kernels for the Appendix 3 pattern ops (runtime/ir/ops/pattern_ops.cc):
// AddLayerNorm / AddRmsNorm in one pass over each row, SwiGLU, a tiled online-softmax
// FlashAttention that never holds more than one tile of scores, the matmul family on
// oneDNN with its epilogue as post-ops, and AllReduce through the backend's communicator.
// Float32 only; other dtypes run the reference kernels.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunPattern(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compilePattern(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                 const BackendOptions& options);

}  // namespace gkrt::cpu
