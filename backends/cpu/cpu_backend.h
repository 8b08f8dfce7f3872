// The `cpu` backend: the production host backend, following the CPU column of the
// fusion tables. Its fast paths (fused-loop executor, oneDNN GEMM/convolution) land
// with the CPU-backend issue; until then every node runs the reference kernel.
#pragma once

#include "backends/backend.h"

namespace gkrt {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) : options_(options) {}
  const char* name() const override { return "cpu"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kCpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;

 private:
  BackendOptions options_;
};

}  // namespace gkrt
