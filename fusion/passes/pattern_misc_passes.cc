// inference_swiglu_fusion, split_concat_fusion, shape_reshape and shape_reshape_2.
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

// Mul(SiLU(Split(x)[0]), Split(x)[1]) (either operand order) -> SwiGLU(x, axis).
// Conditions: the Split makes two halves of equal size; each half, and the SiLU, has
// one reader; SiLU on the first half (Ascend's Swiglu order; the other order is left).
StatusOr<bool> swigluOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mul = g.nodes[i];
    if (!isOp(mul, "Mul")) continue;
    for (int k : {0, 1}) {
      const ir::Node* silu = pg.producer(mul.inputs[k], {"SiLU"});
      if (!silu || !pg.singleUse(mul.inputs[k])) continue;
      const ir::Node* split = pg.producer(silu->inputs[0], {"Split"});
      if (!split || split->outputs.size() != 2 || split->outputs[0] != silu->inputs[0] ||
          split->outputs[1] != mul.inputs[1 - k] || !pg.singleUse(split->outputs[0]) ||
          !pg.singleUse(split->outputs[1])) {
        continue;
      }
      const ir::Tensor &a = g.tensors[split->outputs[0]], &b = g.tensors[split->outputs[1]];
      if (a.shape != b.shape || !isStatic(a.shape) || !isPatternDType(a.dtype)) continue;
      ir::Node n;
      n.name = "SwiGLU_" + mul.name;
      n.op = findOp("SwiGLU");
      n.attrs = Attrs(AxisAttrs{split->attrs.get<SplitAttrs>().axis, false});
      n.inputs = {split->inputs[0]};
      n.outputs = {mul.outputs[0]};
      RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n)));
      return true;
    }
  }
  return false;
}

// Concat(Split(x, axis 0, n equal parts) in order, axis 1) on a 2-D x [r, c] ->
// Reshape [n, r/n, c] -> Transpose (1, 0, 2) -> Reshape [r/n, n*c]; every part has one
// reader, the Concat, which takes exactly the parts in order.
StatusOr<bool> splitConcatOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& concat = g.nodes[i];
    if (!isOp(concat, "Concat") || concat.inputs.empty()) continue;
    const ir::Node* split = pg.producer(concat.inputs[0], {"Split"});
    if (!split || split->outputs != concat.inputs) continue;
    const ir::Tensor& x = g.tensors[split->inputs[0]];
    if (x.shape.size() != 2 || !isStatic(x.shape)) continue;
    const int64_t parts = static_cast<int64_t>(split->outputs.size());
    bool ok = parts > 1 && x.shape[0] % parts == 0;
    for (int t : split->outputs) ok = ok && pg.singleUse(t) && g.tensors[t].shape[0] == x.shape[0] / parts;
    auto sa = normalizeAxis(split->attrs.get<SplitAttrs>().axis, 2), ca = normalizeAxis(concat.attrs.get<AxisAttrs>().axis, 2);
    if (!ok || !sa.ok() || !ca.ok() || *sa != 0 || *ca != 1) continue;
    const int64_t r = x.shape[0] / parts, c = x.shape[1];
    const int t1 = addPatternTensor(g, concat.name + "/parts", x.dtype, {parts, r, c});
    const int t2 = addPatternTensor(g, concat.name + "/interleaved", x.dtype, {r, parts, c});
    const int split_index = pg.producerIndex(concat.inputs[0]);
    ir::Node reshape{concat.name + "/split_reshape", findOp("Reshape"), Attrs(ShapeAttrs{{parts, r, c}}), {split->inputs[0]}, {t1}};
    ir::Node transpose{concat.name + "/split_transpose", findOp("Transpose"), Attrs(PermAttrs{{1, 0, 2}}), {t1}, {t2}};
    ir::Node merge{concat.name + "/concat_reshape", findOp("Reshape"), Attrs(ShapeAttrs{{r, parts * c}}), {t2}, concat.outputs};
    g.nodes[split_index] = std::move(reshape);
    g.nodes.push_back(std::move(transpose));
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(merge)));
    return true;
  }
  return false;
}

// DynamicReshape(x, shape) whose shape is computed at compile time -> Reshape(x) with the
// shape as an attribute. shape_reshape: the shape is a scalar expression over Shape,
// Gather, Concat and arithmetic (MindSpore's ReshapeExt with a scalar graph; gkrt knows
// the value once the input sizes are fixed); shape_reshape_2: the shape is Shape(y).
template <bool kOfShapeOp> StatusOr<bool> shapeReshapeOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& r = g.nodes[i];
    if (!isOp(r, "DynamicReshape") || !r.op->lower) continue;
    const ir::Tensor& s = g.tensors[r.inputs[1]];
    const ir::Node* maker = pg.producer(r.inputs[1]);
    if (!maker || s.isConstant() || !s.value || isOp(*maker, "Shape") != kOfShapeOp) continue;
    TensorType tx{g.tensors[r.inputs[0]].dtype, g.tensors[r.inputs[0]].shape, g.tensors[r.inputs[0]].knownData()};
    TensorType ts{s.dtype, s.shape, s.value.get()};
    LoweredOp low;
    if (!isStatic(tx.shape) || !r.op->lower(r, {&tx, &ts}, low).ok()) continue;
    ir::Node n{r.name + "/static", findOp(low.op), low.attrs, {}, r.outputs};
    for (int k : low.inputs) n.inputs.push_back(r.inputs[k]);
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n)));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseSwiGLU(FusionContext& ctx) { return !findOp("SwiGLU") ? PassResult(false) : rewriteAll(ctx, swigluOnce); }
PassResult fuseSplitConcat(FusionContext& ctx) { return !findOp("Transpose") ? PassResult(false) : rewriteAll(ctx, splitConcatOnce); }
PassResult fuseShapeReshape(FusionContext& ctx) { return !findOp("Reshape") ? PassResult(false) : rewriteAll(ctx, shapeReshapeOnce<false>); }
PassResult fuseShapeReshape2(FusionContext& ctx) { return !findOp("Reshape") ? PassResult(false) : rewriteAll(ctx, shapeReshapeOnce<true>); }

}  // namespace gkrt::passes
