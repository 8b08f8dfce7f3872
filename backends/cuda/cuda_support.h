// What the cuda backend runs, decided from the graph alone (no device needed, so the
// NVRTC compile tests use the same answer as the backend):
//  - GEMMs cuBLASLt takes (backends/cuda/cublaslt_matmul.h),
//  - Reshape-class ops as device copies,
//  - every node the shared renderer spells in the CUDA dialect (fused clusters,
//    single elementwise/reduce ops, Transpose, Slice, constant Pad, Concat, ...).
// Everything else (Conv2D, pooling, Gather, pattern ops other than the matmul_elem
// ones, ...) is declined and falls back to the cpu backend with copies.
#pragma once

#include <string>

#include "runtime/ir/graph.h"

namespace gkrt::cuda {

enum class CudaKernelKind { kNone, kCublasLt, kCopy, kGenerated };

// How the cuda backend runs `node`; kNone with `why` set when it does not.
CudaKernelKind cudaKernelKind(const ir::Graph& g, const ir::Node& node, std::string* why = nullptr);

// Threads per block every CUDA device of compute capability >= 3.0 allows.
constexpr int kMaxThreadsPerBlock = 1024;

}  // namespace gkrt::cuda
