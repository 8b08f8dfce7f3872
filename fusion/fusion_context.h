// What every fusion pass sees: the graph, the options, the table column in use, the
// op sets that column and the flags give, and the backend's supports() predicate.
#pragma once

#include <functional>
#include <set>

#include "fusion/fusion_options.h"
#include "runtime/ir/graph.h"

namespace gkrt {

struct OpDef;

struct FusionContext {
  ir::Graph& graph;
  const FusionOptions& options;
  FusionColumn column;
  std::set<const OpDef*> expand_ops;   // Appendix 1 column, after the flags
  std::set<const OpDef*> cluster_ops;  // Appendix 2 column, after the flags
  std::function<bool(const ir::Node&)> supports;
};

// The effective op sets for a column: `*_only` replaces the table; otherwise the
// column's entries at or below fusion_ops_level, plus `enable_*`, minus `disable_*`.
std::set<const OpDef*> effectiveExpandOps(FusionColumn column, const FusionOptions& o);
std::set<const OpDef*> effectiveClusterOps(FusionColumn column, const FusionOptions& o);

}  // namespace gkrt
