// What the cuda backend runs, decided from the graph alone (no device needed, so the
// NVRTC compile tests use the same answer as the backend):
//  - GEMMs cuBLASLt takes (backends/cuda/cublaslt_matmul.h),
//  - Conv2D through cuDNN (backends/cuda/cudnn_conv.h) where the build has its headers
//    and the session could load it,
//  - Reshape-class ops as device copies,
//  - Gather, MaxPool, AvgPool as hand-written kernels (cuda_library_kernels.h), and
//    AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention (codegen/pattern_kernels.h),
//  - every node the shared renderer spells in the CUDA dialect (fused clusters,
//    single elementwise/reduce ops, Transpose, Slice, constant Pad, Concat, ...).
// Everything else (MatMulSplit, the quantised pattern ops, recurrent ops, ...) is
// declined and falls back to the cpu backend with copies.
#pragma once

#include <string>

#include "runtime/ir/graph.h"

namespace gkrt::cuda {

enum class CudaKernelKind { kNone, kCublasLt, kCudnnConv, kCopy, kLibrary, kGenerated };

// Whether this build has the cuDNN convolution kernel (the toolkit had cudnn.h).
bool cudnnBuilt();

// How the cuda backend runs `node`; kNone with `why` set when it does not.
// `with_cudnn`: whether cuDNN can be used (built with it and, in a session, loadable).
CudaKernelKind cudaKernelKind(const ir::Graph& g, const ir::Node& node, std::string* why = nullptr, bool with_cudnn = cudnnBuilt());

// Threads per block every CUDA device of compute capability >= 3.0 allows.
constexpr int kMaxThreadsPerBlock = 1024;

}  // namespace gkrt::cuda
