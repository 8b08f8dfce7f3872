// Residual add + normalisation: add_layer_norm_fusion (+ _v3_, _ext_), add_rms_norm_fusion,
// add_cast_rms_norm_cast_fusion, and the two quantised RmsNorm passes.
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"

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

StatusOr<bool> addLayerNormLastAxis(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kAffineLastAxis); }
StatusOr<bool> addLayerNormSeveralAxes(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kAffineSeveralAxes); }
StatusOr<bool> addLayerNormWithoutAffine(FusionContext& c) { return fuseOneAddLayerNorm(c, LayerNormForm::kWithoutAffine); }

}  // namespace

PassResult fuseAddLayerNorm(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormLastAxis); }
PassResult fuseAddLayerNormV3(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormSeveralAxes); }
PassResult fuseAddLayerNormExt(FusionContext& ctx) { return !findOp("AddLayerNorm") ? PassResult(false) : rewriteAll(ctx, addLayerNormWithoutAffine); }
PassResult fuseAddRmsNorm(FusionContext& ctx) { return !findOp("AddRmsNorm") ? PassResult(false) : rewriteAll(ctx, fuseOneAddRmsNorm); }
PassResult fuseAddCastRmsNormCast(FusionContext& ctx) { return !findOp("AddRmsNorm") ? PassResult(false) : rewriteAll(ctx, fuseOneAddCastRmsNormCast); }

// QuantV2(RmsNorm(Add(x1, x2))) -> AddRmsNormQuant and QuantV2(RmsNorm(x) + beta) ->
// RmsNormQuant need an int8 RmsNorm-quant kernel, which comes with the int8 issue; until
// then these passes are listed and switchable but match nothing.
PassResult fuseAddRmsNormQuant(FusionContext&) { return false; }
PassResult fuseRmsNormQuant(FusionContext&) { return false; }

}  // namespace gkrt::passes
