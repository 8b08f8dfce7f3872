// int8 convolution and matmul through oneDNN (host builds with libdnnl-dev):
// QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger (runtime/ir/ops/quant_linear.cc),
// and with a float32 result MatMulIntegerToFloat[Relu|Gelu] and QuantBatchMatMul (the
// scales as a binary multiply post-op, the bias as a binary add).
//
//   if (canRunOneDnnInt8(g, node)) { auto k = compileOneDnnInt8(g, node, path, pool); if (k.ok()) ... }
// `path`: from BackendOptions::cpu_int8_saturating / cpu_int8_float.
//
// u8 or s8 activations, s8 weights (constant weights reordered once at compile into the
// layout oneDNN picks), the requantization of the QLinear ops as oneDNN output scales
// (per tensor, or per output channel / column: x_scale * w_scale[o] / y_scale) with the
// source and destination zero points as zero-point attributes, the int32 bias fused.
// The *Integer ops give int32; their activation zero point may be a run-time value (the
// DynamicQuantizeLinear of a dynamically quantized model), passed at each launch.
// Weight zero points must be zero (onnxruntime's quantizer writes symmetric int8
// weights), except a per-tensor one on a matmul. Where the CPU has no VNNI, and for u8
// weights (the activation x activation matmuls of attention), the integer operands run
// as float32 in oneDNN (exact while |sum| < 2^24) and gkrt requantizes, on the threads.
// Cases oneDNN refuses (per-row activation scales, ...) return an error and run the
// own int8 GEMM or the reference kernel.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// Whether this build has oneDNN and `node` is one of the int8 ops in a form it takes.
// kAuto: oneDNN's int8 kernels where the CPU has VNNI (exact), the float path elsewhere;
// kSaturating: the int8 kernels everywhere; kFloat: the float path everywhere.
enum class Int8Path { kAuto, kSaturating, kFloat };

bool canRunOneDnnInt8(const ir::Graph& g, const ir::Node& node);
// `x_nhwc`, `y_nhwc`: a convolution's input / output stored NHWC (int8_layout.h).
StatusOr<std::unique_ptr<Kernel>> compileOneDnnInt8(const ir::Graph& g, const ir::Node& node, Int8Path path,
                                                    ThreadPool& pool, bool x_nhwc = false, bool y_nhwc = false);

}  // namespace gkrt::cpu
