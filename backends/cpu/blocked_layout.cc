#include "backends/cpu/blocked_layout.h"

#include <numeric>
#include <string>

namespace gkrt::cpu {
namespace {

int findRoot(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

LayoutPlan planLayouts(const ir::Graph& g, int block, const std::function<LayoutUse(const ir::Node&)>& use) {
  LayoutPlan plan;
  const size_t nt = g.tensors.size();
  plan.blocked.assign(nt, 0);
  if (block <= 0) return plan;
  plan.block = block;
  std::vector<char> ok(nt, 0);  // may be blocked
  for (size_t t = 0; t < nt; ++t) {
    const ir::Tensor& x = g.tensors[t];
    ok[t] = x.dtype == DType::kFloat32 && !x.isConstant() && x.shape.size() == 4 && x.shape[1] % block == 0 &&
            x.shape[2] * x.shape[3] > 1 && isStatic(x.shape);
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
      const Shape& out = g.tensors[n.outputs[0]].shape;
      const ir::Graph& body = *n.subgraph;
      const int conv_x = body.nodes.empty() || body.nodes[0].inputs.empty() ? -1 : body.nodes[0].inputs[0];
      for (size_t k = 0; k < n.inputs.size() && k < body.inputs.size(); ++k) {
        const int t = n.inputs[k];
        if (t >= 0 && body.inputs[k] != conv_x && g.tensors[t].shape == out) {
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

int preferredBlock() {
#ifdef GKRT_HAVE_DNNL
  static const int block = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 0;
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
