// MaxPool, AvgPool, GlobalAvgPool and channel Concat of 4-D float32 activations through
// oneDNN, in the layouts the cpu backend's layout plan gave their tensors (plain or
// channel-blocked; blocked_layout.h), so blocked activations stay blocked across them.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/layout/blocked_layout.h"

namespace gkrt::cpu {

bool canRunOneDnnPoolOrConcat(const ir::Graph& g, const ir::Node& node);
// Whether oneDNN has a non-reference pooling for it with its tensors blocked by
// `block` where the channels allow (concat: always).
bool oneDnnPoolIsFast(const ir::Graph& g, const ir::Node& node, int block, bool channels_last = false);
// Without `allow_ref`, a pooling only oneDNN's reference implementation takes is
// refused (kUnsupported): the backend's own pooling kernel is faster.
StatusOr<std::unique_ptr<Kernel>> compileOneDnnPoolOrConcat(const ir::Graph& g, const ir::Node& node,
                                                             const LayoutPlan* layout, bool allow_ref);

}  // namespace gkrt::cpu
