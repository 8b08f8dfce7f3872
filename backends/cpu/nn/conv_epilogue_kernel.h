// A Fused node headed by a Conv2D (a convolution epilogue fusion decided) that no
// single kernel takes — no oneDNN in this build (boards, minimal builds), or a chain
// oneDNN has no post-ops for: the convolution's own kernel writes the node's output,
// then the rest of the chain runs over it in place as one elementwise loop.
#pragma once

#include <functional>
#include <memory>

#include "backends/backend.h"
#include "backends/conv_epilogue.h"  // isConvEpilogue
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// `compile_node`: the backend's compile for a basic node of the body.
StatusOr<std::unique_ptr<Kernel>> compileConvEpilogue(
    const ir::Node& node, ThreadPool& pool,
    const std::function<StatusOr<std::unique_ptr<Kernel>>(const ir::Graph&, const ir::Node&)>& compile_node);

}  // namespace gkrt::cpu
