#include "backends/cuda/cuda_support.h"

#include "backends/codegen/cluster_renderer.h"
#include "backends/conv_epilogue.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/cuda_library_kernels.h"
#include "backends/cuda/cudnn_conv.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cuda {

bool cudnnBuilt() {
#ifdef GKRT_HAVE_CUDNN
  return true;
#else
  return false;
#endif
}

CudaKernelKind cudaKernelKind(const ir::Graph& g, const ir::Node& node, std::string* why, bool with_cudnn) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return CudaKernelKind::kNone;
  };
  if (!node.op) return no("no op");
  // AllReduce of one rank is its input (CudaBackend declines it across ranks).
  if (!node.subgraph && (node.op->op_class == OpClass::kReshape || std::string(node.op->name) == "AllReduce")) {
    if (node.inputs.size() == 1 && node.inputs[0] >= 0 && node.outputs.size() == 1 &&
        g.tensors[node.inputs[0]].dtype == g.tensors[node.outputs[0]].dtype) {
      return CudaKernelKind::kCopy;
    }
  }
  auto gemm = gemmPlanFor(g, node);
  if (gemm.ok()) return CudaKernelKind::kCublasLt;
  if (auto e = convEpiloguePlanFor(node); e.status().message() != "not a convolution") {
    if (!e.ok()) return no(e.status().message());
    if (!with_cudnn) return no(cudnnBuilt() ? "cuDNN could not be loaded" : "this build has no cuDNN (the CUDA toolkit had no cudnn.h)");
    if (!e->whole) {
      auto split = splitConvEpilogue(node);
      if (!split.ok()) return no(split.status().message());
      auto rest = codegen::renderCluster(g, split->rest, "probe", codegen::cudaDialect());
      if (!rest.ok()) return no("the epilogue of the convolution: " + rest.status().message());
    }
    return CudaKernelKind::kCudnnConv;
  }
  auto conv = convPlanFor(g, node);
  if (conv.ok()) {
    if (with_cudnn) return CudaKernelKind::kCudnnConv;
    return no(cudnnBuilt() ? "cuDNN could not be loaded" : "this build has no cuDNN (the CUDA toolkit had no cudnn.h)");
  }
  if (conv.status().message() != "not a convolution") return no(conv.status().message());
  auto lib = renderLibraryKernel(g, node, "probe", 0);
  if (lib.ok()) return CudaKernelKind::kLibrary;
  if (lib.status().message() != "not a library kernel") return no(lib.status().message());
  auto k = codegen::renderCluster(g, node, "probe", codegen::cudaDialect());
  if (!k.ok()) {
    if (gemm.status().message() != "not a GEMM") return no(gemm.status().message());
    return no(k.status().message());
  }
  if (k->local_size > kMaxThreadsPerBlock) {
    return no("a block of " + std::to_string(k->local_size) + " threads exceeds CUDA's " + std::to_string(kMaxThreadsPerBlock));
  }
  return CudaKernelKind::kGenerated;
}

}  // namespace gkrt::cuda
