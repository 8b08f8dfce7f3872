// Which int8 activations the cpu backend stores NHWC, decided once per graph after the
// float layout plan (blocked_layout.h). oneDNN's int8 convolutions read and write NHWC
// only (2.6 has no blocked int8 layout), so a QDQ network whose int8 tensors stay NCHW
// reorders twice per convolution (~9 of 36 ms in the QDQ ResNet-50 at 1 thread). A
// uint8/int8 4-D tensor is stored NHWC when
//   - it is static, not a graph input, output or constant, and its channels are a
//     multiple of the plan's block;
//   - its producer and every consumer take it NHWC (`takes_nhwc`: a QLinearConv on
//     oneDNN as its x or y; a per-tensor QuantizeLinear as y or DequantizeLinear as x
//     on the own loops, quant_kernels.h, which convert between NHWC and the float
//     side's layout; a 256-entry byte lookup or an int8 MaxPool, x and y in one
//     layout), and at least one of them is a QLinearConv (or is tied through such a
//     lookup or pool to a tensor beside one);
//   - the float side of each of those Q/DQ is channel-blocked in the float plan, so each
//     conversion moves contiguous runs of channels.
#pragma once

#include <functional>

#include "backends/cpu/layout/blocked_layout.h"

namespace gkrt::cpu {

void planInt8Nhwc(const ir::Graph& g, LayoutPlan* plan, const std::function<bool(const ir::Node&, int tensor)>& takes_nhwc);

}  // namespace gkrt::cpu
