// ONNX If / Loop / Scan semantics over host memory, shared by the reference kernels
// (which interpret the subgraphs) and the session's control-flow kernels (which run
// subgraphs compiled once for the session's backend).
//
//   ir::ControlFlowScratch scratch;   // kept with the kernel, reused by every run
//   auto body = [&](size_t which, const std::vector<TensorView>& in,
//                   const std::vector<MutableTensorView>& out) { return child[which]->run(in, out); };
//   RETURN_IF_ERROR(ir::runControlFlow(node, inputs, outputs, body, scratch));
//
// Binding (the node's inputs and outputs by position, outer values explicit):
//   If    inputs {cond, captured...};            branches: inputs {captured...}, outputs = node outputs
//   Loop  inputs {M, cond, carried..., captured...}; body inputs {iteration, cond, carried..., captured...},
//         body outputs {cond, carried..., scan outputs...}; node outputs {carried..., scan outputs...}
//   Scan  inputs {state..., scanned..., captured...}; body inputs {state..., slices..., captured...},
//         body outputs {state..., scan output slices...}; node outputs {state..., scan outputs...}
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/ir/graph.h"
#include "runtime/ir/tensor_view.h"

namespace gkrt::ir {

using SubgraphRunner = std::function<Status(size_t which, const std::vector<TensorView>& inputs,
                                            const std::vector<MutableTensorView>& outputs)>;

// Working memory of one control-flow node: sized by the first run, reused afterwards
// (the shapes of a compiled node never change).
struct ControlFlowScratch {
  std::vector<std::vector<uint8_t>> slots;
  uint8_t* get(size_t slot, size_t bytes) {
    if (slots.size() <= slot) slots.resize(slot + 1);
    if (slots[slot].size() < bytes) slots[slot].resize(bytes);
    return slots[slot].data();
  }
};

// Runs node `n` (If, Loop or Scan) with `run` executing its subgraphs.
Status runControlFlow(const Node& n, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs, const SubgraphRunner& run,
                      ControlFlowScratch& scratch);

}  // namespace gkrt::ir
