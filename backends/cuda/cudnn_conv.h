// Conv2D through cuDNN's convolution API (float32 NCHW activations, OIHW weights, any
// group count, dilation and stride), the bias added by cudnnAddTensor, or with its
// epilogue ReLU(conv + bias [+ residual]) in one cudnnConvolutionBiasActivationForward. libcudnn is
// opened with dlopen when a cuda session first meets a convolution, so gkrt starts and
// runs without it: the convolutions then fall back to the cpu backend, with the reason
// logged once. Algorithms are chosen at compile by cuDNN's own timing
// (cudnnFindConvolutionForwardAlgorithm); float32 keeps tensor-core math (TF32) off,
// `--precision tf32|fp16|bf16` lets cuDNN use it.
//
//   if (cuda::convPlanFor(g, node).ok()) kernel = cuda::makeCudnnConv(dnn, stream, plan, what, precision);
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/cuda_kernels.h"

namespace gkrt::cuda {

// The convolution a Conv2D node asks for; kUnsupported says why cuDNN cannot run it.
// Needs no device.
struct ConvPlan {
  int n = 0, c = 0, h = 0, w = 0;        // input
  int k = 0, kh = 0, kw = 0;             // weights [k, c / groups, kh, kw]
  int oh = 0, ow = 0;                    // output
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  bool bias = false;                     // input 2
  // The epilogue cuDNN applies in the same call (cudnnConvolutionBiasActivationForward):
  // y = ReLU(conv(x) + bias + z), z being input 3 when `residual`. Needs the bias.
  bool relu = false, residual = false;
};
StatusOr<ConvPlan> convPlanFor(const ir::Graph& g, const ir::Node& node);

// A convolution epilogue (backends/conv_epilogue.h): the convolution's plan, and whether
// cuDNN's fused call covers the whole chain (ReLU(conv + bias) or ReLU(conv + bias + r)
// with r one of the node's inputs, `residual_input`); else the chain runs as a generated
// kernel over the convolution's output. Needs no device.
struct ConvEpiloguePlan {
  ConvPlan conv;
  bool whole = false;
  int residual_input = -1;
};
StatusOr<ConvEpiloguePlan> convEpiloguePlanFor(const ir::Node& node);

// cuDNN for one device; opened once per process. kUnsupported (with the reason) when
// the library cannot be loaded.
struct Cudnn;
StatusOr<std::shared_ptr<Cudnn>> openCudnn(const std::shared_ptr<CudaDevice>& dev);

StatusOr<std::unique_ptr<Kernel>> makeCudnnConv(std::shared_ptr<Cudnn> dnn, std::shared_ptr<CudaStream> stream, const ConvPlan& plan,
                                                const std::string& what, Precision precision);

// The most workspace a cuDNN algorithm may ask the session for.
constexpr size_t kCudnnMaxWorkspaceBytes = size_t(64) << 20;

}  // namespace gkrt::cuda
