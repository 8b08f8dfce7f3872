// CUDA kernels for the single ops the shared renderer (backends/codegen) does not spell
// and cuDNN/cuBLASLt do not cover. Hand-written here: MaxPool and AvgPool (float32,
// asymmetric padding and ceil_mode as the reference kernel has them), GlobalAvgPool (one
// warp per plane); elementwise-shaped (one thread per output element, grid-stride loop).
// From backends/codegen, the texts the opencl backend runs too: the pattern ops
// (pattern_kernels.h, launched as reduce kernels where they are) and Gather, Split and
// Resize (movement_kernels.h). All are built by NVRTC into the session's module.
//
// Gather's indices arrive at run time, so a bad one cannot fail at compile: the kernel
// records the first out-of-range index in the session's fault record (pinned host
// memory the device writes to) and the backend reports it when the run synchronises.
#pragma once

#include <string>

#include "backends/codegen/cluster_renderer.h"
#include "backends/codegen/movement_kernels.h"

namespace gkrt::cuda {

// What a kernel writes when it meets bad data (Gather: an index out of range).
using FaultRecord = codegen::KernelFaultRecord;

// `node` rendered as CUDA kernel `name`, or kUnsupported with the reason. `fault_id`
// is what a Gather writes into FaultRecord::kernel; such kernels take a FaultRecord*
// after their inputs (codegen::usesFaultRecord).
StatusOr<codegen::RenderedKernel> renderLibraryKernel(const ir::Graph& g, const ir::Node& node, const std::string& name, int fault_id);

// MatMulGelu with GELU's erf form: the GeLU applied in place to `node`'s output after
// cuBLASLt wrote x @ w + bias into it (the renderer's GeLU, the text every backend's
// clusters use). Launched with the output as its input and its output. kUnsupported for
// any other node (the tanh form included: cuBLASLt's GELU epilogue is that one).
StatusOr<codegen::RenderedKernel> renderErfGeluEpilogue(const ir::Graph& g, const ir::Node& node, const std::string& name);

}  // namespace gkrt::cuda
