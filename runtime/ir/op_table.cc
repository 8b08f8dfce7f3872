// The op table: every op family registers here, in one explicit list.
#include <algorithm>
#include <unordered_map>

#include "runtime/ir/closest_name.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace ops {
void registerElementwiseUnaryOps(std::vector<OpDef>& t);
void registerElementwiseBinaryOps(std::vector<OpDef>& t);
void registerReduceOps(std::vector<OpDef>& t);
void registerNormalizationOps(std::vector<OpDef>& t);
void registerLayoutOps(std::vector<OpDef>& t);
void registerIndexingOps(std::vector<OpDef>& t);
void registerLinearOps(std::vector<OpDef>& t);
void registerTrainingOps(std::vector<OpDef>& t);
void registerFusedOps(std::vector<OpDef>& t);
void registerDynamicShapeOps(std::vector<OpDef>& t);
void registerRecurrentOps(std::vector<OpDef>& t);
void registerRecurrentQuantOps(std::vector<OpDef>& t);
void registerControlFlowOps(std::vector<OpDef>& t);
void registerGatherScatterOps(std::vector<OpDef>& t);
void registerSortingOps(std::vector<OpDef>& t);
void registerConvTransposeOps(std::vector<OpDef>& t);
void registerQuantizationOps(std::vector<OpDef>& t);
void registerSliceAtRunOps(std::vector<OpDef>& t);
void registerPool3DOps(std::vector<OpDef>& t);
void registerPatternOps(std::vector<OpDef>& t);
void registerQuantLinearOps(std::vector<OpDef>& t);
void registerPatternQuantOps(std::vector<OpDef>& t);
void registerCachedAttentionOps(std::vector<OpDef>& t);
void registerRotaryOps(std::vector<OpDef>& t);
void registerBlockQuantMatMulOps(std::vector<OpDef>& t);
}  // namespace ops

const char* opClassName(OpClass c) {
  switch (c) {
    case OpClass::kReshape: return "reshape";
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kBroadcast: return "broadcast";
    case OpClass::kReduce: return "reduce";
    case OpClass::kOpaque: return "opaque";
  }
  return "?";
}

namespace {

struct OpTable {
  std::vector<OpDef> ops;
  std::vector<std::pair<std::string, std::string>> aliases;
  std::unordered_map<std::string, const OpDef*> by_name;

  OpTable() {
    ops::registerElementwiseUnaryOps(ops);
    ops::registerElementwiseBinaryOps(ops);
    ops::registerReduceOps(ops);
    ops::registerNormalizationOps(ops);
    ops::registerLayoutOps(ops);
    ops::registerIndexingOps(ops);
    ops::registerLinearOps(ops);
    ops::registerTrainingOps(ops);
    ops::registerFusedOps(ops);
    ops::registerDynamicShapeOps(ops);
    ops::registerRecurrentOps(ops);
    ops::registerRecurrentQuantOps(ops);
    ops::registerControlFlowOps(ops);
    ops::registerGatherScatterOps(ops);
    ops::registerSortingOps(ops);
    ops::registerConvTransposeOps(ops);
    ops::registerQuantizationOps(ops);
    ops::registerSliceAtRunOps(ops);
    ops::registerPool3DOps(ops);
    ops::registerPatternOps(ops);
    ops::registerQuantLinearOps(ops);
    ops::registerPatternQuantOps(ops);
    ops::registerCachedAttentionOps(ops);
    ops::registerRotaryOps(ops);
    ops::registerBlockQuantMatMulOps(ops);
    // MindSpore primitives with their own rows in the fusion tables but our semantics
    // of another op: distinct ops sharing that op's rules and kernel.
    for (const auto& twin_of : opTwins()) {  // no structured bindings: clang 14 cannot capture them
      const auto& name = twin_of.first;
      const auto& of = twin_of.second;
      auto base = std::find_if(ops.begin(), ops.end(), [&](const OpDef& d) { return std::string(d.name) == of; });
      if (!opSelected(name) || base == ops.end()) continue;  // minimal builds: `of` is listed with `name`
      OpDef twin = *base;
      twin.name = name;
      ops.push_back(twin);
    }
    // Other spellings used by MindSpore's tables, ONNX and the issue texts.
    aliases = {
        {"Gelu", "GeLU"}, {"FastGelu", "FastGeLU"}, {"FastGeluGrad", "FastGeLUGrad"}, {"Relu", "ReLU"},
        {"Relu6", "ReLU6"}, {"LeakyReLUExt", "LeakyReLU"}, {"LeakyRelu", "LeakyReLU"}, {"EluExt", "Elu"},
        {"AcoshExt", "Acosh"}, {"AsinhExt", "Asinh"}, {"Acos", "ACos"}, {"Argmax", "ArgMax"},
        {"Argmin", "ArgMin"}, {"Where", "Select"}, {"ClampScalar", "Clip"}, {"HardSigmoid", "HSigmoid"},
        {"HardSwish", "HSwish"}, {"AdamApplyOneWithDecayAssign", "AdamApplyOneWithDecay"},
        {"Swish", "SiLU"}, {"Unsqueeze", "ExpandDims"}, {"Expand", "BroadcastTo"},
        {"GlobalAveragePool", "GlobalAvgPool"}, {"Conv", "Conv2D"}, {"Identity", "IdentityMath"},
        {"SimplifiedLayerNormalization", "RmsNorm"}, {"LayerNormalization", "LayerNorm"},
    };
    for (const OpDef& op : ops) by_name[op.name] = &op;
    for (const auto& [alias, canonical] : aliases) {
      if (by_name.count(canonical)) by_name[alias] = by_name.at(canonical);
    }
  }
};

const OpTable& table() {
  static const OpTable t;
  return t;
}

}  // namespace

const OpDef* findOp(std::string_view name) {
  const auto& m = table().by_name;
  auto it = m.find(std::string(name));
  return it == m.end() ? nullptr : it->second;
}

const std::vector<OpDef>& allOps() { return table().ops; }

const std::vector<std::pair<const char*, const char*>>& opTwins() {
  static const std::vector<std::pair<const char*, const char*>> twins = {
      {"SoftplusExt", "Softplus"}, {"SoftplusGradExt", "SoftplusGrad"}, {"MeanExt", "ReduceMean"}};
  return twins;
}

const std::vector<std::pair<std::string, std::string>>& opAliases() { return table().aliases; }

std::string closestOpName(std::string_view name) {
  std::vector<std::string> names;
  for (const auto& [n, op] : table().by_name) names.push_back(n);
  return closestName(name, names);
}

}  // namespace gkrt
