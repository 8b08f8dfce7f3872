// A convolution epilogue (backends/conv_epilogue.h) on cuda: the cuDNN convolution
// kernel (with the whole chain in its call when cuDNN's fused form covers it), then,
// when it does not, the rest of the chain as one generated kernel over the output in
// place. The convolution's constant operands (weights, bias; zeros for a fused call on a
// convolution without bias) live in device memory this kernel owns.
#pragma once

#include <memory>

#include "backends/conv_epilogue.h"
#include "backends/cuda/cuda_kernels.h"

namespace gkrt::cuda {

// `rest`: null when `conv` runs the whole chain. `zero_bias_channels` > 0: the convolution
// has no bias but its fused call needs one, of that many zeros. `residual_input`: the
// node input `conv` reads as its input 3 (-1: none).
StatusOr<std::unique_ptr<Kernel>> makeConvEpilogueKernel(std::shared_ptr<CudaStream> stream, const ConvEpilogueSplit& split,
                                                         std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest,
                                                         int zero_bias_channels, int residual_input);

}  // namespace gkrt::cuda
