// Residual add + normalisation: add_layer_norm_fusion (+ _v3_, _ext_), add_rms_norm_fusion,
// add_cast_rms_norm_cast_fusion, and the two quantised RmsNorm passes
// (add_rms_norm_quant_fusion, rms_norm_quant_fusion: runtime/ir/ops/pattern_quant_ops.cc).
#include <optional>
#include <utility>

#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::passes {
namespace {

bool unread(const PatternGraph& pg, const ir::Node& n, size_t from_output) {
  for (size_t k = from_output; k < n.outputs.size(); ++k) if (pg.uses(n.outputs[k]) > 0) return false;
  return true;
}

// The Add making `x`: two operands of one shape and dtype (no broadcast), else null.
const ir::Node* residualAdd(const PatternGraph& pg, int x) {
  const ir::Node* add = pg.producer(x, {"Add"});
  if (!add) return nullptr;
  const ir::Tensor &a = pg.graph().tensors[add->inputs[0]], &b = pg.graph().tensors[add->inputs[1]];
  if (a.shape != b.shape || a.dtype != b.dtype || !isStatic(a.shape) || !isPatternDType(a.dtype)) return nullptr;
  return add;
}

enum class LayerNormForm { kAffineLastAxis, kAffineSeveralAxes, kWithoutAffine };

// LayerNorm(Add(x1, x2), gamma, beta) -> AddLayerNorm(x1, x2, gamma, beta) = (y, x1 + x2).
// Conditions (MindSpore's AddLayerNormFusion): the add has two operands of one shape;
// x, gamma and beta of one dtype; the LayerNorm's mean and variance outputs unread.
// The sum may have other readers: AddLayerNorm outputs it. MindSpore has three passes for
// its three LayerNorm primitives; gkrt has one LayerNorm op and splits the passes by
// the forms those primitives take: LayerNorm (gamma and beta, the last axis),
// LayerNormV3 (begin_norm_axis before the last axis), LayerNormExt (weight or bias None).
StatusOr<bool> fuseOneAddLayerNorm(FusionContext& ctx, LayerNormForm form) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& ln = g.nodes[i];
    if (!isOp(ln, "LayerNorm") || !unread(pg, ln, 1)) continue;
    const ir::Node* add = residualAdd(pg, ln.inputs[0]);
    if (!add) continue;
    const ir::Tensor& x = g.tensors[ln.inputs[0]];
    const int gamma = ln.inputs.size() > 1 ? ln.inputs[1] : -1, beta = ln.inputs.size() > 2 ? ln.inputs[2] : -1;
    if ((gamma >= 0 && g.tensors[gamma].dtype != x.dtype) || (beta >= 0 && g.tensors[beta].dtype != x.dtype)) continue;
    auto axis = normalizeAxis(ln.attrs.get<NormAttrs>().axis, static_cast<int64_t>(x.shape.size()));
    if (!axis.ok()) continue;
    const bool affine = gamma >= 0 && beta >= 0;
    const LayerNormForm found = !affine ? LayerNormForm::kWithoutAffine
                                : *axis == static_cast<int64_t>(x.shape.size()) - 1 ? LayerNormForm::kAffineLastAxis
                                                                                    : LayerNormForm::kAffineSeveralAxes;
    if (found != form) continue;
    ir::Node n;
    n.name = "AddLayerNorm_" + ln.name;
    n.op = findOp("AddLayerNorm");
    n.attrs = ln.attrs;
    n.inputs = {add->inputs[0], add->inputs[1], gamma, beta};
    while (n.inputs.back() < 0) n.inputs.pop_back();
    n.outputs = {ln.outputs[0], add->outputs[0]};
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n), {pg.producerIndex(ln.inputs[0])}));
    return true;
  }
  return false;
}

// RmsNorm(Add(x1, x2), gamma) -> AddRmsNorm(x1, x2, gamma) = (y, x1 + x2); rstd unread.
StatusOr<bool> fuseOneAddRmsNorm(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& rms = g.nodes[i];
    if (!isOp(rms, "RmsNorm") || !unread(pg, rms, 1)) continue;
    const ir::Node* add = residualAdd(pg, rms.inputs[0]);
    if (!add || g.tensors[rms.inputs[1]].dtype != g.tensors[rms.inputs[0]].dtype) continue;
    ir::Node n;
    n.name = "AddRmsNorm_" + rms.name;
    n.op = findOp("AddRmsNorm");
    n.attrs = rms.attrs;
    n.inputs = {add->inputs[0], add->inputs[1], rms.inputs[1]};
    n.outputs = {rms.outputs[0], add->outputs[0]};
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n), {pg.producerIndex(rms.inputs[0])}));
    return true;
  }
  return false;
}

// Cast(RmsNorm(Cast(Add(x1, x2)) to float32, gamma)) back to the add's type ->
// AddRmsNorm(x1, x2, gamma) with y in the add's type (it normalises in float32 or wider).
// Conditions: the add is float16/bfloat16; the inner cast widens to float32 and is read
// only by the RmsNorm; the RmsNorm's y is read only by the outer cast, which narrows back
// to the add's type; rstd unread.
StatusOr<bool> fuseOneAddCastRmsNormCast(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& out_cast = g.nodes[i];
    if (!isOp(out_cast, "Cast")) continue;
    const ir::Node* rms = pg.producer(out_cast.inputs[0], {"RmsNorm"});
    if (!rms || !pg.singleUse(rms->outputs[0]) || !unread(pg, *rms, 1)) continue;
    const ir::Node* in_cast = pg.producer(rms->inputs[0], {"Cast"});
    if (!in_cast || !pg.singleUse(in_cast->outputs[0])) continue;
    const ir::Node* add = residualAdd(pg, in_cast->inputs[0]);
    if (!add) continue;
    const DType t = g.tensors[add->outputs[0]].dtype;
    if ((t != DType::kFloat16 && t != DType::kBFloat16) || g.tensors[in_cast->outputs[0]].dtype != DType::kFloat32 ||
        g.tensors[out_cast.outputs[0]].dtype != t) {
      continue;
    }
    ir::Node n;
    n.name = "AddRmsNorm_" + rms->name;
    n.op = findOp("AddRmsNorm");
    n.attrs = rms->attrs;
    n.inputs = {add->inputs[0], add->inputs[1], rms->inputs[1]};
    n.outputs = {out_cast.outputs[0], add->outputs[0]};
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n), {pg.producerIndex(in_cast->inputs[0])}));
    return true;
  }
  return false;
}

// A QuantizeLinear MindSpore's QuantV2 can be: per tensor (one-element constant float32
// scale, one-element constant int8/uint8 zero point of the output's type), float32
// precision, not blocked. Its x is returned in *x.
bool perTensorQuantize(const ir::Graph& g, const ir::Node& q, int* x) {
  if (!isOp(q, "QuantizeLinear") || q.inputs.size() < 3 || q.inputs[2] < 0) return false;
  const auto& a = q.attrs.get<QuantAttrs>();
  const ir::Tensor &scale = g.tensors[q.inputs[1]], &zp = g.tensors[q.inputs[2]];
  if ((a.to != DType::kInt8 && a.to != DType::kUInt8) || a.precision != DType::kFloat32 || a.block_size != 0) return false;
  if (!scale.isConstant() || scale.dtype != DType::kFloat32 || numElements(scale.shape) != 1) return false;
  if (!zp.isConstant() || zp.dtype != a.to || numElements(zp.shape) != 1) return false;
  *x = q.inputs[0];
  return true;
}

// The RmsNorm making t, read only there (its y single-use, rstd unread), x static and of
// a pattern dtype, else null.
const ir::Node* soleRmsNorm(const PatternGraph& pg, int t) {
  const ir::Node* rms = pg.producer(t, {"RmsNorm"});
  if (!rms || !pg.singleUse(t) || !unread(pg, *rms, 1)) return nullptr;
  const ir::Tensor& x = pg.graph().tensors[rms->inputs[0]];
  return isStatic(x.shape) && isPatternDType(x.dtype) ? rms : nullptr;
}

// add_rms_norm_quant_fusion. Pattern (MindSpore's AddRmsNormQuantFusion):
//   QuantizeLinear(RmsNorm(Add(x1, x2), gamma).y, scale, zero_point)
//     -> AddRmsNormQuant(x1, x2, gamma, scale, zero_point) = (q, x1 + x2)
// Conditions: the add has two operands of one shape and dtype; the RmsNorm's y is read
// only by the quantize and its rstd not at all (MindSpore's need_rms_norm_out, an extra
// reader of y, is not taken: the pass does not fire); the quantize is per tensor (above).
// The sum may have other readers: the pattern op outputs it.
StatusOr<bool> fuseOneAddRmsNormQuant(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& q = g.nodes[i];
    int y = -1;
    if (!perTensorQuantize(g, q, &y)) continue;
    const ir::Node* rms = soleRmsNorm(pg, y);
    if (!rms) continue;
    const ir::Node* add = residualAdd(pg, rms->inputs[0]);
    if (!add) continue;
    ir::Node n;
    n.name = "AddRmsNormQuant_" + rms->name;
    n.op = findOp("AddRmsNormQuant");
    n.attrs = rms->attrs;
    n.inputs = {add->inputs[0], add->inputs[1], rms->inputs[1], q.inputs[1], q.inputs[2]};
    n.outputs = {q.outputs[0], add->outputs[0]};
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n),
                                           {pg.producerIndex(y), pg.producerIndex(rms->inputs[0])}));
    return true;
  }
  return false;
}

// rms_norm_quant_fusion. Pattern (MindSpore's RmsNormQuantFusion):
//   QuantizeLinear(Add(RmsNorm(x, gamma).y, beta), scale, zero_point)
//     -> RmsNormQuant(x, gamma, scale, zero_point, beta)
// Conditions: beta a constant with one element per normalised element (either operand of
// the Add); the Add read only by the quantize, the RmsNorm's y only by the Add, its rstd
// not at all; the quantize per tensor. gkrt also takes the form without beta,
// QuantizeLinear(RmsNorm(x, gamma).y, ...), which RMSNorm exports write (MindSpore's
// RmsNorm has no beta either; its pass wants the Add). MindSpore's merging of two
// identical Add->Quant branches is not done (each branch fuses on its own when its
// RmsNorm has one reader; with two readers neither fuses).
StatusOr<bool> fuseOneRmsNormQuant(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& q = g.nodes[i];
    int v = -1;
    if (!perTensorQuantize(g, q, &v)) continue;
    int beta = -1, y = v;
    std::vector<int> erase;
    if (const ir::Node* add = pg.producer(v, {"Add"}); add && pg.singleUse(v)) {
      for (int side = 0; side < 2 && beta < 0; ++side) {
        const int r = add->inputs[side], b = add->inputs[1 - side];
        const ir::Node* rms = pg.producer(r, {"RmsNorm"});
        if (!rms || !g.tensors[b].isConstant() || !isPatternDType(g.tensors[b].dtype)) continue;
        auto split = ops::normRowsOf(*rms, g.tensors[rms->inputs[0]].shape);
        if (!split.ok() || numElements(g.tensors[b].shape) != split->cols ||
            g.tensors[add->outputs[0]].shape != g.tensors[r].shape) {
          continue;
        }
        beta = b;
        y = r;
      }
      if (beta < 0) continue;
      erase.push_back(pg.producerIndex(v));
    }
    const ir::Node* rms = soleRmsNorm(pg, y);
    if (!rms) continue;
    erase.push_back(pg.producerIndex(y));
    ir::Node n;
    n.name = "RmsNormQuant_" + rms->name;
    n.op = findOp("RmsNormQuant");
    n.attrs = rms->attrs;
    n.inputs = {rms->inputs[0], rms->inputs[1], q.inputs[1], q.inputs[2]};
    if (beta >= 0) n.inputs.push_back(beta);
    n.outputs = {q.outputs[0]};
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(n), erase));
    return true;
  }
  return false;
}

StatusOr<bool> addLayerNormLastAxis(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kAffineLastAxis); }
StatusOr<bool> addLayerNormSeveralAxes(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kAffineSeveralAxes); }
StatusOr<bool> addLayerNormWithoutAffine(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kWithoutAffine); }

}  // namespace

PassResult fuseAddLayerNorm(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormLastAxis); }
PassResult fuseAddLayerNormV3(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormSeveralAxes); }
PassResult fuseAddLayerNormExt(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormWithoutAffine); }
PassResult fuseAddRmsNorm(FusionContext& ctx) { return !findOp("AddRmsNorm") ? PassResult(false) : rewriteAll(ctx, fuseOneAddRmsNorm); }
PassResult fuseAddCastRmsNormCast(FusionContext& ctx) { return !findOp("AddRmsNorm") ? PassResult(false) : rewriteAll(ctx, fuseOneAddCastRmsNormCast); }

PassResult fuseAddRmsNormQuant(FusionContext& ctx) {
  return !findOp("AddRmsNormQuant") ? PassResult(false) : rewriteAll(ctx, fuseOneAddRmsNormQuant);
}
PassResult fuseRmsNormQuant(FusionContext& ctx) {
  return !findOp("RmsNormQuant") ? PassResult(false) : rewriteAll(ctx, fuseOneRmsNormQuant);
}

}  // namespace gkrt::passes
