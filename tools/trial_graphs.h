// A graph valid at every size of its inputs' dynamic dims, from two conversions at two
// trial sizes (the ONNX importer's dynamic dims, tools/onnx/onnx_dynamic_dims.h, and the
// GGUF importer's sequence and cache lengths): the two graphs must agree in every node,
// attribute and constant; tensor dims that differ become unknown (kUnknownDim) and known
// values are dropped. Otherwise an error names the node or tensor that depends on the
// sizes, ending with `fix` (what the user can do about it).
#pragma once

#include <string>

#include "runtime/ir/graph.h"

namespace gkrt::tools {

StatusOr<ir::Graph> mergeTrialGraphs(ir::Graph a, const ir::Graph& b, const std::string& fix);

}  // namespace gkrt::tools
