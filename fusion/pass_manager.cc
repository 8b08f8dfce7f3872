#include "fusion/pass_manager.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "fusion/area_graph.h"
#include "fusion/fusion_context.h"
#include "fusion/graph_text.h"
#include "fusion/mindspore_pass_names.h"
#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/base/log.h"

namespace gkrt {
namespace {

constexpr int kNever = 4;  // above every opt_level

struct PassSpec {
  int stage;
  const char* stage_name;
  int id;
  const char* name;
  int (*min_opt_level)(const FusionOptions&);
  passes::PassResult (*run)(FusionContext&);
  // Appendix 3 pattern passes (stage "fusion_group"): on by default per table column.
  const passes::PatternPass* pattern = nullptr;
};

constexpr int kFusionGroupStage = -1;  // MindSpore's SIZE_MAX stage: names carry no stage number

int level1(const FusionOptions&) { return 1; }
int level2(const FusionOptions&) { return 2; }
int parallelLevel(const FusionOptions& o) { return o.parallelFusion() ? 1 : kNever; }
int onRequest(const FusionOptions&) { return kNever; }  // enable_pass only

// MindSpore's stages (FUSION_NOTES §2); ids count within a stage.
const std::vector<PassSpec>& pipeline() {
  static const std::vector<PassSpec> p = {
      {0, "preprocess", 0, "DeadNodeElimination", level1, passes::eliminateDeadNodes},
      // gkrt's own, before ConstantFolding would dequantize the int8 weights (id after the others).
      {0, "preprocess", 4, "quant_dq_op_q_fusion", level1, passes::fuseQuantDqOpQ},
      // gkrt's own: an int8 embedding table's rows gathered before they are dequantized.
      {0, "preprocess", 12, "gather_before_dequantize", level1, passes::moveGatherBeforeDequantize},
      // gkrt's own, on request (it lowers the model's precision), before ConstantFolding widens int8 weights.
      {0, "preprocess", 13, "int8_weight_dynamic_quant", onRequest, passes::fuseInt8WeightDynamicQuant},
      {0, "preprocess", 1, "ConstantFolding", level2, passes::foldConstants},
      {0, "preprocess", 2, "CommonSubexpressionElimination", level2, passes::eliminateCommonSubexpressions},
      {0, "preprocess", 3, "RecognizeExportedPatterns", level1, passes::recognizeExportedPatterns},
      // gkrt's own, after GeLU is one op again and before the expanders split it.
      {0, "preprocess", 5, "matmul_integer_to_float_fusion", level1, passes::fuseMatMulIntegerToFloat},
      {0, "preprocess", 6, "channel_shuffle_fusion", level1, passes::fuseChannelShuffle},
      // gkrt's own: the rotary position embedding of decoder LLMs as one Rotary node.
      {0, "preprocess", 7, "rotary_embedding_fusion", level1, passes::fuseRotaryEmbedding},
      // gkrt's own: Q/K/V and gate/up projections as one GEMM + Split (opt_level 2: new constants).
      {0, "preprocess", 8, "sibling_matmul_merge", level2, passes::mergeSiblingMatMuls},
      // gkrt's own: an embedding lookup written as a one-hot product as one row gather (a new constant).
      {0, "preprocess", 9, "one_hot_matmul_fusion", level2, passes::fuseOneHotMatMul},
      // gkrt's own: a max/min/sum over a stack of slices as an elementwise chain.
      {0, "preprocess", 10, "stacked_reduce_fusion", level1, passes::fuseStackedReduce},
      // gkrt's own: a convolution's Squeeze below its bias/activation, for its epilogue.
      {0, "preprocess", 11, "squeeze_sink", level1, passes::sinkSqueezes},
      {1, "cluster", 0, "GraphKernelExpander", level1, passes::expandOps},
      {1, "cluster", 1, "ArithmeticSimplify", level2, passes::simplifyArithmetic},
      {1, "cluster", 2, "TransformOpOptimizer", level2, passes::optimizeTransforms},
      {1, "cluster", 3, "StaticShapeCluster", level1, passes::clusterOps},
      {3, "split", 0, "GraphKernelSplitter", level1, passes::splitClusters},
      // gkrt's own: tf2onnx's NHWC<->NCHW Transposes around a convolution into its cluster (cpu column).
      {3, "split", 1, "conv_transpose_fold", level1, passes::foldConvTransposes},
      {5, "combine", 0, "ParallelOpFusion", parallelLevel, passes::fuseParallel},
      {6, "build", 0, "DeadNodeElimination", level1, passes::eliminateDeadNodes},
  };
  static const std::vector<PassSpec> with_patterns = [] {
    std::vector<PassSpec> all(p.begin(), p.begin() + 14);  // preprocess, then the fusion_group stage
    int id = 0;
    for (const passes::PatternPass& pp : passes::patternPasses()) {
      all.push_back({kFusionGroupStage, "fusion_group", id++, pp.name, level1, pp.run, &pp});
    }
    all.insert(all.end(), p.begin() + 14, p.end());
    return all;
  }();
  return with_patterns;
}

std::string fullName(const PassSpec& p) {
  if (p.stage == kFusionGroupStage) return std::string(p.stage_name) + "_" + std::to_string(p.id) + "_" + p.name;
  return "stage" + std::to_string(p.stage) + "_" + p.stage_name + "_" + std::to_string(p.id) + "_" + p.name;
}

bool matches(const PassSpec& p, const std::string& given) {
  const std::string pattern = mindSporePassAlias(given);  // MindSpore's spellings too
  const std::string stage = p.stage == kFusionGroupStage ? p.stage_name : std::to_string(p.stage);
  return pattern == p.name || pattern == stage + "." + std::to_string(p.id) ||
         pattern == std::string(p.stage_name) + "." + p.name || pattern == fullName(p);
}

bool anyMatch(const PassSpec& p, const std::vector<std::string>& patterns) {
  for (const std::string& s : patterns) if (matches(p, s)) return true;
  return false;
}

Status writeDump(const FusionOptions& o, int counter, const std::string& what, const ir::Graph& g,
                 std::vector<std::string>* files) {
  std::error_code ec;
  std::filesystem::create_directories(o.dump_dir, ec);
  if (ec) return makeError(StatusCode::kIoError, "dump_as_text: cannot create '", o.dump_dir, "': ", ec.message());
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%04d_", counter);
  const std::string path = o.dump_dir + "/" + prefix + what + ".txt";
  std::ofstream f(path);
  f << "# " << what << "\n" << graphToText(g);
  if (!f) return makeError(StatusCode::kIoError, "dump_as_text: cannot write '", path, "'");
  files->push_back(path);
  return Status::Ok();
}

void collectNodeNames(const ir::Graph& g, std::set<std::string>* names) {
  for (const ir::Node& n : g.nodes) {
    if (!n.name.empty()) names->insert(n.name);
    if (n.subgraph) collectNodeNames(*n.subgraph, names);
  }
}

// Names a pass made: recorded once, so a node keeps the pass that first created it.
void recordNewNodes(const ir::Graph& g, const char* pass, std::map<std::string, std::string>* origin) {
  for (const ir::Node& n : g.nodes) {
    if (!n.name.empty()) origin->emplace(n.name, pass);
    if (n.subgraph) recordNewNodes(*n.subgraph, pass, origin);
  }
}

}  // namespace

std::vector<std::string> switchablePassNames() {
  std::vector<std::string> names;
  for (const PassSpec& p : pipeline()) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  return names;
}

const std::vector<std::string>& ascendPatternPassNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const passes::PatternPass& p : passes::patternPasses()) n.push_back(p.name);
    return n;
  }();
  return names;
}

namespace {
// Whether pass p runs under these options and column: its opt level, its pattern-table
// default, then disable_pass and enable_pass.
bool passEnabled(const PassSpec& p, const FusionOptions& o, FusionColumn column) {
  bool enabled = o.opt_level > 0 && o.opt_level >= p.min_opt_level(o);
  if (p.pattern) {
    enabled = enabled && (column == FusionColumn::kAscend || (column == FusionColumn::kCpu ? p.pattern->on_cpu
                                                                                           : p.pattern->on_gpu));
  }
  if (enabled && anyMatch(p, o.disable_pass)) enabled = false;
  else if (!enabled && o.opt_level > 0 && anyMatch(p, o.enable_pass)) enabled = true;
  return enabled;
}
}  // namespace

bool passWillRun(const std::string& name, const FusionOptions& o, FusionColumn column) {
  for (const PassSpec& p : pipeline()) if (name == p.name && passEnabled(p, o, column)) return true;
  return false;
}

bool matchesAnyPass(const std::string& pattern) {
  for (const PassSpec& p : pipeline()) if (matches(p, pattern)) return true;
  return false;
}

namespace {

// A fused cluster its backend cannot run (the renderer cannot spell it) would fall back
// to the host whole; dissolved into its ops, each may still run on the backend.
StatusOr<size_t> dissolveUnsupportedClusters(ir::Graph& g, const std::function<bool(const ir::Node&)>& supports) {
  std::set<int> rejected;  // by the fused node's rank among the fused nodes
  int rank = 0;
  for (const ir::Node& n : g.nodes) {
    if (!n.subgraph) continue;
    if (!supports(n)) {
      rejected.insert(rank);
      GKRT_LOG_INFO("the backend cannot run fused node '", n.name, "'; its ", n.subgraph->nodes.size(), " ops run one by one");
    }
    ++rank;
  }
  if (rejected.empty()) return size_t{0};
  std::vector<int> label;
  RETURN_IF_ERROR(inlineFusedNodes(g, &label));
  std::map<int, std::vector<int>> kept;
  for (size_t i = 0; i < label.size(); ++i) {
    if (label[i] >= 0 && !rejected.count(label[i])) kept[label[i]].push_back(static_cast<int>(i));
  }
  std::vector<std::vector<int>> groups;
  for (auto& [l, nodes] : kept) groups.push_back(std::move(nodes));
  RETURN_IF_ERROR(outlineGroups(g, groups, "fused_"));
  return rejected.size();
}

}  // namespace

StatusOr<FusionReport> runFusionPipeline(ir::Graph& g, const FusionOptions& o, FusionColumn column,
                                         const std::function<bool(const ir::Node&)>& supports) {
  FusionReport report;
  report.column = column;
  report.ops_before = g.countNodesDeep();
  FusionContext ctx{g, o, column, effectiveExpandOps(column, o), effectiveClusterOps(column, o), supports};
  for (const std::string& w : o.warnings) GKRT_LOG_WARNING(w);
  GKRT_LOG_INFO("graph kernel passes: ", [] {
    std::string s;
    for (const std::string& n : switchablePassNames()) s += (s.empty() ? "" : ",") + n;
    return s;
  }());
  int dump_counter = 0;
  std::set<std::string> input_names;  // nodes of the graph as given have no origin pass
  collectNodeNames(g, &input_names);
  for (const std::string& n : input_names) report.node_origin_pass.emplace(n, "");
  if (o.dump_as_text) RETURN_IF_ERROR(writeDump(o, dump_counter++, "before_fusion", g, &report.dump_files));
  for (const PassSpec& p : pipeline()) {
    PassRecord rec{fullName(p), false, false, 0};
    if (!passEnabled(p, o, column)) {
      GKRT_LOG_INFO("graph kernel pass ", rec.name, " is disabled.");
      report.passes.push_back(rec);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    auto changed = p.run(ctx);
    rec.microseconds = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!changed.ok()) return changed.status().withContext("graph kernel pass " + rec.name);
    rec.ran = true;
    rec.changed = *changed;
    GKRT_LOG_INFO("Run graph kernel pass ", rec.name, " in ", rec.microseconds, " us");
    report.passes.push_back(rec);
    if (rec.changed) recordNewNodes(g, p.name, &report.node_origin_pass);
    if (o.dump_as_text) RETURN_IF_ERROR(writeDump(o, dump_counter++, rec.name, g, &report.dump_files));
  }
  if (supports) {
    ASSIGN_OR_RETURN(report.dissolved, dissolveUnsupportedClusters(g, supports));
  }
  RETURN_IF_ERROR(ir::validateGraph(g).withContext("after fusion"));
  RETURN_IF_ERROR(ir::inferShapes(g).withContext("after fusion"));
  for (auto it = report.node_origin_pass.begin(); it != report.node_origin_pass.end();) {
    it = it->second.empty() ? report.node_origin_pass.erase(it) : std::next(it);
  }
  report.ops_after = g.countNodesDeep();
  report.kernels = g.nodes.size();
  for (const ir::Node& n : g.nodes) report.clusters += n.subgraph != nullptr;
  return report;
}

}  // namespace gkrt
