// Conv2D through oneDNN, alone or with its epilogue (a Fused node whose body starts
// with the Conv2D and continues with the chain fusion put after it: bias, activations,
// a residual Add), as ONE oneDNN convolution with post-ops. A constant per-channel Add
// right after the convolution is folded into its bias at compile. Activations are read
// and written in the layouts the cpu backend's layout plan gave them (plain NCHW or
// channel-blocked); where oneDNN's chosen implementation wants another layout the
// kernel reorders through the session workspace, and says so in detail()/reorders().
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/blocked_layout.h"

namespace gkrt::cpu {

// Whether this build has oneDNN and it runs `node` (a Conv2D or a Fused node headed by
// one whose whole chain maps to post-ops).
bool canRunOneDnnConv(const ir::Graph& g, const ir::Node& node);

// Whether oneDNN has a fast (non-reference) implementation for it with its input and
// output channel-blocked by `block` where their channel counts allow (0: plain),
// checked by making the primitive (it reorders its weights: compile time only).
bool oneDnnConvIsFast(const ir::Graph& g, const ir::Node& node, int block, bool channels_last = false);

// `layout`: the graph's layout plan (null: every tensor plain). Without `allow_ref`, a
// node only oneDNN's reference implementation takes is refused (kUnsupported).
StatusOr<std::unique_ptr<Kernel>> compileOneDnnConv(const ir::Graph& g, const ir::Node& node, const LayoutPlan* layout,
                                                    bool allow_ref);

}  // namespace gkrt::cpu
