// Hand-written CUDA kernels for the single ops the shared renderer (backends/codegen)
// does not spell and cuDNN/cuBLASLt do not cover: Gather (any element type; the
// embeddings of every transformer), MaxPool and AvgPool (float32, asymmetric padding
// and ceil_mode as the reference kernel has them), GlobalAvgPool (one warp per plane). They are elementwise-shaped: one
// thread per output element in a grid-stride loop, launched like a rendered kernel and
// built by NVRTC into the session's module. The pattern ops AddLayerNorm/AddRmsNorm,
// SwiGLU and FlashAttention come from backends/codegen/pattern_kernels.h, Split and
// Resize from backends/codegen/movement_kernels.h (the same
// text the opencl backend runs), launched as reduce kernels (work-groups) where they are.
//
// Gather's indices arrive at run time, so a bad one cannot fail at compile: the kernel
// records the first out-of-range index in the session's fault record (pinned host
// memory the device writes to) and the backend reports it when the run synchronises.
#pragma once

#include <string>

#include "backends/codegen/cluster_renderer.h"

namespace gkrt::cuda {

// What a kernel writes when it meets bad data (Gather: an index out of range).
struct FaultRecord {
  int kernel;  // the writing kernel's id + 1; 0 while nothing went wrong
  int pad;
  long long value;     // the bad index
  long long position;  // where it was in the indices
};

// `node` rendered as CUDA kernel `name`, or kUnsupported with the reason. `fault_id`
// is what a Gather writes into FaultRecord::kernel; such kernels take a FaultRecord*
// after their inputs (usesFaultRecord).
StatusOr<codegen::RenderedKernel> renderLibraryKernel(const ir::Graph& g, const ir::Node& node, const std::string& name, int fault_id);
bool usesFaultRecord(const ir::Node& node);

// MatMulGelu with GELU's erf form: the GeLU applied in place to `node`'s output after
// cuBLASLt wrote x @ w + bias into it (the renderer's GeLU, the text every backend's
// clusters use). Launched with the output as its input and its output. kUnsupported for
// any other node (the tanh form included: cuBLASLt's GELU epilogue is that one).
StatusOr<codegen::RenderedKernel> renderErfGeluEpilogue(const ir::Graph& g, const ir::Node& node, const std::string& name);

}  // namespace gkrt::cuda
