// conv_transpose_fold (gkrt's own pass, split stage, cpu column, opt_level 1): a
// convolution takes the Transposes around it into its cluster when they only change
// between NHWC and NCHW (runtime/ir/channels_last_ends.h):
//   Transpose(v, NHWC -> NCHW) -> Conv2D [epilogue] -> [Squeeze] -> Transpose(NCHW -> NHWC)
// as tf2onnx writes every TensorFlow Conv2D/Conv1D (deepcut's twelve Conv1D layers: a
// Transpose, two reorders inside oneDNN's NHWC convolution and a Transpose back around
// each). The cpu backend's oneDNN convolution then reads v and writes the result as
// NHWC bytes. The input's Transpose is copied into the cluster (other readers keep the
// original; DeadNodeElimination drops it when none is left); the output's layout nodes
// move in when the convolution is their only reader. A bare Conv2D becomes a cluster of
// one first. Only where the backend's supports() takes the result (the cpu backend:
// where oneDNN has a fast NHWC convolution for it). `--disable_pass=conv_transpose_fold`.
#include <algorithm>
#include <memory>
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/attrs.h"
#include "runtime/ir/channels_last_ends.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool isConvCluster(const ir::Node& n) {
  return n.subgraph && !n.subgraph->nodes.empty() && isOp(n.subgraph->nodes[0], "Conv2D") && n.outputs.size() == 1 &&
         n.subgraph->outputs.size() == 1;
}

int addBodyTensor(ir::Graph& body, const ir::Tensor& t) {
  ir::Tensor copy = t;
  copy.dim_symbols.clear();
  return body.addTensor(std::move(copy));
}

// A Fused node holding the bare Conv2D `conv` (its constants inside, as a cluster's).
ir::Node wrapConv(const ir::Graph& g, const ir::Node& conv) {
  auto sub = std::make_shared<ir::Graph>();
  ir::Node f;
  f.name = conv.name;
  f.op = findOp("Fused");
  ir::Node inner = conv;
  for (int& t : inner.inputs) {
    if (t < 0) continue;
    const int id = addBodyTensor(*sub, g.tensors[size_t(t)]);
    if (!g.tensors[size_t(t)].isConstant()) {
      sub->inputs.push_back(id);
      f.inputs.push_back(t);
    }
    t = id;
  }
  const int y = addBodyTensor(*sub, g.tensors[size_t(conv.outputs[0])]);
  inner.outputs = {y};
  sub->outputs = {y};
  sub->nodes.push_back(std::move(inner));
  f.outputs = conv.outputs;
  f.subgraph = sub;
  return f;
}

int readersInBody(const ir::Graph& body, int t) {
  int n = 0;
  for (const ir::Node& m : body.nodes) n += static_cast<int>(std::count(m.inputs.begin(), m.inputs.end(), t));
  return n + static_cast<int>(std::count(body.outputs.begin(), body.outputs.end(), t));
}

StatusOr<bool> foldOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  const PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const bool bare = isOp(n, "Conv2D") && n.outputs.size() == 1 && !n.inputs.empty() && n.inputs[0] >= 0;
    ir::ChannelsLastEnds seen;
    if (!bare && (!isConvCluster(n) || ir::channelsLastEnds(n, &seen))) continue;
    if (g.tensors[size_t(n.outputs[0])].dtype != DType::kFloat32) continue;
    ir::Node f = bare ? wrapConv(g, n) : n;
    auto body = std::make_shared<ir::Graph>(*f.subgraph);  // the original stays as it was until the end
    f.subgraph = body;
    // The input: a Transpose from NHWC bytes, copied in front of the convolution.
    bool in = false;
    const int bx = body->nodes[0].inputs[0];
    const auto k = std::find(body->inputs.begin(), body->inputs.end(), bx) - body->inputs.begin();
    if (k < static_cast<long>(body->inputs.size()) && readersInBody(*body, bx) == 1) {
      const ir::Node* t = pg.producer(f.inputs[size_t(k)], {"Transpose"});
      if (t && t->inputs.size() == 1 && t->inputs[0] >= 0 &&
          ir::transposeKeepsNhwcBytes(g.tensors[size_t(t->inputs[0])].shape, t->attrs.get<PermAttrs>().perm)) {
        ir::Node copy = *t;
        const int vb = addBodyTensor(*body, g.tensors[size_t(t->inputs[0])]);
        copy.inputs = {vb};
        copy.outputs = {bx};
        body->nodes.insert(body->nodes.begin(), std::move(copy));
        body->inputs[size_t(k)] = vb;
        f.inputs[size_t(k)] = t->inputs[0];
        in = true;
      }
    }
    // The output: layout-only nodes, each the only reader of the one before, up to the
    // first whose result holds the convolution's output as NHWC bytes.
    std::vector<int> tail;
    const Shape& y = g.tensors[size_t(f.outputs[0])].shape;
    if (y.size() == 4) {
      std::vector<int> labels = ir::nchwLabels(y);
      int z = f.outputs[0];
      for (int step = 0; step < 4; ++step) {
        const std::vector<int> users = pg.users(z);
        if (!pg.singleUse(z) || isGraphOutput(g, z) || users.size() != 1) break;
        const ir::Node& u = g.nodes[size_t(users[0])];
        if (u.inputs.size() != 1 || u.outputs.size() != 1 ||
            !ir::relabelThrough(u, g.tensors[size_t(z)].shape, g.tensors[size_t(u.outputs[0])].shape, &labels)) {
          break;
        }
        tail.push_back(users[0]);
        z = u.outputs[0];
        if (ir::labelsAreNhwc(labels)) break;
      }
      if (!tail.empty() && !ir::labelsAreNhwc(labels)) tail.clear();
    }
    if (!in && tail.empty()) continue;
    for (int u : tail) {
      ir::Node copy = g.nodes[size_t(u)];
      copy.inputs = {body->outputs[0]};
      copy.outputs = {addBodyTensor(*body, g.tensors[size_t(copy.outputs[0])])};
      body->outputs = copy.outputs;
      body->nodes.push_back(std::move(copy));
    }
    if (!tail.empty()) f.outputs = {g.nodes[size_t(tail.back())].outputs[0]};
    if (ctx.supports && !ctx.supports(f)) continue;  // no fast kernel takes it: as it was
    g.nodes[i] = std::move(f);
    std::sort(tail.rbegin(), tail.rend());
    for (int u : tail) g.nodes.erase(g.nodes.begin() + u);
    return true;
  }
  return false;
}

}  // namespace

PassResult foldConvTransposes(FusionContext& ctx) {
  if (ctx.column != FusionColumn::kCpu) return false;
  return rewriteAll(ctx, foldOne);
}

}  // namespace gkrt::passes
