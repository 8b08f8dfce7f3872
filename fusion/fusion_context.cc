#include "fusion/fusion_context.h"

#include "fusion/fusion_tables.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

std::set<const OpDef*> effectiveOps(std::vector<FusionTableEntry> table, FusionColumn column,
                                    const FusionOptions& o, const std::vector<std::string>& enable,
                                    const std::vector<std::string>& disable, const std::vector<std::string>& only) {
  std::set<const OpDef*> ops;
  if (!only.empty()) {
    for (const std::string& n : only) if (const OpDef* d = findOp(n)) ops.insert(d);
    return ops;
  }
  const int level = o.fusion_ops_level >= 0 ? o.fusion_ops_level : defaultFusionOpsLevel(column);
  for (const FusionTableEntry& e : table) {
    if (e.inColumn(column) && e.levelIn(column) <= level) {
      if (const OpDef* d = findOp(e.op)) ops.insert(d);
    }
  }
  for (const std::string& n : enable) if (const OpDef* d = findOp(n)) ops.insert(d);
  for (const std::string& n : disable) if (const OpDef* d = findOp(n)) ops.erase(d);
  return ops;
}

}  // namespace

std::set<const OpDef*> effectiveExpandOps(FusionColumn column, const FusionOptions& o) {
  return effectiveOps(expanderTable(), column, o, o.enable_expand_ops, o.disable_expand_ops, o.enable_expand_ops_only);
}

std::set<const OpDef*> effectiveClusterOps(FusionColumn column, const FusionOptions& o) {
  std::vector<FusionTableEntry> rows = clusterTable();
  rows.insert(rows.end(), ownClusterRows().begin(), ownClusterRows().end());
  return effectiveOps(rows, column, o, o.enable_cluster_ops, o.disable_cluster_ops, o.enable_cluster_ops_only);
}

}  // namespace gkrt
