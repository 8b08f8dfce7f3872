// MatMul, BatchMatMul, Gemm and the matmul_elem_* pattern ops (MatMulBiasAdd,
// MatMulAdd, MatMulRelu, MatMulGelu; MatMulAllReduce of one rank) through cuBLASLt, with
// the bias and activation as cuBLASLt epilogues (GELU's erf form as a second kernel). libcublasLt is opened with dlopen when a cuda backend first
// needs it, so gkrt starts without it. float32 with float32 accumulation (no TF32).
//
//   if (cuda::gemmPlanFor(g, node).ok()) kernel = cuda::makeCublasLtMatmul(lt, stream, g, node);
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cuda/cuda_kernels.h"

namespace gkrt::cuda {

// The GEMM a node asks for, in gkrt's row-major terms; kUnsupported says why cuBLASLt
// cannot run it (the node then falls back). Needs no device.
struct GemmPlan {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transpose_a = false, transpose_b = false;
  int64_t batch_stride_a = 0, batch_stride_b = 0;  // elements; 0 = broadcast over the batch
  float alpha = 1.0f, beta = 0.0f;
  int c_input = -1;      // input added as a full matrix (Gemm's C, MatMulAdd's residual)
  int bias_input = -1;   // input added per output column (epilogue)
  // kGeluErf: cuBLASLt's GELU epilogue is the tanh form, so the erf form runs cuBLASLt with
  // the bias epilogue alone and then renderErfGeluEpilogue's kernel over the output.
  enum class Activation { kNone, kRelu, kGeluTanh, kGeluErf } activation = Activation::kNone;
};
StatusOr<GemmPlan> gemmPlanFor(const ir::Graph& g, const ir::Node& node);

// cuBLASLt for one device; opened once per process.
struct CublasLt;
StatusOr<std::shared_ptr<CublasLt>> openCublasLt(const std::shared_ptr<CudaDevice>& dev);

// Picks the algorithm at compile; launch() runs it on `stream`.
// `precision`: the cuBLASLt compute type (float32 tensors; kFloat32 keeps TF32 off).
StatusOr<std::unique_ptr<Kernel>> makeCublasLtMatmul(std::shared_ptr<CublasLt> lt, std::shared_ptr<CudaStream> stream, GemmPlan plan,
                                                     const std::string& what, Precision precision);

// Workspace bytes every cuBLASLt kernel asks the session for.
constexpr size_t kCublasLtWorkspaceBytes = size_t(8) << 20;

}  // namespace gkrt::cuda
