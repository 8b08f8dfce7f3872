// The cpu backend's activation layouts, decided once per graph when a session is
// compiled (CpuBackend::compile asks for the graph's plan; finishCompile drops it).
//
// oneDNN's fast convolutions read and write channel-blocked activations (nChw8c on
// AVX2, nChw16c on AVX-512: 8 or 16 channels innermost). A 4-D float32 tensor is
// stored blocked when every kernel that touches it takes that layout:
//   - adapting kernels (oneDNN convolution with its epilogue, pooling, concat) take
//     each operand in either layout, and reorder inside when oneDNN wants another
//     (a convolution epilogue's full-size operand, e.g. a residual, shares the
//     output's layout);
//   - layout-agnostic kernels (elementwise clusters on the fused-loop executor) need
//     all their full-size operands in ONE layout, so those tensors are decided
//     together (a per-channel or other broadcast operand stays plain and is read
//     through blocked broadcast strides);
//   - Resize, channel Split, and MaxPool/AvgPool oneDNN has no fast kernel for:
//     input and output in one layout (pooling with both blocked runs gkrt's own
//     loop, blocked_pool.h, whichever way it was planned);
//   - every other kernel (and graph inputs, outputs, constants) needs plain NCHW.
// Only tensors whose channel count is a multiple of the block are blocked, so a
// blocked tensor has exactly its plain size and the memory plan is unchanged.
// BackendOptions::cpu_blocked_layout (or GKRT_CPU_LAYOUT=plain, read by CpuBackend's
// constructor with the rest of its options) turns blocked layouts off.
#pragma once

#include <functional>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::cpu {

struct LayoutPlan {
  int block = 0;              // 8 or 16; 0: every tensor plain
  std::vector<char> blocked;  // per tensor of the graph
  std::vector<char> nhwc;     // per tensor: int8 activations stored NHWC (int8_layout.h)
  bool isBlocked(int t) const { return t >= 0 && static_cast<size_t>(t) < blocked.size() && blocked[t]; }
  bool isNhwc(int t) const { return t >= 0 && static_cast<size_t>(t) < nhwc.size() && nhwc[t]; }
};

enum class LayoutUse {
  kPlain,     // needs plain NCHW
  kAdapts,    // takes each operand in either layout
  kAgnostic,  // elementwise: full-size operands and outputs in one layout
  kSame,      // its first input and its outputs in one layout (Resize, channel Split)
};

// `use(node)`: how the kernel the backend compiles for that node treats layouts.
LayoutPlan planLayouts(const ir::Graph& g, int block, const std::function<LayoutUse(const ir::Node&)>& use);

// The block oneDNN's convolutions prefer on this CPU (16 with AVX-512, 8 with AVX2),
// or 0 without oneDNN or on other CPUs.
int preferredBlock();

// The 5-D view [N, C/block, H, W, block] of an NCHW shape, and the strides (in
// elements of the operand) that read operand `s`, broadcast to `nchw`, at each
// element of that view. Used to read plain broadcast operands of blocked clusters.
void blockedBroadcast(const Shape& nchw, const std::vector<int64_t>& plain_strides, int block, Shape* dims,
                      std::vector<int64_t>* strides);

}  // namespace gkrt::cpu
