// The cuda backend's own kernels: fused clusters rendered to CUDA C++
// (backends/codegen, compiled by NVRTC into one module per session) and Reshape-class
// copies. Each kernel launches on its session's stream (CudaStream); views hand
// kernels CUdeviceptr values (CudaBackend::allocate).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/codegen/cluster_renderer.h"
#include "backends/cuda/cuda_device.h"
#include "runtime/base/communicator.h"

namespace gkrt::cuda {

// A session's stream, and what its launches do besides launching: record CUDA events
// while `gkrt bench --profile` times them. (enable_debug_mode needs nothing here: the
// session synchronises after each launch and names the failing kernel.)
struct CudaStream {
  std::shared_ptr<CudaDevice> dev;
  CUstream stream = nullptr;
  std::vector<std::pair<CUevent, CUevent>>* timed = nullptr;  // set while timing
  ~CudaStream();
  // Records a start event when timing; call before a launch.
  void beforeLaunch();
  // Records the end event when timing; checks the launch `r`, naming `what`.
  Status afterLaunch(CUresult r, const std::string& what);
};

// A loaded module; kernels keep it alive.
struct CudaModule {
  const Driver* cu = nullptr;
  CUmodule module = nullptr;
  ~CudaModule();
};

struct KernelSlot {
  std::string entry;   // the kernel function's name in the session's module
  std::string source;  // its generated source
  std::string what;    // the node, its fused ops and output shape, for error messages
  std::shared_ptr<CudaModule> module;
  CUfunction function = nullptr;
};

// `extra`: arguments after the kernel's constants (a library kernel's fault record).
StatusOr<std::unique_ptr<Kernel>> makeGeneratedKernel(std::shared_ptr<CudaStream> stream, codegen::RenderedKernel k,
                                                      std::shared_ptr<KernelSlot> slot, std::vector<CUdeviceptr> extra = {});
// Reshape, ExpandDims, Squeeze (and AllReduce of one rank): the bytes move unchanged.
std::unique_ptr<Kernel> makeCopyKernel(std::shared_ptr<CudaStream> stream);
// `first`, then `epilogue` over first's output 0 in place (its only input and output):
// a cuBLASLt GEMM and the activation cuBLASLt has no epilogue for.
std::unique_ptr<Kernel> makeKernelWithEpilogue(std::unique_ptr<Kernel> first, std::unique_ptr<Kernel> epilogue);
// AllReduce across the ranks of a device communicator (NCCL): input 0 copied to output 0
// (unless they share memory), then summed over the ranks in place on the stream.
std::unique_ptr<Kernel> makeAllReduceKernel(std::shared_ptr<CudaStream> stream, std::shared_ptr<Communicator> comm);

}  // namespace gkrt::cuda
