// MindSpore 2.10's own spellings of graph-kernel pass names, as its CPU pipeline writes
// them into its dump files (verbose_ir_files/graph_kernel/NNNN_stage1_cluster_4_
// graph_kernel_cluster_NNNN.ir), so that enable_pass/disable_pass accept what a
// MindSpore user types.
//
//   mindSporePassAlias("graph_kernel_cluster")                 -> "StaticShapeCluster"
//   mindSporePassAlias("stage2_highlevelopt1_3_arithmetic_simplify") -> "ArithmeticSimplify"
//   mindSporeOnlyPass("convert_mix_type")   -> a reason: MindSpore has it, gkrt needs none
//
// tests/fidelity/known_differences.txt lists the same names with the pipeline order.
#pragma once

#include <string>

namespace gkrt {

// The gkrt pass a MindSpore pass name (bare or with its "stageN_<stage>_<id>_"
// prefix) stands for; `name` unchanged when it is not one of MindSpore's names.
std::string mindSporePassAlias(const std::string& name);
// Why MindSpore's pass `name` has no gkrt counterpart; empty when it is not such a pass.
std::string mindSporeOnlyPass(const std::string& name);

}  // namespace gkrt
