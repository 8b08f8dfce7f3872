// The cpu backend's Winograd convolution kernel (winograd_conv.h) for a Conv2D or a
// convolution epilogue node: 3x3 kernel, stride 1, no dilation, one group, float32,
// constant weights and bias, input and output channel-blocked by 8 in the graph's
// layout plan, an epilogue whose every step it has (activations; residual, per-channel
// and scalar operands), and a shape where it beats a direct convolution
// (WinogradConv::worthIt). Anything else is refused (kUnsupported) with the reason, and
// the backend compiles oneDNN's direct convolution instead.
// BackendOptions::cpu_winograd (GKRT_CPU_WINOGRAD=off) turns it off. On cores with
// full-width AVX-512 (CpuTier::full_width_512) it leaves maps of under 36 output tiles to
// oneDNN's Winograd, the faster there; `any_core` (GKRT_CPU_WINOGRAD=own) takes them too.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/layout/blocked_layout.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

StatusOr<std::unique_ptr<Kernel>> compileWinogradConv(const ir::Graph& g, const ir::Node& node,
                                                      const LayoutPlan& layout, ThreadPool& pool, bool any_core = false);

}  // namespace gkrt::cpu
