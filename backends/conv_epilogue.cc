#include "backends/conv_epilogue.h"

#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt {

bool isConvEpilogue(const ir::Node& node) {
  return node.subgraph && node.subgraph->nodes.size() > 1 && node.subgraph->nodes[0].op &&
         std::strcmp(node.subgraph->nodes[0].op->name, "Conv2D") == 0 && node.outputs.size() == 1;
}

StatusOr<ConvEpilogueSplit> splitConvEpilogue(const ir::Node& node) {
  if (!isConvEpilogue(node)) return makeError(StatusCode::kInvalidArgument, node.name, " is not a convolution epilogue");
  ConvEpilogueSplit s;
  s.body = node.subgraph.get();
  s.conv = &s.body->nodes[0];
  for (int t : s.conv->inputs) {
    ConvEpilogueSplit::Operand o;
    if (t >= 0) {
      for (size_t i = 0; i < s.body->inputs.size(); ++i) if (s.body->inputs[i] == t) o.input = int(i);
      if (o.input < 0) {
        if (!s.body->tensors[t].isConstant()) {
          return makeError(StatusCode::kInvalidArgument, node.name, ": the convolution reads a value of its own chain");
        }
        o.constant = &s.body->tensors[t];
      }
    }
    s.conv_operands.push_back(o);
  }
  s.rest_body = std::make_shared<ir::Graph>(*s.body);
  s.rest_body->nodes.erase(s.rest_body->nodes.begin());
  s.rest_body->inputs.push_back(s.conv->outputs[0]);
  s.rest = node;
  s.rest.subgraph = s.rest_body;
  return s;
}

}  // namespace gkrt
