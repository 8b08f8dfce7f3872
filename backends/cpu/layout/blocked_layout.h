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
//
// Channels-last plans (`channels_last`): the same plan with "blocked" meaning NHWC, the
// block of each tensor its own channel count (nChw{C}c is NHWC), so every channel count
// qualifies. Chosen per graph (channelsLastSuits) where oneDNN's convolutions cannot
// take the channel blocks: grouped convolutions whose groups hold channels that are not
// a multiple of the block (ShuffleNet's 4 groups of 34) run only on NHWC (brgconv) or
// plain (gemm:jit, 1.5-18x slower), so a blocked plan reordered twice per convolution;
// and graphs where three convolutions in four have channel counts off the block (their
// tensors stay plain in a blocked plan, reordered at each convolution: MobileNetV3).
// In such a plan gkrt's own blocked pooling, Resize, Split, Concat copies and the int8
// NHWC plan stand aside (oneDNN's pooling and concat take NHWC).
// BackendOptions::cpu_blocked_layout (or GKRT_CPU_LAYOUT=plain, read by CpuBackend's
// constructor with the rest of its options) turns blocked layouts off.
#pragma once

#include <functional>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::cpu {

struct LayoutPlan {
  int block = 0;              // 8 or 16; 0: every tensor plain
  bool channels_last = false; // "blocked" tensors are NHWC (a tensor's block: its channels)
  std::vector<char> blocked;  // per tensor of the graph
  std::vector<char> nhwc;     // per tensor: int8 activations stored NHWC (int8_layout.h)
  bool isBlocked(int t) const { return t >= 0 && static_cast<size_t>(t) < blocked.size() && blocked[t]; }
  bool isNhwc(int t) const { return t >= 0 && static_cast<size_t>(t) < nhwc.size() && nhwc[t]; }
  // The block of a blocked tensor with `channels` channels.
  int blockOf(int64_t channels) const { return channels_last ? static_cast<int>(channels) : block; }
};

enum class LayoutUse {
  kPlain,     // needs plain NCHW
  kAdapts,    // takes each operand in either layout
  kAgnostic,  // elementwise: full-size operands and outputs in one layout
  kSame,      // its first input and its outputs in one layout (Resize, channel Split)
};

// `use(node)`: how the kernel the backend compiles for that node treats layouts.
LayoutPlan planLayouts(const ir::Graph& g, int block, bool channels_last,
                       const std::function<LayoutUse(const ir::Node&)>& use);

// Whether a channels-last plan suits g better than channel blocks of `block`: at least
// a quarter of its convolutions (Conv2D nodes, also as a convolution epilogue's first
// node) are grouped (1 < groups < channels) with a group's input or output channels not
// a multiple of the block, and `nhwc_fast` (when given) says each of those has a fast NHWC
// kernel on this CPU tier (oneDNN 2.6: the AVX-512 brgemm convolutions; on AVX2 only its
// reference code takes them, so those graphs stay channel-blocked there).
// `nhwc_fast(g, node)`: node is the Conv2D or the convolution epilogue of g that holds it.
using ConvFilter = std::function<bool(const ir::Graph& g, const ir::Node& conv)>;
bool channelsLastSuits(const ir::Graph& g, int block, const ConvFilter& nhwc_fast = nullptr);

// The plan a kernel is probed with before the graph's plan exists (is a fast kernel there
// for this node as the plan may lay it out?): `tensors` blocked where planLayouts could
// block them (the channels allow, or a channels-last plan; not graph inputs, which stay
// plain), every other tensor plain.
LayoutPlan probeLayout(const ir::Graph& g, int block, bool channels_last, std::initializer_list<int> tensors);

// The block oneDNN's convolutions prefer on this CPU (16 with AVX-512, 8 with AVX2),
// or 0 without oneDNN or on other CPUs.
int preferredBlock();

// The 5-D view [N, C/block, H, W, block] of an NCHW shape, and the strides (in
// elements of the operand) that read operand `s`, broadcast to `nchw`, at each
// element of that view. Used to read plain broadcast operands of blocked clusters.
void blockedBroadcast(const Shape& nchw, const std::vector<int64_t>& plain_strides, int block, Shape* dims,
                      std::vector<int64_t>* strides);

}  // namespace gkrt::cpu
