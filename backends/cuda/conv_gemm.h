// Conv2D as a GEMM on cuda: the weights [K, C*R*S] times the input's columns [C*R*S, OH*OW]
// through cuBLASLt (per image, the weights shared), the columns gathered into the workspace
// by an im2col kernel (none for a 1x1 convolution with stride 1 and no padding: the input
// is the matrix), and the plan's bias, residual and ReLU applied by one elementwise kernel
// over the output. cuDNN's float32 algorithms run the deep 3x3 layers of ResNet-50 at 1-2
// TFLOP/s where cuBLAS reaches 10 (bench/README.md, bench/cuda_conv_shapes.py), so
// makeConvKernel times cuDNN's pick and the GEMM at compile and keeps the faster.
// GKRT_CUDA_CONV=cudnn|gemm forces one (auto, the default, times both; CudaBackend::create
// reads it beside GKRT_CUDA_GRAPHS).
//
//   ASSIGN_OR_RETURN(auto k, cuda::makeConvKernel(dnn, lt, stream, plan, what, precision, mode, generated));
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/codegen/cluster_renderer.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/cudnn_conv.h"

namespace gkrt::cuda {

enum class ConvMode { kAuto, kCudnn, kGemm };
// GKRT_CUDA_CONV's value: null, "" or "auto", "cudnn", "gemm"; anything else an error naming it.
StatusOr<ConvMode> convModeOf(const char* value);

// Whether the GEMM form can run `plan` (one group; any stride, padding and dilation).
bool convGemmApplies(const ConvPlan& plan);
// Whether the input is the GEMM's right matrix as it is (1x1, stride 1, no padding).
bool convGemmIsDirect(const ConvPlan& plan);

// The kernels of the GEMM form, in the CUDA dialect (elementwise: one thread per item,
// grid-stride loop). im2col: (float* cols, const float* x), items N*CRS*P. The epilogue:
// (float* y, [const float* bias], [const float* residual]) in place on the output, items
// N*K*P; kUnsupported when the plan has nothing to apply after the GEMM.
codegen::RenderedKernel renderIm2col(const ConvPlan& plan, const std::string& name);
StatusOr<codegen::RenderedKernel> renderConvEpilogue(const ConvPlan& plan, const std::string& name);

// Renders a kernel under the entry name the session gives it, registers it in the
// session's module (built after every node compiled) and returns it (CudaBackend's slots).
using KernelRender = std::function<StatusOr<codegen::RenderedKernel>(const std::string& entry)>;
using GeneratedKernelMaker = std::function<StatusOr<std::unique_ptr<Kernel>>(const KernelRender& render, const std::string& what)>;

// The convolution `plan` as cuDNN runs it or as the GEMM form (ConvMode); inputs x, w,
// [bias], [residual] as makeCudnnConv's. `lt` may be null (cuDNN only).
StatusOr<std::unique_ptr<Kernel>> makeConvKernel(std::shared_ptr<Cudnn> dnn, std::shared_ptr<CublasLt> lt,
                                                 std::shared_ptr<CudaStream> stream, const ConvPlan& plan, const std::string& what,
                                                 Precision precision, ConvMode mode, const GeneratedKernelMaker& generated);

}  // namespace gkrt::cuda
