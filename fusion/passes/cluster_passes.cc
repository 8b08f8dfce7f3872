// Expansion (Appendix 1), clustering (Appendix 2), pattern-based splitting and
// parallel fusion. Rules read op classes, never op pairs (FUSION_NOTES §5).
#include <algorithm>
#include <set>
#include <string>

#include "fusion/area_graph.h"
#include "fusion/expander.h"
#include "fusion/passes/passes.h"
#include "fusion/planted_fault.h"
#include "runtime/ir/op_def.h"
#include "runtime/base/log.h"

namespace gkrt::passes {
namespace {

bool staticNode(const ir::Graph& g, const ir::Node& n) {
  for (int t : n.inputs) if (t >= 0 && !isStatic(g.tensors[t].shape)) return false;
  for (int t : n.outputs) if (!isStatic(g.tensors[t].shape)) return false;
  return true;
}

bool clusterable(const FusionContext& ctx, const ir::Node& n) {
  return !n.subgraph && ctx.cluster_ops.count(n.op) && staticNode(ctx.graph, n) && (!ctx.supports || ctx.supports(n));
}

// A node's pattern in the split model: reshape < elementwise < broadcast < reduce < opaque.
OpClass patternOf(const ir::Graph& g, const ir::Node& n) {
  if (n.op->op_class != OpClass::kElementwise) return n.op->op_class;
  const Shape& out = g.tensors[n.outputs[0]].shape;
  for (int t : n.inputs) {
    if (t >= 0 && g.tensors[t].shape != out && !(g.tensors[t].isConstant() && numElements(g.tensors[t].shape) == 1)) {
      return OpClass::kBroadcast;
    }
  }
  return OpClass::kElementwise;
}

bool isGemmLike(const ir::Node& n) {
  const std::string op = n.op->name;
  return op == "MatMul" || op == "BatchMatMul" || op == "Gemm" || op == "FullyConnected" || op == "Conv2D";
}

struct AreaInfo {
  OpClass pattern = OpClass::kReshape;
  bool has_reshape = false, has_broadcast = false, has_gemm = false;
  int reduces = 0;
};

AreaInfo describe(const ir::Graph& g, const AreaGraph& areas, int a) {
  AreaInfo info;
  for (int m : areas.members(a)) {
    const ir::Node& n = g.nodes[m];
    const OpClass p = isGemmLike(n) ? OpClass::kOpaque : patternOf(g, n);
    info.pattern = std::max(info.pattern, p);
    info.has_reshape |= p == OpClass::kReshape;
    info.has_broadcast |= p == OpClass::kBroadcast;
    info.has_gemm |= isGemmLike(n);
    info.reduces += p == OpClass::kReduce;
  }
  return info;
}

bool isConv(const ir::Node& n) { return std::string(n.op->name) == "Conv2D"; }
bool hasConv(const ir::Graph& g, const AreaGraph& areas, int a) {
  for (int m : areas.members(a)) if (isConv(g.nodes[m])) return true;
  return false;
}

// A convolution's epilogue is a chain that one convolution kernel applies to each
// output element as it is written (oneDNN post-ops): consumer area c (one node) may
// join conv area p when
//   - c's node is an epilogue op: a unary activation, or Add/Sub/Mul/Maximum/Minimum
//     whose other operand comes from outside p (a constant, a per-channel or scalar
//     constant, or a tensor of the output's shape such as a residual);
//   - it reads p's last value (the chain tail) once, or is the Mul of SiLU
//     (tail = Sigmoid(v), node = v * tail, v in p);
//   - its output is float32 of the convolution's output shape;
//   - every value p produces is read only inside p and by that node (single-use
//     intermediates, not graph outputs), so the fused kernel has one output; SiLU's
//     Sigmoid may join while its input is also read by the Mul that joins next.
bool convEpilogueAllows(const ir::Graph& g, const AreaGraph& areas, int p, int c) {
  if (areas.size(c) != 1) return false;
  const ir::Node& n = g.nodes[areas.members(c)[0]];
  static const std::set<std::string> kUnary = {"ReLU", "Clip", "HSwish", "HSigmoid", "Sigmoid", "SiLU", "Tanh", "GeLU",
                                              "LeakyReLU", "Exp", "Abs", "Sqrt", "Square"};
  static const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Maximum", "Minimum"};
  const std::string op = n.op->name;
  if (n.outputs.size() != 1 || !(n.inputs.size() == 1 ? kUnary.count(op) : n.inputs.size() == 2 && kBinary.count(op))) {
    return false;
  }
  const std::vector<int>& pm = areas.members(p);
  std::set<int> inside, read_inside;
  for (int m : pm) {
    inside.insert(g.nodes[m].outputs.begin(), g.nodes[m].outputs.end());
    read_inside.insert(g.nodes[m].inputs.begin(), g.nodes[m].inputs.end());
  }
  const ir::Node* conv = nullptr;
  const ir::Node* tail_node = nullptr;  // the member whose value no other member reads
  for (int m : pm) {
    const ir::Node& q = g.nodes[m];
    if (isConv(q)) conv = &q;
    if (q.outputs.size() != 1) return false;
    if (!read_inside.count(q.outputs[0])) {
      if (tail_node) return false;
      tail_node = &q;
    }
  }
  if (!conv || !tail_node) return false;
  const ir::Tensor& y = g.tensors[n.outputs[0]];
  if (y.dtype != DType::kFloat32 || y.shape != g.tensors[conv->outputs[0]].shape) return false;
  const ir::Node& tail = *tail_node;
  const int t = tail.outputs[0];
  const bool silu = op == "Mul" && std::string(tail.op->name) == "Sigmoid" && pm.size() > 1 &&
                    ((n.inputs[0] == t && n.inputs[1] == tail.inputs[0]) || (n.inputs[1] == t && n.inputs[0] == tail.inputs[0]));
  if (!silu) {
    if (std::count(n.inputs.begin(), n.inputs.end(), t) != 1) return false;
    for (int in : n.inputs) if (in != t && inside.count(in)) return false;
    for (int in : n.inputs) {
      if (in == t || in < 0) continue;
      const ir::Tensor& o = g.tensors[in];
      const int64_t e = numElements(o.shape), C = y.shape.size() > 1 ? y.shape[1] : 0;
      const bool per_channel = o.isConstant() && e == C && o.shape.size() >= 3 && o.shape[o.shape.size() - 3] == C;
      if (o.dtype != DType::kFloat32 || !(o.shape == y.shape || e == 1 || per_channel)) return false;
    }
  }
  // SiLU's Sigmoid: its input is also read by the Mul that joins next.
  auto siluMul = [&](const ir::Node& u) {
    return op == "Sigmoid" && std::string(u.op->name) == "Mul" && u.inputs.size() == 2 &&
           ((u.inputs[0] == t && u.inputs[1] == n.outputs[0]) || (u.inputs[1] == t && u.inputs[0] == n.outputs[0]));
  };
  for (int m : pm) {  // single-use intermediates
    for (int v : g.nodes[m].outputs) {
      if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return false;
      for (const ir::Node& u : g.nodes) {
        if (&u == &n || std::find(u.inputs.begin(), u.inputs.end(), v) == u.inputs.end()) continue;
        if (v == t && siluMul(u)) continue;
        bool in_p = false;
        for (int q : pm) in_p |= &g.nodes[q] == &u;
        if (!in_p) return false;
      }
    }
  }
  return true;
}

// Whether producer area p may join consumer area c under the split rules.
bool splitRuleAllows(const FusionContext& ctx, const AreaGraph& areas, int p, int c) {
  const ir::Graph& g = ctx.graph;
  const AreaInfo pi = describe(g, areas, p), ci = describe(g, areas, c);
  if (areas.size(p) + areas.size(c) > ctx.options.composite_op_limit_size) return false;
  // A reshape only keeps its meaning inside a flat elementwise kernel, or in the flat
  // prologue of a reduction (MindSpore's reduce_fwd takes it there too): producers of
  // the reduce's input, elementwise without broadcasts, read in the reduce input's order.
  const bool reshape_prologue = pi.has_reshape && !ci.has_reshape && pi.reduces == 0 && ci.reduces > 0 &&
                                !pi.has_broadcast && !pi.has_gemm && !ci.has_gemm;
  if ((pi.has_reshape || ci.has_reshape) && !reshape_prologue &&
      (pi.has_broadcast || ci.has_broadcast || pi.reduces || ci.reduces || pi.has_gemm || ci.has_gemm)) {
    return false;
  }
  if (pi.pattern == OpClass::kOpaque && hasConv(g, areas, p)) return convEpilogueAllows(g, areas, p, c);
  if (pi.pattern == OpClass::kOpaque) {  // GEMM epilogue: elementwise consumers only
    return pi.has_gemm && ci.pattern <= OpClass::kBroadcast && !ci.has_gemm;
  }
  if (ci.pattern == OpClass::kOpaque) return false;  // nothing fuses into a GEMM's prologue
  if (pi.pattern <= OpClass::kBroadcast && ci.pattern <= OpClass::kBroadcast) return true;
  if (ci.pattern == OpClass::kReduce && pi.pattern <= OpClass::kBroadcast) {  // reduce absorbs its producers
    return pi.reduces == 0 && areas.size(p) + areas.size(c) <= ctx.options.reduce_fuse_depth + ci.reduces;
  }
  // A reduce feeding elementwise or reduce consumers: stitching (opt_level 3).
  return ctx.options.stitchFusion() && pi.pattern == OpClass::kReduce && ci.pattern <= OpClass::kReduce;
}

// Greedy merging along producer->consumer edges, in node order, until nothing changes.
void mergeAlongEdges(const ir::Graph& g, AreaGraph& areas, const std::function<bool(int, int)>& allowed) {
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      const int c = areas.areaOf(i);
      for (int p : areas.producers(c)) {
        if (allowed(p, c) && areas.canMerge(p, c)) {
          areas.merge(p, c);
          changed = true;
          break;
        }
      }
    }
  }
}

}  // namespace

PassResult expandOps(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size();) {
    const ir::Node& n = g.nodes[i];
    ExpanderFn fn = ctx.expand_ops.count(n.op) ? findExpander(n.op->name) : nullptr;
    if (!fn || n.subgraph) { ++i; continue; }
    const size_t before = g.nodes.size();
    const std::string name = n.name, op = n.op->name;
    const std::vector<int> outputs = n.outputs;
    auto done = expandNode(g, static_cast<int>(i), fn);
    if (!done.ok()) return done.status().withContext("GraphKernelExpander");
    if (!*done) {
      GKRT_LOG_INFO("expander of ", op, " declined node '", name, "'");
      ++i;
      continue;
    }
    changed = true;
    applyPlantedExpanderFault(g, op, outputs);  // tests only (fusion/planted_fault.h)
    i += g.nodes.size() + 1 - before;  // skip the nodes just emitted
  }
  return changed;
}

PassResult clusterOps(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  AreaGraph areas(g);
  mergeAlongEdges(g, areas, [&](int p, int c) {
    return clusterable(ctx, g.nodes[areas.members(p)[0]]) && clusterable(ctx, g.nodes[areas.members(c)[0]]);
  });
  auto groups = areas.groups(2);
  if (groups.empty()) return false;
  RETURN_IF_ERROR(outlineGroups(g, groups, "cluster_"));
  applyPlantedClusterFault(g);  // tests only (fusion/planted_fault.h)
  return true;
}

PassResult splitClusters(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  std::vector<int> label;
  size_t fused_before = 0;
  for (const ir::Node& n : g.nodes) fused_before += n.subgraph != nullptr;
  if (fused_before == 0) return false;
  RETURN_IF_ERROR(inlineFusedNodes(g, &label));
  AreaGraph areas(g);
  auto same_label = [&](int p, int c) {
    const int lp = label[areas.members(p)[0]], lc = label[areas.members(c)[0]];
    return lp >= 0 && lp == lc;
  };
  // Convolution epilogues first, so that an activation or residual Add joins its
  // convolution rather than a neighbouring elementwise area.
  mergeAlongEdges(g, areas, [&](int p, int c) {
    return same_label(p, c) && hasConv(g, areas, p) && convEpilogueAllows(g, areas, p, c);
  });
  // MindSpore's split model applies its patterns in order (FUSION_NOTES §5): elementwise
  // and broadcast areas grow first (elemwise_broadcast_fwd), then a reduction absorbs
  // its producers (reduce_fwd) and the rest follows. So an elementwise reader of a
  // reduction's producer joins that producer before the reduction takes it, and the
  // three end in one kernel (tests/fidelity found the order mattered).
  mergeAlongEdges(g, areas, [&](int p, int c) {
    return same_label(p, c) && describe(g, areas, p).pattern <= OpClass::kBroadcast &&
           describe(g, areas, c).pattern <= OpClass::kBroadcast && splitRuleAllows(ctx, areas, p, c);
  });
  mergeAlongEdges(g, areas, [&](int p, int c) { return same_label(p, c) && splitRuleAllows(ctx, areas, p, c); });
  RETURN_IF_ERROR(outlineGroups(g, areas.groups(2), "fused_"));
  return true;
}

PassResult fuseParallel(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  constexpr int kMaxBranches = 7;  // MindSpore's ParallelOpFusion limit
  std::vector<int> label;
  RETURN_IF_ERROR(inlineFusedNodes(g, &label));
  AreaGraph areas(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {  // rebuild each existing cluster first
    for (size_t j = i + 1; j < g.nodes.size(); ++j) {
      if (label[i] >= 0 && label[i] == label[j]) areas.merge(static_cast<int>(i), static_cast<int>(j));
    }
  }
  bool changed = false;
  std::vector<int> branches(g.nodes.size(), 1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (size_t j = i + 1; j < g.nodes.size(); ++j) {
      if (label[i] < 0 || label[j] < 0) continue;
      const int a = areas.areaOf(static_cast<int>(i)), b = areas.areaOf(static_cast<int>(j));
      if (a == b || branches[a] + branches[b] > kMaxBranches) continue;
      bool share = false;  // independent clusters reading a common tensor
      for (int x : g.nodes[i].inputs) for (int y : g.nodes[j].inputs) share = share || (x >= 0 && x == y && !g.tensors[x].isConstant());
      if (!share || !areas.canMerge(a, b)) continue;
      const int sum = branches[a] + branches[b];
      areas.merge(a, b);
      branches[areas.areaOf(a)] = sum;
      changed = true;
    }
  }
  RETURN_IF_ERROR(outlineGroups(g, areas.groups(2), "fused_"));
  return changed;
}

}  // namespace gkrt::passes
