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
#include "backends/cpu/layout/blocked_layout.h"

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
// `winograd`: a 3x3, stride-1, ungrouped convolution between nChw16c tensors (AVX-512
// plans) runs as oneDNN's Winograd convolution (F(4x4,3x3) or F(2x2,3x3), its choice)
// where oneDNN has a jit kernel for it: 1.3-3x faster than its direct convolution on
// ResNet-50's and SqueezeNet's 3x3 shapes at 1 thread (the transforms round: results
// differ from a direct convolution by a few ulps of the largest partial sums, as gkrt's
// own Winograd kernel for AVX2 plans, winograd_conv.h).
StatusOr<std::unique_ptr<Kernel>> compileOneDnnConv(const ir::Graph& g, const ir::Node& node, const LayoutPlan* layout,
                                                    bool allow_ref, bool winograd = false);

// A convolution cluster with channels-last ends (runtime/ir/channels_last_ends.h: the
// Transposes conv_transpose_fold moved in): the convolution reads the cluster's input
// and writes its output as NHWC bytes, one oneDNN convolution with its epilogue as
// post-ops and no reorder where oneDNN's implementation is an NHWC one. `IsFast`:
// whether oneDNN has a fast implementation for it (made to check; compile time only).
bool canRunOneDnnConvChannelsLast(const ir::Graph& g, const ir::Node& node);
bool oneDnnConvChannelsLastIsFast(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileOneDnnConvChannelsLast(const ir::Graph& g, const ir::Node& node, bool allow_ref);

}  // namespace gkrt::cpu
