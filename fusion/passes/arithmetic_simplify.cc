// Arithmetic simplification (a subset of MindSpore's numbered rules) and
// reshape/transpose elimination. A rule that would make a node's result just one of
// its inputs rewires the readers; a graph output is then written by that input's
// producer (a graph input or graph output keeps a no-op Reshape).
#include <algorithm>
#include <cmath>

#include "fusion/passes/passes.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::passes {
namespace {

// Whether tensor t is a constant whose every element equals v.
bool isConstantEqual(const ir::Graph& g, int t, float v) {
  if (t < 0 || !g.tensors[t].isConstant()) return false;
  const ir::Tensor& c = g.tensors[t];
  const int64_t n = numElements(c.shape);
  if (n == 0) return false;
  for (int64_t i = 0; i < n; ++i) if (ops::loadF(c.constant->data, c.dtype, i) != v) return false;
  return true;
}

bool sameType(const ir::Graph& g, int a, int b) {
  return g.tensors[a].shape == g.tensors[b].shape && g.tensors[a].dtype == g.tensors[b].dtype;
}

bool is(const ir::Node& n, const char* op) { return std::string(n.op->name) == op; }

// Rewrites node i in place to `op(inputs)` keeping its outputs; false (and nothing
// changed) when `op` is not in this build (minimal builds register only some ops).
bool rewrite(ir::Node& n, const char* op, std::vector<int> inputs, Attrs attrs = {}) {
  const OpDef* def = findOp(op);
  if (!def) return false;
  n.op = def;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  return true;
}

// Result equals input `a`: forward readers to it (unless the output is a graph output,
// in which case the node becomes a no-op Reshape).
bool forward(ir::Graph& g, size_t i, int a) {
  ir::Node& n = g.nodes[i];
  const int out = n.outputs[0];
  if (!sameType(g, out, a)) return false;
  if (isGraphOutput(g, out)) {
    const int p = producerOf(g, a);
    if (p >= 0 && !isGraphOutput(g, a)) {
      // a's producer writes the output itself and node i is left dead, as MindSpore
      // drops a no-op node before a graph output (tests/fidelity found the copy kept).
      for (size_t r = 0; r < g.nodes.size(); ++r) {
        if (r == i) continue;
        for (int& t : g.nodes[r].inputs) if (t == a) t = out;
      }
      for (int& t : g.nodes[p].outputs) if (t == a) t = out;
      n.inputs = {out};
      n.outputs = {a};
      return true;
    }
    if (is(n, "Reshape") && n.inputs[0] == a) return false;  // already minimal
    return rewrite(n, "Reshape", {a}, ShapeAttrs{g.tensors[out].shape});
  }
  replaceUses(g, out, a);
  return true;
}


// x * Clip(x + 3, 0, 6) / 6 (or * (1/6)), as exporters such as Paddle's write
// HardSwish, is HSwish(x): the same expression (runtime/ir/ops/elementwise_unary.cc),
// and one op that a convolution takes as a post-op. The Add, Clip and Mul must be
// read only by the next step.
bool hardSwish(ir::Graph& g, size_t i) {
  ir::Node& n = g.nodes[i];
  const bool div = is(n, "RealDiv") || is(n, "Div");
  if (n.inputs.size() != 2 || !(div || is(n, "Mul")) || !isFloat(g.tensors[n.outputs[0]].dtype)) return false;
  int m_t = n.inputs[0], k_t = n.inputs[1];
  if (!div && !isConstantEqual(g, k_t, 1.0f / 6.0f)) std::swap(m_t, k_t);
  if (div ? !isConstantEqual(g, k_t, 6.0f) : !isConstantEqual(g, k_t, 1.0f / 6.0f)) return false;
  const int m = producerOf(g, m_t);
  if (m < 0 || !is(g.nodes[m], "Mul") || readers(g, m_t) != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const int x = g.nodes[m].inputs[side], c_t = g.nodes[m].inputs[1 - side];
    const int c = producerOf(g, c_t);
    if (c < 0 || !is(g.nodes[c], "Clip") || readers(g, c_t) != 1) continue;
    const auto& clip = g.nodes[c].attrs.get<ClipAttrs>();
    if (clip.min != 0.0f || clip.max != 6.0f) continue;
    const int a_t = g.nodes[c].inputs[0], a = producerOf(g, a_t);
    if (a < 0 || !is(g.nodes[a], "Add") || readers(g, a_t) != 1) continue;
    const ir::Node& add = g.nodes[a];
    const bool x_plus_3 = (add.inputs[0] == x && isConstantEqual(g, add.inputs[1], 3.0f)) ||
                          (add.inputs[1] == x && isConstantEqual(g, add.inputs[0], 3.0f));
    if (!x_plus_3 || !sameType(g, x, n.outputs[0])) continue;
    return rewrite(n, "HSwish", {x});
  }
  return false;
}

// A reduction over axes of extent 1 only moves no value: a Reshape (MindSpore's rules
// 76-78), which then joins an elementwise kernel as MindSpore's does.
bool trivialReduce(ir::Graph& g, size_t i) {
  ir::Node& n = g.nodes[i];
  const std::string op = n.op->name;
  if (op.rfind("Reduce", 0) != 0 || n.inputs.empty() || n.outputs.size() != 1 || n.op->attr_kind != AttrKind::kAxes) {
    return false;
  }
  if (op != "ReduceSum" && op != "ReduceMean" && op != "ReduceMax" && op != "ReduceMin" && op != "ReduceProd") return false;
  const ir::Tensor &x = g.tensors[n.inputs[0]], &y = g.tensors[n.outputs[0]];
  if (!isStatic(x.shape) || !isStatic(y.shape) || x.dtype != y.dtype || numElements(x.shape) != numElements(y.shape) ||
      numElements(x.shape) == 0) {
    return false;  // an empty axis list over several elements, or a real reduction
  }
  return rewrite(n, "Reshape", {n.inputs[0]}, ShapeAttrs{y.shape});
}

bool simplifyNode(ir::Graph& g, size_t i) {
  if (hardSwish(g, i) || foldAffineChain(g, i) || foldBatchNormAffine(g, i) || trivialReduce(g, i)) return true;
  ir::Node& n = g.nodes[i];
  if (n.outputs.size() != 1) return false;
  const auto in = [&](size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; };
  if (is(n, "Add")) {                                                   // A + 0 = A, 0 + A = A
    if (isConstantEqual(g, in(1), 0)) return forward(g, i, in(0));
    if (isConstantEqual(g, in(0), 0)) return forward(g, i, in(1));
  } else if (is(n, "Sub") && isConstantEqual(g, in(1), 0)) {           // A - 0 = A
    return forward(g, i, in(0));
  } else if (is(n, "Mul")) {                                            // A * 1 = A
    if (isConstantEqual(g, in(1), 1)) return forward(g, i, in(0));
    if (isConstantEqual(g, in(0), 1)) return forward(g, i, in(1));
  } else if ((is(n, "RealDiv") || is(n, "Div")) && isConstantEqual(g, in(1), 1)) {  // A / 1 = A
    return forward(g, i, in(0));
  } else if (is(n, "Neg")) {                                            // Neg(Neg(A)) = A
    const int p = producerOf(g, in(0));
    if (p >= 0 && is(g.nodes[p], "Neg")) return forward(g, i, g.nodes[p].inputs[0]);
  } else if (is(n, "Pow") && isFloat(g.tensors[in(0)].dtype) && sameType(g, n.outputs[0], in(0))) {
    if (isConstantEqual(g, in(1), 1)) return forward(g, i, in(0));     // A ^ 1 = A
    if (isConstantEqual(g, in(1), 2)) { if (rewrite(n, "Mul", {in(0), in(0)})) return true; }
    if (isConstantEqual(g, in(1), 0.5f)) { if (rewrite(n, "Sqrt", {in(0)})) return true; }
    if (isConstantEqual(g, in(1), -0.5f)) { if (rewrite(n, "Rsqrt", {in(0)})) return true; }
    if (isConstantEqual(g, in(1), -1)) { if (rewrite(n, "Reciprocal", {in(0)})) return true; }
  } else if (is(n, "Cast") && g.tensors[in(0)].dtype == n.attrs.get<CastAttrs>().to) {  // no-op Cast
    return forward(g, i, in(0));
  }
  return false;
}

Ints normalizedPerm(const ir::Node& n, size_t rank) {
  Ints perm = n.attrs.get<PermAttrs>().perm;
  if (perm.empty()) for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  for (int64_t& p : perm) if (p < 0) p += static_cast<int64_t>(rank);
  return perm;
}

bool optimizeTransformNode(ir::Graph& g, size_t i) {
  ir::Node& n = g.nodes[i];
  const int x = n.inputs.empty() ? -1 : n.inputs[0];
  if (x < 0) return false;
  const int p = producerOf(g, x);
  if (is(n, "Reshape") || is(n, "ExpandDims") || is(n, "Squeeze")) {
    if (g.tensors[x].shape == g.tensors[n.outputs[0]].shape) return forward(g, i, x);  // to the same shape
    if (p >= 0 && (is(g.nodes[p], "Reshape") || is(g.nodes[p], "ExpandDims") || is(g.nodes[p], "Squeeze"))) {
      return rewrite(n, "Reshape", {g.nodes[p].inputs[0]}, ShapeAttrs{g.tensors[n.outputs[0]].shape});  // reshape of reshape
    }
  } else if (is(n, "Transpose")) {
    const size_t rank = g.tensors[x].shape.size();
    const Ints perm = normalizedPerm(n, rank);
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
    if (identity) return forward(g, i, x);
    Ints moved;  // the non-1 dims in output order: still ascending = the same element order
    for (int64_t d : perm) if (g.tensors[x].shape[d] != 1) moved.push_back(d);
    if (std::is_sorted(moved.begin(), moved.end())) {  // MindSpore's rules 65-69: a Reshape
      return rewrite(n, "Reshape", {x}, ShapeAttrs{g.tensors[n.outputs[0]].shape});
    }
    if (p >= 0 && is(g.nodes[p], "Transpose")) {  // transpose of transpose: compose
      const Ints inner = normalizedPerm(g.nodes[p], rank);
      Ints combined(rank);
      for (size_t d = 0; d < rank; ++d) combined[d] = inner[perm[d]];
      return rewrite(n, "Transpose", {g.nodes[p].inputs[0]}, PermAttrs{combined});
    }
  }
  return false;
}

PassResult runNodeRule(FusionContext& ctx, bool (*rule)(ir::Graph&, size_t)) {
  bool changed = false;
  for (size_t i = 0; i < ctx.graph.nodes.size(); ++i) changed = rule(ctx.graph, i) || changed;
  if (changed) RETURN_IF_ERROR(eliminateDeadNodes(ctx).status());
  return changed;
}

}  // namespace

PassResult simplifyArithmetic(FusionContext& ctx) { return runNodeRule(ctx, simplifyNode); }
PassResult optimizeTransforms(FusionContext& ctx) { return runNodeRule(ctx, optimizeTransformNode); }

}  // namespace gkrt::passes
