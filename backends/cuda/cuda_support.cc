#include "backends/cuda/cuda_support.h"

#include "backends/codegen/cluster_renderer.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cuda {

CudaKernelKind cudaKernelKind(const ir::Graph& g, const ir::Node& node, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return CudaKernelKind::kNone;
  };
  if (!node.op) return no("no op");
  if (!node.subgraph && node.op->op_class == OpClass::kReshape) {
    if (node.inputs.size() == 1 && node.inputs[0] >= 0 && node.outputs.size() == 1 &&
        g.tensors[node.inputs[0]].dtype == g.tensors[node.outputs[0]].dtype) {
      return CudaKernelKind::kCopy;
    }
  }
  auto gemm = gemmPlanFor(g, node);
  if (gemm.ok()) return CudaKernelKind::kCublasLt;
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
