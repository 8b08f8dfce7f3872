// int8 convolution and matmul through oneDNN (host builds with libdnnl-dev):
// QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger (runtime/ir/ops/quant_linear.cc).
//
//   if (canRunOneDnnInt8(g, node, sat)) { auto k = compileOneDnnInt8(g, node, sat); if (k.ok()) ... }
// `saturating`: BackendOptions::cpu_int8_saturating.
//
// u8 or s8 activations, s8 weights (constant weights reordered once at compile into the
// layout oneDNN picks), the requantization of the QLinear ops as oneDNN output scales
// (per tensor, or per output channel / column: x_scale * w_scale[o] / y_scale) with the
// source and destination zero points as zero-point attributes, the int32 bias fused.
// The *Integer ops give int32; their activation zero point may be a run-time value (the
// DynamicQuantizeLinear of a dynamically quantized model), passed at each launch.
// Weight zero points must be zero (onnxruntime's quantizer writes symmetric int8
// weights), except a per-tensor one on a matmul. Cases oneDNN refuses (u8 weights,
// per-row activation scales, ...) return an error and run the reference kernel.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace gkrt::cpu {

// Whether this build has oneDNN and `node` is one of the int8 ops in a form it takes.
bool canRunOneDnnInt8(const ir::Graph& g, const ir::Node& node, bool saturating);
StatusOr<std::unique_ptr<Kernel>> compileOneDnnInt8(const ir::Graph& g, const ir::Node& node, bool saturating);

}  // namespace gkrt::cpu
