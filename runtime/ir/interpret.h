// Runs a graph op by op with the reference kernels: the oracle for every backend,
// also used for a Fused node's subgraph and for constant folding.
#pragma once

#include <vector>

#include "runtime/ir/graph.h"
#include "runtime/ir/tensor_view.h"

namespace gkrt::ir {

// `g` must be validated with shapes inferred for these inputs; outputs are
// preallocated with the graph outputs' shapes. Intermediates are allocated here.
Status interpretGraph(const Graph& g, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs);

}  // namespace gkrt::ir
