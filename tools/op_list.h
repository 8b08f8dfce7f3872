// The op list of a model for a minimal build (`gkrt convert --emit-op-list`,
// CMake -DGKRT_OP_LIST=...): the ops the model uses as converted, and those the
// fusion pipeline makes of it on each backend, so the same list serves a board
// that fuses at load.
#pragma once

#include <set>
#include <string>

#include "runtime/ir/graph.h"
#include "runtime/ir/status.h"

namespace gkrt::tools {

// Adds the op of every node of `g`, fused subgraphs included.
void collectOps(const ir::Graph& g, std::set<std::string>& ops);

// `g`'s ops, plus those the fusion pipeline makes of it at opt levels 1-3 on every backend.
StatusOr<std::set<std::string>> opListFor(const ir::Graph& g);

// One name per line, with what every build needs (Fused, Reshape) and the base op of
// each twin (SoftplusExt needs Softplus).
Status writeOpList(const std::string& path, std::set<std::string> ops);

}  // namespace gkrt::tools
