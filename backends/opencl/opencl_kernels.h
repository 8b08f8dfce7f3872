// The opencl backend's kernels. Each is created at session compile with a KernelSlot
// naming its entry point in the session's program; the backend builds that program
// once every node is compiled (OpenClBackend::finishCompile) and fills the slots.
// Views hand kernels cl_mem handles (OpenClBackend::allocate).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/codegen/cluster_renderer.h"
#include "backends/opencl/cl_device.h"

namespace gkrt::opencl {

struct KernelSlot {
  std::string entry;    // the kernel function's name in the program
  std::string source;   // its generated source; empty for a library kernel
  std::string what;     // the node, for error messages
  cl_kernel kernel = nullptr;
  ~KernelSlot() {
    if (kernel) clReleaseKernel(kernel);
  }
};

// Whether the hand-written kernels run `node` (MatMul/BatchMatMul/Gemm, Conv2D,
// MaxPool/AvgPool, Softmax/LogSoftmax, LayerNorm, the Reshape class as a copy, and the
// pattern ops MatMulBiasAdd/Add/Relu/Gelu).
bool libraryRuns(const ir::Graph& g, const ir::Node& node);

StatusOr<std::unique_ptr<Kernel>> makeLibraryKernel(const std::shared_ptr<ClDevice>& dev, const ir::Graph& g,
                                                    const ir::Node& node, std::shared_ptr<KernelSlot> slot);

// `extra`: buffers passed after the kernel's constants (Gather's fault record), not owned.
StatusOr<std::unique_ptr<Kernel>> makeGeneratedKernel(const std::shared_ptr<ClDevice>& dev, codegen::RenderedKernel k,
                                                      std::shared_ptr<KernelSlot> slot, std::vector<cl_mem> extra = {});

}  // namespace gkrt::opencl
