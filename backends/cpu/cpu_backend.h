// The `cpu` backend: the production host backend, following the CPU column of the
// fusion tables. Fast paths: the fused-loop executor for elementwise clusters and ops
// (backends/cpu/fused_elementwise.h) and a packed GEMM for MatMul/BatchMatMul/Gemm
// (backends/cpu/gemm.h), on one thread pool; other nodes run their reference kernels.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  ~CpuBackend() override;
  const char* name() const override { return "cpu"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kCpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;

 private:
  BackendOptions options_;
  std::unique_ptr<cpu::ThreadPool> pool_;
};

}  // namespace gkrt
