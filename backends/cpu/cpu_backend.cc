#include "backends/cpu/cpu_backend.h"

#include "backends/reference/reference_backend.h"
#include "runtime/ir/op_def.h"

namespace gkrt {

bool CpuBackend::supports(const ir::Graph&, const ir::Node& node) const { return node.op && node.op->reference; }

StatusOr<std::unique_ptr<Kernel>> CpuBackend::compile(const ir::Graph&, const ir::Node& node) {
  return makeReferenceKernel(node);
}

}  // namespace gkrt
