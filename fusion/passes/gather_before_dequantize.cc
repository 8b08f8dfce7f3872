// gather_before_dequantize (gkrt's own pass, preprocess, before ConstantFolding): an
// embedding table kept as int8 and dequantized in the graph,
//   Gather(Mul(Cast<float>(q [V, D] int8|uint8), s), ids, axis 0)
//   Gather(DequantizeLinear(q [V, D], s, zp?), ids, axis 0)    (per tensor, or per column: axis 1)
// becomes the dequantization of the gathered rows,
//   Mul(Cast<float>(Gather(q, ids)), s)
//   DequantizeLinear(Gather(q, ids), s, zp?, axis = last)
// so the table stays 8 bits (no float copy of V x D values at compile, nor a dequantization
// of the whole table per run when it is too big to fold) and only the looked-up rows are
// widened. The values are the same: the elementwise steps commute with picking rows. s (and
// zp) must be one value or one per column (broadcast along the last axis only); the Cast,
// Mul and Dequantize must be read only by the next op.
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

// t holds one value, or one per column of a [V, D] table along its last axis only.
bool perColumn(const ir::Graph& g, int t, int64_t d) {
  if (t < 0) return true;
  const ir::Tensor& s = g.tensors[size_t(t)];
  const int64_t e = numElements(s.shape);
  if (!s.isConstant()) return false;
  if (e == 1) return s.shape.size() <= 2;
  return e == d && !s.shape.empty() && s.shape.back() == d && s.shape.size() <= 2;
}

bool int8Table(const ir::Tensor& q) {
  return q.isConstant() && (q.dtype == DType::kInt8 || q.dtype == DType::kUInt8) && q.shape.size() == 2;
}

StatusOr<bool> moveOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& gather = g.nodes[i];
    if (!isOp(gather, "Gather") || gather.inputs.size() != 2 || gather.attrs.get<AxisAttrs>().axis != 0) continue;
    const int table = gather.inputs[0], ids = gather.inputs[1], y = gather.outputs[0];
    if (!pg.singleUse(table) || g.tensors[size_t(table)].shape.size() != 2) continue;
    const Shape ys = g.tensors[size_t(y)].shape;
    const int64_t d = g.tensors[size_t(table)].shape[1];
    const std::string base = gather.name + "/int8_rows";
    if (const ir::Node* dq = pg.producer(table, {"DequantizeLinear"})) {
      const auto qa = dq->attrs.get<QuantAttrs>();
      const int q = dq->inputs[0], s = dq->inputs[1], zp = dq->inputs.size() > 2 ? dq->inputs[2] : -1;
      const bool scalar = numElements(g.tensors[size_t(s)].shape) == 1;
      if (!int8Table(g.tensors[size_t(q)]) || qa.block_size != 0 || (!scalar && qa.axis != 1 && qa.axis != -1) ||
          !perColumn(g, s, d) || !perColumn(g, zp, d) || (!scalar && g.tensors[size_t(s)].shape.size() != 1)) {
        continue;
      }
      const DType qt = g.tensors[size_t(q)].dtype;
      const int dq_index = pg.producerIndex(table);
      std::vector<int> dq_inputs = dq->inputs;
      QuantAttrs moved = qa;
      moved.axis = int64_t(ys.size()) - 1;
      const int rows = addPatternTensor(g, base, qt, ys);
      g.addNode(patternNode("Gather", base + "/gather", Attrs(AxisAttrs{0, false}), {q, ids}, {rows}));
      dq_inputs[0] = rows;
      RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
                                             patternNode("DequantizeLinear", base + "/dequantize", Attrs(moved),
                                                         std::move(dq_inputs), {y}),
                                             {dq_index}));
      return true;
    }
    const ir::Node* mul = pg.producer(table, {"Mul"});
    if (!mul || mul->inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int c = mul->inputs[size_t(side)], s = mul->inputs[size_t(1 - side)];
      const ir::Node* cast = pg.producer(c, {"Cast"});
      if (!cast || !pg.singleUse(c) || !int8Table(g.tensors[size_t(cast->inputs[0])]) || !perColumn(g, s, d) ||
          g.tensors[size_t(c)].shape != g.tensors[size_t(table)].shape || g.tensors[size_t(s)].shape.size() > ys.size()) {
        continue;
      }
      const int q = cast->inputs[0];
      const DType qt = g.tensors[size_t(q)].dtype, ft = g.tensors[size_t(c)].dtype;
      const Attrs cast_attrs = cast->attrs;
      const int mul_index = pg.producerIndex(table), cast_index = pg.producerIndex(c);
      const int rows = addPatternTensor(g, base, qt, ys);
      const int wide = addPatternTensor(g, base + "_float", ft, ys);
      g.addNode(patternNode("Gather", base + "/gather", Attrs(AxisAttrs{0, false}), {q, ids}, {rows}));
      g.addNode(patternNode("Cast", base + "/cast", cast_attrs, {rows}, {wide}));
      RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
                                             patternNode("Mul", base + "/scale", Attrs(), {wide, s}, {y}),
                                             {mul_index, cast_index}));
      return true;
    }
  }
  return false;
}

}  // namespace

PassResult moveGatherBeforeDequantize(FusionContext& ctx) {
  for (const char* op : {"Gather", "Cast", "Mul", "DequantizeLinear"}) if (!findOp(op)) return PassResult(false);
  return rewriteAll(ctx, moveOne);
}

}  // namespace gkrt::passes
