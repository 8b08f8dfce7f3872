// channel_shuffle_fusion (gkrt's own pass): ShuffleNet's channel shuffle as ONNX exporters
// write it,
//   Reshape(x [N, C, H, W] -> [N, g, C/g, H, W]) -> Transpose(perm 0,2,1,3,4)
//     -> Reshape(-> [N, C, H, W])
// becomes Gather(x, idx, axis 1) with the constant permutation idx[c] = (c % g) * (C/g)
// + c / g: one channel gather, which the cpu backend runs in whichever layout its plan
// gave x (plain, channel-blocked or NHWC: backends/cpu/tensor/channel_gather_kernel.h) where
// the 5-D reshape forced plain NCHW and two reorders around it. Conditions: static
// shapes, the two intermediates read only by the next op, the result of x's shape.
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

StatusOr<bool> fuseOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& back = g.nodes[i];
    if (!isOp(back, "Reshape") || back.inputs.empty() || !pg.singleUse(back.inputs[0])) continue;
    const ir::Node* tr = pg.producer(back.inputs[0], {"Transpose"});
    if (!tr || tr->inputs.empty() || !pg.singleUse(tr->inputs[0]) || tr->attrs.get<PermAttrs>().perm != Ints{0, 2, 1, 3, 4}) continue;
    const ir::Node* front = pg.producer(tr->inputs[0], {"Reshape"});
    if (!front || front->inputs.empty()) continue;
    const int x = front->inputs[0];
    const Shape& xs = g.tensors[x].shape;
    const Shape& mid = g.tensors[tr->inputs[0]].shape;
    if (xs.size() != 4 || !isStatic(xs) || mid.size() != 5 || g.tensors[back.outputs[0]].shape != xs) continue;
    const int64_t groups = mid[1], per = mid[2];
    if (mid[0] != xs[0] || groups * per != xs[1] || mid[3] != xs[2] || mid[4] != xs[3] || groups < 1 || per < 1) continue;
    std::vector<int64_t> idx(static_cast<size_t>(xs[1]));
    for (int64_t c = 0; c < xs[1]; ++c) idx[c] = (c % groups) * per + c / groups;
    const int t = addPatternConstant(g, back.name + "_channel_order", DType::kInt64, {xs[1]}, idx.data());
    ir::Node gather = patternNode("Gather", back.name + "_channel_shuffle", Attrs(AxisAttrs{1, false}), {x, t},
                                  {g.nodes[i].outputs[0]});
    const int tr_index = pg.producerIndex(back.inputs[0]), front_index = pg.producerIndex(tr->inputs[0]);
    std::vector<int> erase = {tr_index};
    if (pg.singleUse(front->outputs[0])) erase.push_back(front_index);  // else kept for its other reader
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i), std::move(gather), erase));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseChannelShuffle(FusionContext& ctx) { return !findOp("Gather") ? PassResult(false) : rewriteAll(ctx, fuseOne); }

}  // namespace gkrt::passes
