// rotary_embedding_fusion (gkrt's own, preprocess): the rotary position embedding as LLM
// exporters write it becomes one Rotary node (runtime/ir/ops/rotary.h). Two forms, halves
// taken by StridedSlice over the last axis of x [..., D]:
//   HF / optimum:  Add(Mul(x, cos), Mul(Concat(Neg(x[D/2:]), x[:D/2]), sin))
//   ONNX RotaryEmbedding / onnxruntime's as gkrt converts them (half-size cos/sin):
//                  Concat(Sub(Mul(c, x1), Mul(s, x2)), Add(Mul(s, x1), Mul(c, x2)))
// Mul and Add operands in either order; every intermediate read only inside the pattern.
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/rotary.h"

namespace gkrt::passes {
namespace {

// t = x[..., :D/2] (half 0) or x[..., D/2:] (half 1) by a StridedSlice of the last axis.
bool halfOf(const PatternGraph& pg, int t, int* x, int* half) {
  const ir::Node* s = pg.producer(t, {"StridedSlice"});
  if (!s) return false;
  const ir::Graph& g = pg.graph();
  const auto& a = s->attrs.get<StridedSliceAttrs>();
  const Shape& xs = g.tensors[size_t(s->inputs[0])].shape;
  const int64_t rank = int64_t(xs.size()), D = rank ? xs.back() : 0;
  if (a.axes.size() != 1 || (a.axes[0] != -1 && a.axes[0] != rank - 1) || (!a.steps.empty() && a.steps[0] != 1)) return false;
  if (D <= 0 || D % 2) return false;
  const int64_t b = a.begins[0], e = a.ends[0];
  if (b == 0 && e == D / 2) *half = 0;
  else if (b == D / 2 && e >= D) *half = 1;
  else return false;
  *x = s->inputs[0];
  return true;
}

bool lastAxisConcat(const ir::Graph& g, const ir::Node* n) {
  if (!n || n->inputs.size() != 2) return false;
  const int64_t axis = n->attrs.get<AxisAttrs>().axis, rank = int64_t(g.tensors[size_t(n->outputs[0])].shape.size());
  return axis == -1 || axis == rank - 1;
}

// cos/sin usable with x: the Rotary shape rule holds.
bool anglesFit(const ir::Graph& g, int x, int c, int s) {
  if (g.tensors[size_t(c)].dtype != g.tensors[size_t(x)].dtype || g.tensors[size_t(s)].dtype != g.tensors[size_t(x)].dtype) return false;
  return ops::rotaryRows(g.tensors[size_t(x)].shape, g.tensors[size_t(c)].shape, g.tensors[size_t(s)].shape).ok();
}

// Mul(a, b) with one operand `want` (single use of the Mul's output): the other, or -1.
int mulPartner(const PatternGraph& pg, int t, int want) {
  const ir::Node* m = pg.producer(t, {"Mul"});
  if (!m || !pg.singleUse(t)) return -1;
  return m->inputs[0] == want ? m->inputs[1] : m->inputs[1] == want ? m->inputs[0] : -1;
}

// HF form rooted at Add: x, cos, sin.
bool hfForm(const PatternGraph& pg, const ir::Node& add, int* x, int* c, int* s) {
  for (int k : {0, 1}) {
    const ir::Node* rot_mul = pg.producer(add.inputs[size_t(1 - k)], {"Mul"});
    if (!rot_mul || !pg.singleUse(add.inputs[size_t(1 - k)])) continue;
    for (int r : {0, 1}) {
      const int rot = rot_mul->inputs[size_t(r)];
      const ir::Node* cat = pg.producer(rot, {"Concat"});
      if (!cat || !pg.singleUse(rot) || !lastAxisConcat(pg.graph(), cat)) continue;
      const ir::Node* neg = pg.producer(cat->inputs[0], {"Neg"});
      int xa = -1, xb = -1, ha = -1, hb = -1;
      if (!neg || !pg.singleUse(cat->inputs[0]) || !halfOf(pg, neg->inputs[0], &xa, &ha) || !halfOf(pg, cat->inputs[1], &xb, &hb)) continue;
      if (xa != xb || ha != 1 || hb != 0) continue;
      const int cos = mulPartner(pg, add.inputs[size_t(k)], xa);
      if (cos < 0) continue;
      const int sin = rot_mul->inputs[size_t(1 - r)];
      if (!anglesFit(pg.graph(), xa, cos, sin)) continue;
      *x = xa, *c = cos, *s = sin;
      return true;
    }
  }
  return false;
}

// Converted RotaryEmbedding form rooted at Concat: x, cos, sin.
bool halvesForm(const PatternGraph& pg, const ir::Node& cat, int* x, int* c, int* s) {
  if (!lastAxisConcat(pg.graph(), &cat)) return false;
  const ir::Node* sub = pg.producer(cat.inputs[0], {"Sub"});
  const ir::Node* add = pg.producer(cat.inputs[1], {"Add"});
  if (!sub || !add || !pg.singleUse(cat.inputs[0]) || !pg.singleUse(cat.inputs[1])) return false;
  const ir::Node* m1 = pg.producer(sub->inputs[0], {"Mul"});
  const ir::Node* m2 = pg.producer(sub->inputs[1], {"Mul"});
  if (!m1 || !m2) return false;
  for (int k1 : {0, 1}) {
    for (int k2 : {0, 1}) {
      int xa = -1, xb = -1, ha = -1, hb = -1;
      if (!halfOf(pg, m1->inputs[size_t(k1)], &xa, &ha) || !halfOf(pg, m2->inputs[size_t(k2)], &xb, &hb)) continue;
      if (xa != xb || ha != 0 || hb != 1) continue;
      const int x1 = m1->inputs[size_t(k1)], x2 = m2->inputs[size_t(k2)];
      const int cos = m1->inputs[size_t(1 - k1)], sin = m2->inputs[size_t(1 - k2)];
      if (!pg.singleUse(sub->inputs[0]) || !pg.singleUse(sub->inputs[1])) continue;
      // Add(Mul(sin, x1), Mul(cos, x2)), either order
      const bool ok = (mulPartner(pg, add->inputs[0], x1) == sin && mulPartner(pg, add->inputs[1], x2) == cos) ||
                      (mulPartner(pg, add->inputs[1], x1) == sin && mulPartner(pg, add->inputs[0], x2) == cos);
      if (!ok || !anglesFit(pg.graph(), xa, cos, sin)) continue;
      *x = xa, *c = cos, *s = sin;
      return true;
    }
  }
  return false;
}

StatusOr<bool> rotaryOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    int x = -1, c = -1, s = -1;
    const bool found = (isOp(n, "Add") && n.inputs.size() == 2 && hfForm(pg, n, &x, &c, &s)) ||
                       (isOp(n, "Concat") && halvesForm(pg, n, &x, &c, &s));
    if (!found || !isPatternDType(g.tensors[size_t(x)].dtype)) continue;
    RETURN_IF_ERROR(replaceWithPatternNode(g, int(i), patternNode("Rotary", n.name + "/rotary", Attrs(), {x, c, s}, n.outputs)));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseRotaryEmbedding(FusionContext& ctx) { return !findOp("Rotary") ? PassResult(false) : rewriteAll(ctx, rotaryOnce); }

}  // namespace gkrt::passes
