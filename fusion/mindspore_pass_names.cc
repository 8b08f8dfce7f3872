#include "fusion/mindspore_pass_names.h"

#include <cctype>
#include <map>

namespace gkrt {
namespace {

// "stage1_cluster_4_graph_kernel_cluster" -> "graph_kernel_cluster".
std::string stripStagePrefix(const std::string& name) {
  if (name.rfind("stage", 0) != 0) return name;
  size_t pos = 0;
  for (int field = 0; field < 3; ++field) {
    pos = name.find('_', pos);
    if (pos == std::string::npos) return name;
    ++pos;
  }
  return std::isdigit(static_cast<unsigned char>(name[pos - 2])) ? name.substr(pos) : name;
}

const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> m = {
      {"cse1", "CommonSubexpressionElimination"},
      {"graph_kernel_cse", "CommonSubexpressionElimination"},
      {"graph_kernel_expander", "GraphKernelExpander"},
      {"graph_kernel_cluster", "StaticShapeCluster"},
      {"arithmetic_simplify", "ArithmeticSimplify"},
      {"transform_op_optimizer", "TransformOpOptimizer"},
      {"graph_kernel_splitter", "GraphKernelSplitter"},
      {"parallel_op_fusion", "ParallelOpFusion"},
  };
  return m;
}

const std::map<std::string, std::string>& mindSporeOnly() {
  static const std::map<std::string, std::string> m = {
      {"getitem_tuple", "gkrt nodes have several outputs, no tuples to unpack"},
      {"convert_input_to_attr", "gkrt ops carry attributes from the start"},
      {"convert_attr_to_input", "gkrt ops carry attributes from the start"},
      {"depend_elimination", "gkrt graphs have no Depend nodes"},
      {"split_assign", "gkrt graphs are inference graphs: no Assign with UpdateState"},
      {"spread_update_state", "gkrt graphs have no UpdateState nodes"},
      {"shrink_update_state", "gkrt graphs have no UpdateState nodes"},
      {"extend_output_for_update_state", "gkrt graphs have no UpdateState nodes"},
      {"merge_output_for_update_state", "gkrt graphs have no UpdateState nodes"},
      {"optimize_assign", "gkrt graphs are inference graphs: no Assign"},
      {"convert_mix_type", "gkrt ops are typed when built; mixed-type inputs are refused"},
      {"eliminate_redundant_output", "gkrt's DeadNodeElimination drops unused fused outputs"},
      {"reorder_ops", "not implemented in gkrt (moves Cast past type-insensitive ops)"},
      {"axis_normalizer", "gkrt normalises negative axes when a graph is validated"},
      {"raise_reduction_precision", "gkrt's kernels accumulate float16 reductions in float32 already"},
      {"shape_ops_splitter", "not implemented in gkrt (duplicates a Reshape per user)"},
      {"reduce_fake_output_memory", "gkrt's memory planner sizes every output"},
      {"graph_kernel_build", "gkrt compiles fused kernels in the backend's compile, not as a pass"},
      {"bind_value_to_graph", "MindSpore front-end bookkeeping"},
      {"add_attr", "MindSpore front-end bookkeeping"},
  };
  return m;
}

}  // namespace

std::string mindSporePassAlias(const std::string& name) {
  auto it = aliases().find(stripStagePrefix(name));
  return it == aliases().end() ? name : it->second;
}

std::string mindSporeOnlyPass(const std::string& name) {
  auto it = mindSporeOnly().find(stripStagePrefix(name));
  return it == mindSporeOnly().end() ? "" : it->second;
}

}  // namespace gkrt
