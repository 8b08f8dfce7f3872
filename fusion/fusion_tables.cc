// Transcribed from ../shared/seeds/custom_fusion_flags_and_tables.txt, Appendices 1
// and 2, row for row (Y = true). Levels from MindSpore's graph_kernel_expander_cloud.cc
// and graph_kernel_cluster_cloud.cc (FUSION_NOTES §4-5); rows with no known level use 0.
#include "fusion/fusion_tables.h"

namespace gkrt {

const std::vector<FusionTableEntry>& expanderTable() {
  static const std::vector<FusionTableEntry> t = {
      // op                                  Ascend CPU    GPU    level
      {"Adam",                               true,  true,  false, 1},
      {"AdamApplyOneWithDecayAssign",        true,  false, false, 0},
      {"Addcmul",                            true,  false, false, 0},
      {"AddN",                               true,  true,  true,  0},
      {"BiasAdd",                            true,  true,  true,  0},
      {"BiasAddGrad",                        true,  true,  true,  1},
      {"FillV2",                             true,  false, false, 0},
      {"GeLU",                               true,  true,  true,  0},
      {"Gelu",                               true,  true,  true,  0},
      {"FastGelu",                           true,  false, false, 0},
      {"FastGeluGrad",                       true,  false, false, 0},
      {"FastGeLU",                           true,  false, false, 0},
      {"FastGeLUGrad",                       true,  false, false, 0},
      {"SiLU",                               true,  false, false, 0},
      {"SiLUGrad",                           true,  false, false, 0},
      {"GeLUGrad",                           true,  true,  true,  0},
      {"RsqrtGrad",                          true,  false, false, 0},
      {"SqrtGrad",                           true,  true,  true,  0},
      {"Square",                             true,  true,  true,  0},
      {"Tile",                               true,  true,  true,  0},
      {"ClipByNormNoDivSum",                 true,  false, false, 0},
      {"FusedMulAdd",                        true,  false, false, 0},
      {"Sigmoid",                            true,  false, true,  0},
      {"SigmoidGrad",                        true,  false, true,  0},
      {"SigmoidCrossEntropyWithLogits",      true,  false, true,  0},
      {"SigmoidCrossEntropyWithLogitsGrad",  true,  false, true,  0},
      {"SquaredDifference",                  true,  false, true,  0},
      {"TanhGrad",                           true,  true,  false, 1},
      {"OnesLike",                           true,  true,  true,  0},
      {"ZerosLike",                          true,  false, false, 0},
      {"ReduceMean",                         true,  false, true,  1},
      {"LogSoftmaxGrad",                     false, false, true,  0},
      {"ReLU",                               true,  true,  true,  0},
      {"ReluGrad",                           true,  false, true,  0},
      {"AssignAdd",                          true,  true,  true,  0},
      {"LambApplyOptimizerAssign",           true,  false, false, 0},
      {"LambApplyWeightAssign",              true,  false, false, 0},
      {"AdamApplyOneWithDecay",              true,  false, false, 0},
      {"ExpandDims",                         false, true,  true,  1},
      {"Squeeze",                            false, false, true,  0},
      {"SoftmaxGradExt",                     false, false, false, 0},
      {"ApplyMomentum",                      false, false, false, 0},
      {"LeakyReLUExt",                       true,  false, false, 0},
      {"EluExt",                             true,  false, false, 0},
      {"SoftplusExt",                        true,  false, false, 0},
      {"SoftplusGradExt",                    true,  false, false, 0},
      {"RepeatInterleaveInt",                true,  false, false, 0},
      {"HShrink",                            true,  false, false, 0},
      {"HSigmoid",                           true,  false, false, 0},
      {"HSwish",                             true,  false, false, 0},
      {"BinaryCrossEntropy",                 true,  false, false, 0},
      {"Erf",                                true,  false, false, 0},
      {"Tanh",                               true,  false, false, 0},
      {"Cosh",                               true,  false, false, 0},
      {"Sinh",                               true,  false, false, 0},
      {"ClampScalar",                        true,  false, false, 0},
      {"DivMod",                             true,  false, false, 0},
      {"BCEWithLogitsLoss",                  true,  false, false, 0},
      {"AcoshExt",                           true,  false, false, 0},
      {"AsinhExt",                           true,  false, false, 0},
      {"MeanExt",                            true,  false, false, 0},
      {"Erfc",                               false, false, true,  0},
      {"AdamWeightDecay",                    false, false, true,  1},
      {"BatchMatMul",                        false, false, true,  1},
      {"Dropout",                            false, false, true,  0},
      {"DropoutGrad",                        false, false, true,  0},
      {"MaximumGrad",                        false, true,  true,  1},
      {"MinimumGrad",                        false, true,  true,  1},
      {"LayerNorm",                          false, false, true,  1},
      {"LayerNormGrad",                      false, false, true,  1},
      {"LogSoftmax",                         false, false, true,  0},
      {"MatMul",                             false, false, true,  1},
      {"ArgMaxWithValue",                    false, false, true,  1},
      {"ArgMinWithValue",                    false, false, true,  1},
      {"Slice",                              false, false, true,  0},
      {"Softmax",                            false, false, true,  1},
      {"SoftmaxCrossEntropyWithLogits",      false, false, true,  1},
      {"EqualCount",                         false, false, true,  0},
      {"SquareSumAll",                       false, false, true,  0},
      {"IdentityMath",                       false, false, true,  0},
      {"StandardNormal",                     false, false, true,  0},
      {"Softplus",                           false, true,  false, 1},
      {"SoftplusGrad",                       false, true,  false, 1},
  };
  return t;
}

const std::vector<FusionTableEntry>& clusterTable() {
  static const std::vector<FusionTableEntry> t = {
      // op              Ascend CPU    GPU    level
      {"Abs",            true,  true,  true,  0},
      {"Add",            true,  true,  true,  0},
      {"BroadcastTo",    true,  false, false, 0},
      {"Cast",           true,  true,  true,  0},
      {"Exp",            true,  true,  true,  0},
      {"Log",            true,  true,  true,  0},
      {"Maximum",        true,  true,  true,  0},
      {"Minimum",        true,  true,  true,  0},
      {"Mul",            true,  true,  true,  0},
      {"Neg",            true,  true,  true,  0},
      {"Pow",            true,  true,  true,  0},
      {"Div",            true,  false, true,  0},
      {"RealDiv",        true,  true,  true,  0},
      {"Reciprocal",     true,  true,  true,  0},
      {"Rsqrt",          true,  true,  true,  0},
      {"Sqrt",           true,  true,  true,  0},
      {"Sub",            true,  true,  true,  0},
      {"Equal",          true,  true,  true,  0},
      {"NotEqual",       true,  false, true,  0},
      {"Greater",        true,  false, true,  0},
      {"GreaterEqual",   true,  false, true,  0},
      {"Less",           true,  true,  true,  0},
      {"LessEqual",      true,  true,  true,  0},
      {"LogicalAnd",     true,  false, true,  0},
      {"LogicalOr",      true,  false, true,  0},
      {"LogicalNot",     true,  true,  true,  0},
      {"Select",         true,  true,  true,  0},
      {"Assign",         true,  false, true,  0},
      {"ReduceSum",      true,  true,  true,  1},
      {"IsFinite",       true,  false, true,  0},
      {"Reshape",        false, true,  true,  1},
      {"Transpose",      true,  true,  true,  1},
      {"Floor",          true,  false, true,  0},
      {"Ceil",           true,  false, false, 0},
      {"Trunc",          true,  false, true,  0},
      {"Round",          false, true,  true,  0},
      {"Tanh",           false, true,  true,  0},
      {"ACos",           false, false, true,  0},
      {"Acosh",          false, false, true,  0},
      {"ArgMax",         false, false, false, 2},
      {"Argmin",         false, false, false, 2},
      {"Asin",           false, false, true,  0},
      {"Asinh",          false, false, true,  0},
      {"Atan",           false, false, true,  0},
      {"Atan2",          false, false, true,  0},
      {"Cos",            false, false, true,  0},
      {"Erf",            false, false, true,  0},
      {"Expm1",          false, false, true,  0},
      {"FloorDiv",       false, false, true,  0},
      {"FloorMod",       false, false, true,  0},
      {"IsInf",          false, false, true,  0},
      {"IsNan",          false, false, true,  0},
      {"Mod",            false, true,  true,  0},
      {"ReduceMax",      false, true,  true,  1},
      {"ReduceMin",      false, false, true,  1},
      {"Sign",           false, false, true,  0},
      {"Sin",            false, false, true,  0},
      {"StridedSlice",   false, false, true,  0},
      {"CumSum",         false, false, true,  1},
      {"OneHot",         false, false, true,  1},
  };
  return t;
}

// gkrt's own rows: ops the appendices do not list, clustered because it measured
// faster (docs/fusion-and-flags.md, "gkrt's own fusion rows"). All at level 1, so `--fusion_ops_level=0`
// leaves the pure appendix tables; each one is switched off by disable_cluster_ops.
// The Ascend column keeps MindSpore's DVM table as it is.
const std::vector<FusionTableEntry>& ownClusterRows() {
  static const std::vector<FusionTableEntry> t = {
      // op              Ascend CPU    GPU    level
      {"Clip",           false, true,  true,  1},  // ReLU6, hard-sigmoid forms
      {"HSwish",         false, true,  true,  1},
      {"HSigmoid",       false, true,  true,  1},
      {"LeakyReLU",      false, true,  true,  1},
      {"Sigmoid",        false, true,  false, 1},  // CPU expands no Sigmoid: SiLU = x * sigmoid(x)
      {"SiLU",           false, true,  false, 1},  // nor SiLU (RecognizeExportedPatterns makes it)
      {"Conv2D",         false, true,  true,  1},  // conv epilogues: one oneDNN conv with post-ops; cuDNN conv-bias-ReLU
  };
  return t;
}

int defaultFusionOpsLevel(FusionColumn c) { return c == FusionColumn::kAscend ? 0 : 1; }

}  // namespace gkrt
