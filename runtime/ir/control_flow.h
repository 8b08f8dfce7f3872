// ONNX If / Loop / Scan semantics over host memory, shared by the reference kernels
// (which interpret the subgraphs) and the session's control-flow kernels (which run
// subgraphs compiled once for the session's backend).
//
//   // at compile, from the node's input and output types (data pointers unused):
//   ASSIGN_OR_RETURN(ir::ControlFlowFrame frame, ir::ControlFlowFrame::prepare(node, input_types, output_types));
//   // at run:
//   auto body = [&](size_t which, const std::vector<TensorView>& in,
//                   const std::vector<MutableTensorView>& out) { return child[which]->run(in, out); };
//   RETURN_IF_ERROR(ir::runControlFlow(node, inputs, outputs, body, frame));
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

// Working memory of one control-flow node, made once from its input and output types
// (a session does it at compile) and reused by every run, which then allocates
// nothing: buffers for the values a loop or scan carries (current and next) and for
// scan slices, and the views handed to the subgraphs with their shapes already set, so
// a run only points them at data.
struct ControlFlowFrame {
  static StatusOr<ControlFlowFrame> prepare(const Node& n, const std::vector<TensorView>& inputs,
                                            const std::vector<MutableTensorView>& outputs);
  // Bytes of its buffers (fixed once prepared; runs never grow them).
  size_t bufferBytes() const;

  std::vector<std::vector<uint8_t>> buffers;     // everything below points into these
  int64_t* iteration = nullptr;                  // Loop: the body's iteration and cond inputs, its cond output
  uint8_t *cond_in = nullptr, *cond_out = nullptr;
  std::vector<uint8_t*> current, next;           // Loop carried values / Scan states, swapped after each step
  std::vector<TensorView> body_in, row_in;       // row_*: Scan-8's views of one batch row of the node's tensors
  std::vector<MutableTensorView> body_out, row_out;
};

// If: the branch (0 then, 1 else) that holds a placeholder because it could not be built
// at the shapes the model was converted with (IfAttrs), or -1. Sessions do not compile
// it; taking it is a run-time error naming the node and the fix.
int64_t unbuiltBranch(const Node& n);

// Runs node `n` (If, Loop or Scan) with `run` executing its subgraphs.
Status runControlFlow(const Node& n, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs, const SubgraphRunner& run,
                      ControlFlowFrame& frame);

}  // namespace gkrt::ir
