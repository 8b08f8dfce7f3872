// Conv2D (grouped: im2col into GEMM panels per thread chunk, weights packed at compile;
// depthwise: a direct loop over padded planes) and MaxPool/AvgPool on float tensors.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunConvOrPool(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileConvOrPool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
