// The fusion pipeline: one ordered list of named passes in MindSpore's stages, each
// with the lowest opt_level that turns it on.
//
//   FusionOptions o = ...;
//   ASSIGN_OR_RETURN(FusionReport r, runFusionPipeline(graph, o, FusionColumn::kCpu, supports));
//   r.kernels;   // nodes left to launch
//
// A pass is switched with enable_pass / disable_pass by its bare name, by
// "<stage>.<id>" or by "<stage_name>.<pass_name>". At GKRT_LOG=info the pipeline logs
// "graph kernel passes: ..." and one line per pass; dump_as_text writes the graph
// before fusion and after every pass that ran into dump_dir.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusion/fusion_options.h"
#include "runtime/ir/graph.h"

namespace gkrt {

struct PassRecord {
  std::string name;       // full name, e.g. "stage1_cluster_2_StaticShapeCluster"
  bool ran = false;
  bool changed = false;
  double microseconds = 0;
};

struct FusionReport {
  FusionColumn column = FusionColumn::kCpu;
  size_t ops_before = 0, ops_after = 0;  // basic ops, counting inside fused nodes
  size_t clusters = 0;                   // Fused nodes
  size_t kernels = 0;                    // top-level nodes to launch
  size_t dissolved = 0;                  // clusters the backend could not run, split back into their ops
  std::vector<PassRecord> passes;
  std::vector<std::string> dump_files;
  // The pass that made each named node (top level and inside fused subgraphs), by bare
  // pass name ("GraphKernelExpander", a pattern pass, ...); nodes of the input graph
  // are absent. For pictures (`gkrt dump --svg`) and `gkrt bisect`.
  std::map<std::string, std::string> node_origin_pass;
};

// Every switchable pass name ("StaticShapeCluster", ...), in pipeline order.
std::vector<std::string> switchablePassNames();
// Whether `pattern` names at least one pass (bare, stage.id or stage_name.pass_name).
bool matchesAnyPass(const std::string& pattern);
// Whether the pass of that bare name ("inference_qbmm_add_fusion") runs in a pipeline with
// these options and column (a pass may leave a later pass's pattern intact for it).
bool passWillRun(const std::string& name, const FusionOptions& options, FusionColumn column);
// The seeds' Appendix 3 (MindSpore's Ascend pattern passes, "fusion_group" stage), in
// order; switchable as "<name>", "fusion_group.<id>" or "fusion_group.<name>".
const std::vector<std::string>& ascendPatternPassNames();

StatusOr<FusionReport> runFusionPipeline(ir::Graph& g, const FusionOptions& options, FusionColumn column,
                                         const std::function<bool(const ir::Node&)>& supports = nullptr);

}  // namespace gkrt
