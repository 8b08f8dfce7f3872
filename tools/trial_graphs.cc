#include "tools/trial_graphs.h"

#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::tools {

StatusOr<ir::Graph> mergeTrialGraphs(ir::Graph a, const ir::Graph& b, const std::string& fix) {
  auto sizeDependent = [&](const std::string& what) {
    return makeError(StatusCode::kUnsupported, what, " depends on the sizes of the model's dynamic dims, which gkrt "
                     "cannot keep dynamic there; ", fix);
  };
  if (a.nodes.size() != b.nodes.size() || a.tensors.size() != b.tensors.size() || a.inputs != b.inputs ||
      a.outputs != b.outputs) {
    return sizeDependent("the converted graph's structure (" + std::to_string(a.nodes.size()) + " vs " +
                         std::to_string(b.nodes.size()) + " nodes at two trial sizes)");
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node &na = a.nodes[i], &nb = b.nodes[i];
    if (na.op != nb.op || na.inputs != nb.inputs || na.outputs != nb.outputs) {
      return sizeDependent("the graph's structure at " + ir::describeNode(a, static_cast<int>(i)));
    }
    if (na.attrs != nb.attrs) {
      return sizeDependent(ir::describeNode(a, static_cast<int>(i)) + " (its attributes are " + na.attrs.toString() +
                           " at one trial size and " + nb.attrs.toString() + " at another)");
    }
  }
  for (size_t t = 0; t < a.tensors.size(); ++t) {
    const ir::Tensor &ta = a.tensors[t], &tb = b.tensors[t];
    bool same = ta.dtype == tb.dtype && ta.isConstant() == tb.isConstant();
    if (same && ta.isConstant()) {
      same = ta.constant->size == tb.constant->size && ta.shape == tb.shape &&
             (ta.constant->data == tb.constant->data ||  // shared by both conversions
              std::memcmp(ta.constant->data, tb.constant->data, ta.constant->size) == 0);
    }
    if (!same) return sizeDependent(ir::describeTensor(a, static_cast<int>(t)) + " (a folded constant)");
    if (ta.isConstant()) continue;
    if (ta.shape.size() != tb.shape.size()) {
      return sizeDependent("the rank of " + ir::describeTensor(a, static_cast<int>(t)));
    }
    ir::Tensor& out = a.tensors[t];
    for (size_t d = 0; d < out.shape.size(); ++d) {
      if (ta.shape[d] != tb.shape[d]) out.shape[d] = kUnknownDim;
    }
    out.value = nullptr;
  }
  return a;
}

}  // namespace gkrt::tools
