// FlashAttentionFusionV1 / V2: scaled dot-product attention -> one FlashAttention node.
//
// Pattern (MindSpore's FlashAttentionFusion, in the form ONNX exporters write it):
//   S = BatchMatMul(Q, K^T)           4-D, no transpose of Q, single use
//   S' = Mul(S, c) | Div(S, c)        c a scalar constant (optional), single use
//   S'' = Add(S', mask)               V1 only: mask broadcasting to S, single use
//   P = Softmax(S'', axis = last)     single use
//   O = BatchMatMul(P, V)             no transposes
// V1 matches the masked form (MindSpore's V1 reads the attention mask), V2 the unmasked
// one (its mask is a FillV2 placeholder). Like MindSpore, a query of one position
// (decoding, seq_len == 1) is left alone. Q, K, V, mask and O of one float dtype.
//
// Layout: K^T = Transpose(K, 0,1,3,2) is read as K. When Q, K^T and V come from Transpose(perm 0,2,1,3 / 0,2,3,1 / 0,2,1,3) of
// [batch, seq, heads, dim] tensors and O's only reader is Transpose(0,2,1,3), the node
// reads and writes BSND and the transposes go; when those tensors are themselves
// Reshapes of [batch, seq, heads*dim] and the output transpose's only reader reshapes
// back, BSH (the projections as their matmuls leave them).
#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool isMatMulOp(const ir::Node& n) { return isOp(n, "BatchMatMul") || isOp(n, "MatMul"); }

const ir::Node* transposeWithPerm(const PatternGraph& pg, int t, const Ints& perm) {
  const ir::Node* n = pg.producer(t, {"Transpose"});
  return n && n->attrs.get<PermAttrs>().perm == perm ? n : nullptr;
}

// Reshape [b, s, h] -> [b, s, heads, h / heads], returning the 3-D input.
int splitHeadsSource(const PatternGraph& pg, int t4, int64_t heads) {
  const ir::Node* r = pg.producer(t4, {"Reshape"});
  if (!r) return -1;
  const Shape& in = pg.graph().tensors[r->inputs[0]].shape;
  const Shape& out = pg.graph().tensors[t4].shape;
  if (in.size() != 3 || out.size() != 4 || in[0] != out[0] || in[1] != out[1] || out[2] != heads ||
      in[2] != out[2] * out[3]) {
    return -1;
  }
  return r->inputs[0];
}

struct AttentionMatch {
  int q = -1, k = -1, v = -1, mask = -1;
  float scale = 1.0f;
  bool key_transposed = false;
  int root = -1;      // node whose output the FlashAttention node takes over
  int out_tensor = -1;
  AttentionLayout layout = AttentionLayout::kBNSD;
  int64_t heads = 0;
};

bool sameDType(const ir::Graph& g, std::initializer_list<int> ts) {
  DType d = g.tensors[*ts.begin()].dtype;
  if (!isPatternDType(d)) return false;
  for (int t : ts) if (t >= 0 && g.tensors[t].dtype != d) return false;
  return true;
}

bool matchCore(const PatternGraph& pg, int pv_index, bool masked, AttentionMatch* m) {
  const ir::Graph& g = pg.graph();
  const ir::Node& pv = g.nodes[pv_index];
  if (!isMatMulOp(pv) || pv.attrs.get<MatMulAttrs>().transpose_a || pv.attrs.get<MatMulAttrs>().transpose_b) return false;
  const ir::Node* softmax = pg.producer(pv.inputs[0], {"Softmax"});
  if (!softmax || !pg.singleUse(pv.inputs[0])) return false;
  const int rank = static_cast<int>(g.tensors[softmax->inputs[0]].shape.size());
  const int64_t axis = softmax->attrs.get<AxisAttrs>().axis;
  if (rank != 4 || (axis != -1 && axis != rank - 1)) return false;
  int scores = softmax->inputs[0];
  if (!pg.singleUse(scores)) return false;
  if (masked) {
    const ir::Node* add = pg.producer(scores, {"Add"});
    if (!add) return false;
    // The scores operand is the one made by the scale or the matmul.
    const bool first = pg.producer(add->inputs[0], {"Mul", "Div", "RealDiv", "BatchMatMul", "MatMul"}) != nullptr;
    scores = first ? add->inputs[0] : add->inputs[1];
    m->mask = first ? add->inputs[1] : add->inputs[0];
    const Shape& ms = g.tensors[m->mask].shape;
    const Shape& ss = g.tensors[scores].shape;
    auto b = broadcastShapes(ms, ss);
    if (!b.ok() || *b != ss || !pg.singleUse(scores)) return false;
  }
  if (const ir::Node* scale = pg.producer(scores, {"Mul", "Div", "RealDiv"})) {
    const bool div = !isOp(*scale, "Mul");
    const auto c1 = scalarConstant(g, scale->inputs[1]), c0 = div ? std::nullopt : scalarConstant(g, scale->inputs[0]);
    if (!c1 && !c0) return false;
    if (div && *c1 == 0.0f) return false;
    m->scale = div ? 1.0f / *c1 : c1 ? *c1 : *c0;
    scores = c1 ? scale->inputs[0] : scale->inputs[1];
    if (!pg.singleUse(scores)) return false;
  }
  const ir::Node* qk = pg.producer(scores);
  if (!qk || !isMatMulOp(*qk) || qk->attrs.get<MatMulAttrs>().transpose_a) return false;
  m->q = qk->inputs[0];
  m->k = qk->inputs[1];
  m->key_transposed = !qk->attrs.get<MatMulAttrs>().transpose_b;
  m->v = pv.inputs[1];
  for (int t : {m->q, m->k, m->v}) if (g.tensors[t].shape.size() != 4 || !isStatic(g.tensors[t].shape)) return false;
  if (g.tensors[m->q].shape[2] == 1) return false;  // decoding step: MindSpore leaves it
  if (!sameDType(g, {m->q, m->k, m->v, m->mask, pv.outputs[0]})) return false;
  m->root = pv_index;
  m->out_tensor = pv.outputs[0];
  return true;
}

// Absorbs the head transposes (BSND) and then the head reshapes (BSH) where present.
void matchLayout(const PatternGraph& pg, AttentionMatch* m) {
  if (!m->key_transposed) return;
  if (const ir::Node* tk = transposeWithPerm(pg, m->k, {0, 1, 3, 2})) {  // K^T = Transpose(K): read K
    m->k = tk->inputs[0];
    m->key_transposed = false;
    return;
  }
  const ir::Node* tq = transposeWithPerm(pg, m->q, {0, 2, 1, 3});
  const ir::Node* tk = transposeWithPerm(pg, m->k, {0, 2, 3, 1});
  const ir::Node* tv = transposeWithPerm(pg, m->v, {0, 2, 1, 3});
  if (!tq || !tk || !tv || !pg.singleUse(m->out_tensor)) return;
  const std::vector<int> readers = pg.users(m->out_tensor);
  const ir::Node& to = pg.graph().nodes[readers[0]];
  if (!isOp(to, "Transpose") || to.attrs.get<PermAttrs>().perm != Ints{0, 2, 1, 3}) return;
  m->q = tq->inputs[0];
  m->k = tk->inputs[0];
  m->v = tv->inputs[0];
  m->key_transposed = false;
  m->layout = AttentionLayout::kBSND;
  m->root = readers[0];
  m->out_tensor = to.outputs[0];
  const int64_t heads = pg.graph().tensors[m->q].shape[2];
  const int q3 = splitHeadsSource(pg, m->q, heads), k3 = splitHeadsSource(pg, m->k, heads),
            v3 = splitHeadsSource(pg, m->v, heads);
  if (q3 < 0 || k3 < 0 || v3 < 0 || !pg.singleUse(m->out_tensor)) return;
  const std::vector<int> merge = pg.users(m->out_tensor);
  const ir::Node& r = pg.graph().nodes[merge[0]];
  const Shape& o4 = pg.graph().tensors[m->out_tensor].shape;
  if (!isOp(r, "Reshape") || pg.graph().tensors[r.outputs[0]].shape != Shape{o4[0], o4[1], o4[2] * o4[3]}) return;
  m->q = q3, m->k = k3, m->v = v3;
  m->layout = AttentionLayout::kBSH;
  m->heads = heads;
  m->root = merge[0];
  m->out_tensor = r.outputs[0];
}

template <bool kMasked> StatusOr<bool> fuseOneAttention(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    AttentionMatch m;
    if (!matchCore(pg, static_cast<int>(i), kMasked, &m)) continue;
    matchLayout(pg, &m);
    ir::Node n;
    n.name = "FlashAttention_" + g.nodes[i].name;
    n.op = findOp("FlashAttention");
    AttentionAttrs a;
    a.scale = m.scale;
    a.layout = m.layout;
    a.heads = m.heads;
    a.key_transposed = m.key_transposed;
    n.attrs = Attrs(a);
    n.inputs = {m.q, m.k, m.v};
    if (kMasked) n.inputs.push_back(m.mask);
    n.outputs = {m.out_tensor};
    RETURN_IF_ERROR(replaceWithPatternNode(g, m.root, std::move(n)));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseFlashAttentionV1(FusionContext& ctx) { return !findOp("FlashAttention") ? PassResult(false) : rewriteAll(ctx, fuseOneAttention<true>); }
PassResult fuseFlashAttentionV2(FusionContext& ctx) { return !findOp("FlashAttention") ? PassResult(false) : rewriteAll(ctx, fuseOneAttention<false>); }

}  // namespace gkrt::passes
