// A convolution epilogue (backends/conv_epilogue.h) on opencl: the library convolution
// kernel, then the rest of the chain as one generated kernel over its output in place.
// The convolution's constant operands (weights, bias) are buffers this kernel owns.
#pragma once

#include <memory>

#include "backends/conv_epilogue.h"
#include "backends/opencl/opencl_kernels.h"

namespace gkrt::opencl {

StatusOr<std::unique_ptr<Kernel>> makeConvEpilogueKernel(const std::shared_ptr<ClDevice>& dev, const ConvEpilogueSplit& split,
                                                         std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest);

}  // namespace gkrt::opencl
