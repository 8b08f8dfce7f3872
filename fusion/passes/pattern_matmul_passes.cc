// MatMul with its epilogue: matmul_elem_{biasadd,add,relu,gelu}_fusion,
// inference_matmul_split_fusion, MatMulAllReduce, inference_qbmm_{add,allreduce_add}_fusion.
//
// The product P is made by MatMul or BatchMatMul (x, w), or by a MatMulBiasAdd the
// biasadd pass made, so the later passes extend that one node:
//   biasadd:  Add(P, b), b 1-D [N]                      -> MatMulBiasAdd(x, w, b)
//   add:      Add(P, c), c of P's shape (a residual)    -> MatMulAdd(x, w, c, b?)
//   relu:     ReLU(P)                                   -> MatMulRelu(x, w, b?)
//   gelu:     GeLU(P), no transposes                    -> MatMulGelu(x, w, b?)
//   split:    Split(P | Add(P, b)) along the last axis, w constant, no transposes -> MatMulSplit(x, w, b?)
//   allreduce: AllReduce(P), no bias                    -> MatMulAllReduce(x, w)
//   qbmm_allreduce_add: Add(AllReduce(P) | MatMulAllReduce, b), b 1-D [N] -> MatMulAllReduce(x, w, b)
// Every P is read only by the op that absorbs it; all operands of one float dtype. A
// product whose op the flags cluster (--enable_cluster_ops=MatMul) is left to clustering.
// (MindSpore restricts these to Ascend 910B and float16; gkrt runs them on any backend.)
#include "fusion/pass_manager.h"
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include <set>

#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

struct Product {
  int x = -1, w = -1, bias = -1;
  MatMulAttrs flags;
};

// The cluster ops of the pass running now: a MatMul / BatchMatMul the flags put in the
// cluster set (--enable_cluster_ops=MatMul) is left to StaticShapeCluster, which gives it
// its whole elementwise epilogue as oneDNN post-ops.
thread_local const std::set<const OpDef*>* clustered_gemms = nullptr;
// Products inference_qbmm_add_fusion will take (a quantised batch matmul and its bias add),
// when it runs in this pipeline: MindSpore's matmul_elem passes match MatMul, not
// QuantBatchMatmul.
thread_local const std::set<int>* qbmm_products = nullptr;

// P's matmul when P has one reader; `with_bias`: a MatMulBiasAdd counts too.
bool product(const PatternGraph& pg, int p, bool with_bias, Product* out) {
  if (!pg.singleUse(p)) return false;
  const ir::Node* mm = pg.producer(p, {"MatMul", "BatchMatMul", "MatMulBiasAdd"});
  if (!mm || (!with_bias && isOp(*mm, "MatMulBiasAdd"))) return false;
  if (clustered_gemms && clustered_gemms->count(mm->op)) return false;
  if (qbmm_products && qbmm_products->count(p)) return false;
  out->x = mm->inputs[0];
  out->w = mm->inputs[1];
  out->bias = mm->inputs.size() > 2 ? mm->inputs[2] : -1;
  out->flags = mm->attrs.get<MatMulAttrs>();
  const ir::Graph& g = pg.graph();
  return isPatternDType(g.tensors[p].dtype) && g.tensors[out->x].dtype == g.tensors[p].dtype &&
         g.tensors[out->w].dtype == g.tensors[p].dtype && isStatic(g.tensors[p].shape);
}

// b is a 1-D bias over P's last axis, of P's dtype.
bool isBias(const ir::Graph& g, int b, int p) {
  const Shape& ps = g.tensors[p].shape;
  return !ps.empty() && g.tensors[b].shape == Shape{ps.back()} && g.tensors[b].dtype == g.tensors[p].dtype;
}

ir::Node patternNode(const char* op, const std::string& name, Attrs attrs, std::vector<int> inputs, std::vector<int> outputs) {
  ir::Node n;
  n.name = std::string(op) + "_" + name;
  n.op = findOp(op);
  n.attrs = std::move(attrs);
  while (!inputs.empty() && inputs.back() < 0) inputs.pop_back();
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// Add(P, b) or Add(b, P): which operand is P (the one a matmul-like node makes).
bool addOperands(const PatternGraph& pg, const ir::Node& add, bool with_bias, Product* p, int* other, int* p_tensor) {
  for (int k : {0, 1}) {
    if (product(pg, add.inputs[k], with_bias, p)) {
      *p_tensor = add.inputs[k];
      *other = add.inputs[1 - k];
      return true;
    }
  }
  return false;
}

StatusOr<bool> biasAddOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    Product p;
    int b, pt;
    if (!isOp(add, "Add") || !addOperands(pg, add, false, &p, &b, &pt) || !isBias(g, b, pt)) continue;
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
        patternNode("MatMulBiasAdd", add.name, Attrs(p.flags), {p.x, p.w, b}, {add.outputs[0]})));
    return true;
  }
  return false;
}

StatusOr<bool> residualAddOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    Product p;
    int c, pt;
    if (!isOp(add, "Add") || !addOperands(pg, add, true, &p, &c, &pt)) continue;
    if (g.tensors[c].shape != g.tensors[pt].shape || g.tensors[c].dtype != g.tensors[pt].dtype) continue;
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
        patternNode("MatMulAdd", add.name, Attrs(p.flags), {p.x, p.w, c, p.bias}, {add.outputs[0]})));
    return true;
  }
  return false;
}

template <bool kGelu> StatusOr<bool> activationOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& act = g.nodes[i];
    Product p;
    if (!isOp(act, kGelu ? "GeLU" : "ReLU") || !product(pg, act.inputs[0], true, &p)) continue;
    if (kGelu && (p.flags.transpose_a || p.flags.transpose_b)) continue;  // MatMulGelu's attributes are GeLU's
    Attrs attrs = kGelu ? act.attrs : Attrs(p.flags);
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
        patternNode(kGelu ? "MatMulGelu" : "MatMulRelu", act.name, std::move(attrs), {p.x, p.w, p.bias}, {act.outputs[0]})));
    return true;
  }
  return false;
}

// P, or Add(P, b) with a 1-D bias b (the split pass runs before the biasadd pass).
bool productWithBias(const PatternGraph& pg, int t, Product* p) {
  if (product(pg, t, true, p)) return true;
  const ir::Node* add = pg.producer(t, {"Add"});
  int b, pt;
  if (!add || !pg.singleUse(t) || !addOperands(pg, *add, false, p, &b, &pt) || !isBias(pg.graph(), b, pt)) return false;
  p->bias = b;
  return true;
}

StatusOr<bool> splitOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& split = g.nodes[i];
    Product p;
    if (!isOp(split, "Split") || !productWithBias(pg, split.inputs[0], &p)) continue;
    if (p.flags.transpose_a || p.flags.transpose_b || !g.tensors[p.w].isConstant()) continue;
    const Shape& ps = g.tensors[split.inputs[0]].shape;
    const int64_t rank = static_cast<int64_t>(ps.size());
    auto axis = normalizeAxis(split.attrs.get<SplitAttrs>().axis, rank);
    if (!axis.ok() || *axis != rank - 1) continue;
    SplitAttrs sizes{-1, {}};
    for (int t : split.outputs) sizes.sizes.push_back(g.tensors[t].shape.back());
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
        patternNode("MatMulSplit", split.name, Attrs(sizes), {p.x, p.w, p.bias}, split.outputs)));
    return true;
  }
  return false;
}

StatusOr<bool> allReduceOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& ar = g.nodes[i];
    Product p;
    if (!isOp(ar, "AllReduce") || !product(pg, ar.inputs[0], false, &p)) continue;
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
        patternNode("MatMulAllReduce", ar.name, Attrs(p.flags), {p.x, p.w}, {ar.outputs[0]})));
    return true;
  }
  return false;
}

StatusOr<bool> allReduceBiasOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    if (!isOp(add, "Add")) continue;
    for (int k : {0, 1}) {
      const int r = add.inputs[k], b = add.inputs[1 - k];
      if (!pg.singleUse(r) || !isBias(g, b, r)) continue;
      Product p;
      if (const ir::Node* ar = pg.producer(r, {"AllReduce"})) {
        if (!product(pg, ar->inputs[0], false, &p)) continue;
      } else if (const ir::Node* mar = pg.producer(r, {"MatMulAllReduce"})) {
        if (mar->inputs.size() > 2) continue;
        p = {mar->inputs[0], mar->inputs[1], -1, mar->attrs.get<MatMulAttrs>()};
      } else {
        continue;
      }
      RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
          patternNode("MatMulAllReduce", add.name, Attrs(p.flags), {p.x, p.w, b}, {add.outputs[0]})));
      return true;
    }
  }
  return false;
}

// Add(BlockQuantMatMul(x, w, s, o?) with no bias, b [N]) -> BlockQuantMatMul(x, w, s, o, b):
// MatMulNBits as the quantised batch matmul of inference_qbmm_add_fusion (its own bias input).
StatusOr<bool> blockQuantBiasOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    if (!isOp(add, "Add") || add.inputs.size() != 2) continue;
    for (int k : {0, 1}) {
      const int r = add.inputs[k], b = add.inputs[1 - k];
      const ir::Node* mm = pg.producer(r, {"BlockQuantMatMul"});
      if (!mm || !pg.singleUse(r) || !isBias(g, b, r) || g.tensors[add.outputs[0]].shape != g.tensors[r].shape) continue;
      if (mm->inputs.size() > 4 && mm->inputs[4] >= 0) continue;
      std::vector<int> ins = mm->inputs;
      ins.resize(5, -1);
      ins[4] = b;
      const int mm_index = pg.producerIndex(r);
      RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
          patternNode("BlockQuantMatMul", add.name, mm->attrs, std::move(ins), {add.outputs[0]}), {mm_index}));
      return true;
    }
  }
  return false;
}

PassResult rewriteEpilogues(FusionContext& ctx, StatusOr<bool> (*once)(FusionContext&)) {
  const std::set<int> qbmm = passWillRun("inference_qbmm_add_fusion", ctx.options, ctx.column)
                                 ? qbmmAddTensors(ctx.graph) : std::set<int>{};
  clustered_gemms = &ctx.cluster_ops;
  qbmm_products = &qbmm;
  PassResult r = rewriteAll(ctx, once);
  clustered_gemms = nullptr;
  qbmm_products = nullptr;
  return r;
}

}  // namespace

PassResult fuseMatMulBiasAdd(FusionContext& ctx) { return !findOp("MatMulBiasAdd") ? PassResult(false) : rewriteEpilogues(ctx, biasAddOnce); }
PassResult fuseMatMulAdd(FusionContext& ctx) { return !findOp("MatMulAdd") ? PassResult(false) : rewriteEpilogues(ctx, residualAddOnce); }
PassResult fuseMatMulRelu(FusionContext& ctx) { return !findOp("MatMulRelu") ? PassResult(false) : rewriteEpilogues(ctx, activationOnce<false>); }
PassResult fuseMatMulGelu(FusionContext& ctx) { return !findOp("MatMulGelu") ? PassResult(false) : rewriteEpilogues(ctx, activationOnce<true>); }
PassResult fuseMatMulSplit(FusionContext& ctx) { return !findOp("MatMulSplit") ? PassResult(false) : rewriteAll(ctx, splitOnce); }
PassResult fuseMatMulAllReduce(FusionContext& ctx) { return !findOp("MatMulAllReduce") ? PassResult(false) : rewriteAll(ctx, allReduceOnce); }
// MindSpore's form is QuantBatchMatmul -> AllReduce -> Add; gkrt has no int8 batch matmul
// yet, so this matches the float product (MatMul / BatchMatMul) in that position.
PassResult fuseQbmmAllReduceAdd(FusionContext& ctx) { return !findOp("MatMulAllReduce") ? PassResult(false) : rewriteAll(ctx, allReduceBiasOnce); }
// fuseQbmmAdd (inference_qbmm_add_fusion) lives with the QDQ patterns: quant_dq_op_q_fusion.cc;
// its block-quant half is here.
PassResult fuseBlockQuantBias(FusionContext& ctx) { return rewriteAll(ctx, blockQuantBiasOnce); }

}  // namespace gkrt::passes
