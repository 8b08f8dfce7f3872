#include "backends/cpu/layout/blocked_layout.h"

#include <numeric>
#include <string>

#include "runtime/ir/op_def.h"
#include "backends/cpu/cpu_tier.h"

namespace gkrt::cpu {
namespace {

int findRoot(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

LayoutPlan planLayouts(const ir::Graph& g, int block, bool channels_last,
                       const std::function<LayoutUse(const ir::Node&)>& use) {
  LayoutPlan plan;
  const size_t nt = g.tensors.size();
  plan.blocked.assign(nt, 0);
  if (block <= 0) return plan;
  plan.block = block;
  plan.channels_last = channels_last;
  std::vector<char> ok(nt, 0);  // may be blocked
  for (size_t t = 0; t < nt; ++t) {
    const ir::Tensor& x = g.tensors[t];
    ok[t] = x.dtype == DType::kFloat32 && !x.isConstant() && x.shape.size() == 4 && isStatic(x.shape) &&
            (channels_last || x.shape[1] % block == 0) && x.shape[2] * x.shape[3] > 1;
  }
  for (int t : g.inputs) if (t >= 0) ok[t] = 0;
  for (int t : g.outputs) if (t >= 0) ok[t] = 0;
  std::vector<int> parent(nt);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<char> produced(nt, 0);
  for (const ir::Node& n : g.nodes) {
    for (int t : n.outputs) if (t >= 0) produced[t] = 1;
    const LayoutUse u = use(n);
    if (u == LayoutUse::kAdapts && n.subgraph && !n.outputs.empty()) {
      // A convolution's epilogue reads a full-size operand (a residual) in the
      // destination's layout: the two share one.
      // (Also the convolution's own input where the epilogue reads it too: y = conv(x) + x.)
      const Shape& out = g.tensors[n.outputs[0]].shape;
      const ir::Graph& body = *n.subgraph;
      const auto epilogueReads = [&](int bt) {
        for (size_t i = 0; i < body.nodes.size(); ++i) {
          const std::vector<int>& ins = body.nodes[i].inputs;
          for (size_t j = 0; j < ins.size(); ++j) if (ins[j] == bt && (i > 0 || j > 0)) return true;
        }
        return false;
      };
      for (size_t k = 0; k < n.inputs.size() && k < body.inputs.size(); ++k) {
        const int t = n.inputs[k];
        if (t >= 0 && g.tensors[t].shape == out && epilogueReads(body.inputs[k])) {
          parent[findRoot(parent, t)] = findRoot(parent, n.outputs[0]);
        }
      }
    }
    if (u == LayoutUse::kAdapts) continue;
    if (u == LayoutUse::kSame) {
      for (size_t k = 1; k < n.inputs.size(); ++k) if (n.inputs[k] >= 0) ok[n.inputs[k]] = 0;
      for (int t : n.outputs) parent[findRoot(parent, t)] = findRoot(parent, n.inputs[0]);
      continue;
    }
    if (u == LayoutUse::kPlain) {
      for (int t : n.inputs) if (t >= 0) ok[t] = 0;
      for (int t : n.outputs) if (t >= 0) ok[t] = 0;
      continue;
    }
    // Agnostic: the full-size operands and the outputs share one layout; broadcast
    // operands stay plain.
    const Shape& out = g.tensors[n.outputs[0]].shape;
    int first = -1;
    for (const std::vector<int>* list : {&n.outputs, &n.inputs}) {
      for (int t : *list) {
        if (t < 0) continue;
        if (g.tensors[t].shape != out) {
          ok[t] = 0;
          continue;
        }
        if (first < 0) first = t;
        else parent[findRoot(parent, t)] = findRoot(parent, first);
      }
    }
  }
  for (size_t t = 0; t < nt; ++t) if (!produced[t]) ok[t] = 0;
  std::vector<char> group_ok(nt, 1);
  for (size_t t = 0; t < nt; ++t) if (!ok[t]) group_ok[findRoot(parent, int(t))] = 0;
  for (size_t t = 0; t < nt; ++t) plan.blocked[t] = ok[t] && group_ok[findRoot(parent, int(t))];
  return plan;
}

namespace {
// The Conv2D nodes of g, also the first node of a convolution epilogue's body: fn(owner
// of the convolution, the convolution, the node of g that holds it).
template <class Fn> void forEachConv(const ir::Graph& g, Fn&& fn) {
  for (const ir::Node& n : g.nodes) {
    const ir::Node* c = &n;
    const ir::Graph* owner = &g;
    if (n.subgraph && !n.subgraph->nodes.empty()) {
      c = &n.subgraph->nodes[0];
      owner = n.subgraph.get();
    }
    if (c->op && std::string(c->op->name) == "Conv2D" && c->inputs.size() >= 2) fn(*owner, *c, n);
  }
}
}  // namespace

bool channelsLastSuits(const ir::Graph& g, int block, const ConvFilter& nhwc_fast) {
  if (block <= 0) return false;
  int convs = 0, awkward = 0, unblocked = 0;
  bool all_fast = true;
  forEachConv(g, [&](const ir::Graph& owner, const ir::Node& c, const ir::Node& holder) {
    const Shape& w = owner.tensors[c.inputs[1]].shape;  // O, I/G, kh, kw
    if (w.size() != 4) return;
    const int64_t groups = c.attrs.get<Conv2DAttrs>().groups, in = w[1] * groups;
    ++convs;
    // A channel count off the block leaves that tensor plain in a blocked plan: oneDNN
    // reorders it in or out at every such convolution (MobileNetV3's 24/40/72/120
    // channels: two reorders a convolution). The image's 1-4 channels count for nothing.
    if ((in > 4 && in % block != 0) || w[0] % block != 0) ++unblocked;
    if (groups > 1 && groups < in && (w[1] % block != 0 || (w[0] / groups) % block != 0)) {
      ++awkward;
      // Probed as the graph holds it (an epilogue's body inputs are not graph inputs: a
      // probe inside the body would take the convolution's input for a plain one).
      if (all_fast && nhwc_fast) all_fast = nhwc_fast(g, holder);
    }
  });
  // Off-block channels in three convolutions of four or more: ppocr_cls (47 of 53, 2-thread
  // 0.73 -> 0.42 ms). At a quarter to a half (ppocr_det 29 of 62, ddddocr_rec 6 of 21) the
  // blocked plan stayed 5-10% faster: its convolutions gain more than the reorders cost.
  return convs > 0 && (4 * awkward >= convs || 4 * unblocked >= 3 * convs) && all_fast;
}

LayoutPlan probeLayout(const ir::Graph& g, int block, bool channels_last, std::initializer_list<int> tensors) {
  LayoutPlan layout;
  layout.block = block;
  layout.channels_last = channels_last;
  layout.blocked.assign(g.tensors.size(), 0);
  for (int t : tensors) {
    if (t < 0) continue;
    const bool input = std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end();
    layout.blocked[t] = block > 0 && !input && (channels_last || g.tensors[t].shape[1] % block == 0);
  }
  return layout;
}

int preferredBlock() {
#ifdef GKRT_HAVE_DNNL
  static const int block = [] {
    // oneDNN's blocked formats follow the vector width: 16 lanes on AVX-512, 8 on AVX2.
    return cpuTier().has(CpuIsa::kAvx2) ? cpuTier().vectorFloats() : 0;
  }();
  return block;
#else
  return 0;
#endif
}

void blockedBroadcast(const Shape& nchw, const std::vector<int64_t>& s, int block, Shape* dims,
                      std::vector<int64_t>* strides) {
  *dims = {nchw[0], nchw[1] / block, nchw[2], nchw[3], block};
  *strides = {s[0], s[1] * block, s[2], s[3], s[1]};
}

}  // namespace gkrt::cpu
