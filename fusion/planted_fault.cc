#include "fusion/planted_fault.h"

#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

PlantedFault& planted() {
  static PlantedFault fault;
  return fault;
}

constexpr float kWrongFactor = 1.25f;

// Makes the node writing tensor `t` of `g` write a new tensor, and a Mul by
// kWrongFactor write `t` from it.
void scaleTensor(ir::Graph& g, int t) {
  if (t < 0 || g.tensors[t].dtype != DType::kFloat32) return;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& producer = g.nodes[i];
    for (int& out : producer.outputs) {
      if (out != t) continue;
      const OpDef* mul_op = findOp("Mul");
      if (!mul_op) return;
      ir::Tensor unscaled = g.tensors[t];
      unscaled.name += "/before_planted_fault";
      const int unscaled_id = g.addTensor(unscaled);
      out = unscaled_id;
      const float factor = kWrongFactor;
      const int c = g.addTensor({g.tensors[t].name + "/planted_factor", DType::kFloat32, {}, {},
                                 ir::ConstData::copyOf(&factor, sizeof factor)});
      ir::Node mul;
      mul.name = g.nodes[i].name + "/planted_fault";
      mul.op = mul_op;
      mul.inputs = {unscaled_id, c};
      mul.outputs = {t};
      g.nodes.insert(g.nodes.begin() + static_cast<long>(i) + 1, std::move(mul));
      return;
    }
  }
}

}  // namespace

void plantFusionFaultForTesting(const PlantedFault& fault) { planted() = fault; }

void applyPlantedExpanderFault(ir::Graph& g, const std::string& op, const std::vector<int>& outputs) {
  if (planted().kind != PlantedFault::kWrongExpander || planted().op != op) return;
  for (int t : outputs) scaleTensor(g, t);
}

void applyPlantedClusterFault(ir::Graph& g) {
  if (planted().kind != PlantedFault::kWrongCluster) return;
  for (ir::Node& n : g.nodes) {
    if (!n.subgraph) continue;
    ir::Graph& sub = *n.subgraph;
    std::vector<int> targets;
    for (const ir::Node& inner : sub.nodes) {
      if (inner.op->name == planted().op) targets.insert(targets.end(), inner.outputs.begin(), inner.outputs.end());
    }
    for (int t : targets) scaleTensor(sub, t);
  }
}

}  // namespace gkrt
