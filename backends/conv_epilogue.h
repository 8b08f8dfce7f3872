// A convolution epilogue (fusion/passes/cluster_passes.cc: a Fused node whose body is a
// Conv2D followed by the elementwise chain one convolution kernel can apply as it
// writes) split for a backend that runs it as two kernels or as one library call: the
// convolution, where each of its operands comes from, and the rest of the chain as a
// Fused node of its own that reads the convolution's output as its last input and
// writes the node's output (elementwise: in place over that output is safe).
//
//   if (isConvEpilogue(node)) { ASSIGN_OR_RETURN(ConvEpilogueSplit s, splitConvEpilogue(node)); ... }
#pragma once

#include <memory>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

bool isConvEpilogue(const ir::Node& node);

struct ConvEpilogueSplit {
  const ir::Graph* body = nullptr;   // the Fused node's body (owned by the node)
  const ir::Node* conv = nullptr;    // body->nodes[0]
  // Per input of the convolution: the Fused node's input it reads (>= 0), or -1 with
  // `constant` naming the body's constant tensor (nullptr for an absent input).
  struct Operand {
    int input = -1;
    const ir::Tensor* constant = nullptr;
  };
  std::vector<Operand> conv_operands;
  // The chain after the convolution: a Fused node whose inputs are the node's inputs
  // and then the convolution's output.
  std::shared_ptr<ir::Graph> rest_body;
  ir::Node rest;
};

// kInvalidArgument when `node` is not a convolution epilogue or its convolution reads a
// value the chain computes.
StatusOr<ConvEpilogueSplit> splitConvEpilogue(const ir::Node& node);

}  // namespace gkrt
