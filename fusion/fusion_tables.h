// The seeds' default fusion tables as data: Appendix 1 (ops expanded into basic ops)
// and Appendix 2 (basic ops clustered into fused kernels), each with its Ascend, CPU
// and GPU columns and MindSpore's per-entry `fusion_ops_level` where it is known.
//
//   for (const FusionTableEntry& e : expanderTable())
//     if (e.inColumn(FusionColumn::kCpu)) ...
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/fusion_column.h"

namespace gkrt {

struct FusionTableEntry {
  const char* op;   // as spelled in the seeds (aliases resolve through findOp)
  bool ascend, cpu, gpu;
  int level;        // CPU/GPU: entry is on when fusion_ops_level >= level
  bool inColumn(FusionColumn c) const { return c == FusionColumn::kAscend ? ascend : c == FusionColumn::kCpu ? cpu : gpu; }
  // Ascend's Y entries come from MindSpore's DVM tables, all level 0 (its default).
  int levelIn(FusionColumn c) const { return c == FusionColumn::kAscend ? 0 : level; }
};

const std::vector<FusionTableEntry>& expanderTable();  // Appendix 1
const std::vector<FusionTableEntry>& clusterTable();   // Appendix 2
// gkrt's own cluster rows (ops the appendices do not list), on by default at
// fusion_ops_level >= 1, each removable with disable_cluster_ops.
const std::vector<FusionTableEntry>& ownClusterRows();

// MindSpore's default fusion_ops_level: 0 on Ascend, 1 elsewhere.
int defaultFusionOpsLevel(FusionColumn c);

}  // namespace gkrt
