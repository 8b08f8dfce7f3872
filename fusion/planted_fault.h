// TEST ONLY: deliberately wrong fusion rules, planted so that tests can check that
// `gkrt bisect` (tools/fusion_bisect.h) finds them. Nothing in gkrt calls
// plantFusionFaultForTesting: no flag, option or environment variable reaches it; a
// test program must call it. While planted, the fusion passes get one rule wrong:
//
//   plantFusionFaultForTesting({PlantedFault::kWrongExpander, "Sigmoid"});
//     every Sigmoid the GraphKernelExpander expands computes 1.25x the right value
//   plantFusionFaultForTesting({PlantedFault::kWrongCluster, "Sub"});
//     every Sub that StaticShapeCluster puts in a fused kernel computes 1.25x
//   plantFusionFaultForTesting({});   // back to correct rules
//
// Only float32 values are affected.
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

struct PlantedFault {
  enum Kind { kNone, kWrongExpander, kWrongCluster };
  Kind kind = kNone;
  std::string op;  // the op whose rule is wrong
};

void plantFusionFaultForTesting(const PlantedFault& fault);

// Called by GraphKernelExpander after it expanded a node of op `op` whose outputs were
// `outputs` (no-op unless a wrong expander of `op` is planted).
void applyPlantedExpanderFault(ir::Graph& g, const std::string& op, const std::vector<int>& outputs);
// Called by StaticShapeCluster after it made its fused nodes.
void applyPlantedClusterFault(ir::Graph& g);

}  // namespace gkrt
