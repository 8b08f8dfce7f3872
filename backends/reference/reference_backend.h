// The reference backend: every node runs its op's reference kernel (a Fused node
// interprets its subgraph). Slow, obvious, complete; the oracle the other backends
// are tested against.
#pragma once

#include "backends/backend.h"

namespace gkrt {

class ReferenceBackend : public Backend {
 public:
  ReferenceBackend() = default;
  // With a communicator of several ranks, AllReduce and MatMulAllReduce sum over them.
  explicit ReferenceBackend(const BackendOptions& options) : comm_(options.communicator) {}
  const char* name() const override { return "reference"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kCpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;

 private:
  std::shared_ptr<Communicator> comm_;
};

// A kernel running `node`'s reference implementation; shared by host backends for
// ops they do not specialise.
std::unique_ptr<Kernel> makeReferenceKernel(const ir::Node& node);

}  // namespace gkrt
