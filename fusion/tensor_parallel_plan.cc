// The analysis of tensor-parallel sharding (fusion/tensor_parallel_plan.h): where each
// column source's slices go, op by op, until a matmul reads them along its contraction
// axis.
#include "fusion/tensor_parallel_plan.h"

#include <algorithm>
#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::tp {
namespace {

bool is(const ir::Node& n, const char* op) { return n.op && std::strcmp(n.op->name, op) == 0; }
bool isMatMul(const ir::Node& n) { return is(n, "MatMul") || is(n, "BatchMatMul"); }

}  // namespace

// A product of dims, or -1 when one of them is unknown.
int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to; ++k) {
    if (s[k] < 0) return -1;
    p *= s[k];
  }
  return p;
}

// Rank r's units of `units` (contiguous, as even as they go): [first, last).
std::pair<int64_t, int64_t> unitRange(int rank, int ranks, int64_t units) {
  return {rank * units / ranks, (rank + 1) * units / ranks};
}
// Rank r's elements of a dim of `dim` in `units` units: [begin, end).
std::pair<int64_t, int64_t> elementRange(int64_t dim, int64_t units, int rank, int ranks) {
  const auto [u0, u1] = unitRange(rank, ranks, units);
  return {dim / units * u0, dim / units * u1};
}

// A matmul x · W with W constant: [K, N] for MatMul (no transposes); [N, blocks, blob]
// (with its scales, offsets and bias along N) for BlockQuantMatMul. Its weight, else -1.
int constantWeight(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.size() != 1 || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return -1;
  if (g.tensors[n.inputs[0]].isConstant() || !g.tensors[n.inputs[1]].isConstant()) return -1;
  const ir::Tensor& w = g.tensors[n.inputs[1]];
  if (is(n, "BlockQuantMatMul")) {
    for (size_t k = 2; k < n.inputs.size(); ++k) {
      if (n.inputs[k] >= 0 && !g.tensors[n.inputs[k]].isConstant()) return -1;
    }
    return w.shape.size() == 3 ? n.inputs[1] : -1;
  }
  if (!isMatMul(n) || n.inputs.size() != 2) return -1;
  if (n.attrs.kind() == AttrKind::kMatMul) {
    const auto& a = n.attrs.get<MatMulAttrs>();
    if (a.transpose_a || a.transpose_b) return -1;
  }
  return w.shape.size() == 2 ? n.inputs[1] : -1;
}
bool blockQuant(const ir::Node& n) { return is(n, "BlockQuantMatMul"); }
int64_t columnsOf(const ir::Graph& g, const ir::Node& n) {
  const Shape& w = g.tensors[n.inputs[1]].shape;
  return blockQuant(n) ? w[0] : w[1];
}

std::vector<int> consumersOf(const ir::Graph& g, int t) {
  std::vector<int> c;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (int in : g.nodes[ni].inputs) {
      if (in == t) {
        c.push_back(int(ni));
        break;
      }
    }
  }
  return c;
}

std::vector<int64_t> packedPieces(const ir::Graph& g, int y, Root* root) {
  const std::vector<int> readers = consumersOf(g, y);
  const int64_t last = int64_t(g.tensors[y].shape.size()) - 1, n = g.tensors[y].shape.back();
  if (readers.empty() || std::find(g.outputs.begin(), g.outputs.end(), y) != g.outputs.end()) return {};
  if (readers.size() == 1 && is(g.nodes[readers[0]], "Split")) {
    const auto& sa = g.nodes[readers[0]].attrs.get<SplitAttrs>();
    if ((sa.axis != -1 && sa.axis != last) || sa.sizes.size() != g.nodes[readers[0]].outputs.size()) return {};
    root->split_node = readers[0];
    return std::vector<int64_t>(sa.sizes.begin(), sa.sizes.end());
  }
  std::vector<std::pair<int64_t, int>> starts;  // (first column, node)
  std::vector<int64_t> ends(g.nodes.size(), 0);
  // A Shape reader is harmless when only dims before the last are taken from it (the
  // sequence length, as onnxruntime-genai's builder takes it).
  auto leadingDimsOnly = [&](int shape_node) {
    for (int c : consumersOf(g, g.nodes[shape_node].outputs[0])) {
      if (!is(g.nodes[c], "StridedSlice")) return false;
      const auto& a = g.nodes[c].attrs.get<StridedSliceAttrs>();
      if (a.axes.size() != 1 || a.begins.size() != 1 || a.ends.size() != 1 || a.begins[0] < 0 || a.ends[0] > last ||
          (!a.steps.empty() && a.steps[0] != 1)) {
        return false;
      }
    }
    return true;
  };
  for (int r : readers) {
    const ir::Node& rn = g.nodes[r];
    if (is(rn, "Shape") && leadingDimsOnly(r)) continue;
    if (!is(rn, "StridedSlice") || rn.inputs.size() != 1) return {};
    const auto& a = rn.attrs.get<StridedSliceAttrs>();
    if (a.axes.size() != 1 || a.begins.size() != 1 || a.ends.size() != 1 || (a.axes[0] != -1 && a.axes[0] != last) || (!a.steps.empty() && a.steps[0] != 1)) return {};
    const int64_t b = a.begins[0], e = std::min(a.ends[0], n);
    if (b < 0 || e <= b) return {};
    starts.push_back({b, r});
    ends[size_t(r)] = e;
  }
  std::sort(starts.begin(), starts.end());
  std::vector<int64_t> sizes;
  int64_t at = 0;
  for (const auto& [b, r] : starts) {
    if (b != at) return {};  // gaps or overlaps: not one packed weight's pieces
    sizes.push_back(ends[size_t(r)] - b);
    root->slice_nodes.push_back(r);
    at = ends[size_t(r)];
  }
  if (at != n) {
    root->slice_nodes.clear();
    return {};
  }
  return sizes;
}

namespace {

// The output axis a Reshape-class op maps input axis `a` (in `units` units) onto so that
// each unit stays one contiguous piece: the dims from it on hold the same elements as the
// input's from `a` on (those dims known), and it divides into the units. Else -1.
int reshapeAxis(const Shape& in, const Shape& out, int a, int64_t units) {
  const int64_t trailing = product(in, size_t(a), in.size());
  if (trailing < 0) return -1;
  for (size_t b = 0; b < out.size(); ++b) {
    if (product(out, b, out.size()) == trailing && out[b] > 0 && out[b] % units == 0) return int(b);
  }
  return -1;
}

class Propagator {
 public:
  Propagator(const ir::Graph& g, const std::vector<Source>& sources, const std::map<int, Root>& roots, int ranks)
      : g_(g), src_(sources), roots_(roots), ranks_(ranks) {}

  Propagation run() {
    p_ = Propagation{};
    p_.t.assign(g_.tensors.size(), {});
    for (size_t ni = 0; ni < g_.nodes.size() && p_.failed.empty(); ++ni) visit(int(ni));
    for (int t : g_.outputs) {
      if (p_.failed.empty() && p_.t[t].axis != kWhole) {
        p_.failed = p_.t[t].sources;
        p_.why = "graph output '" + g_.tensors[t].name + "' would be a slice";
      }
    }
    return p_;
  }

 private:
  bool split(int t) const { return t >= 0 && p_.t[t].axis != kWhole; }
  void fail(const std::set<int>& sources, const ir::Node& n, const std::string& why, bool retry = false) {
    p_.failed = sources;
    p_.retry = retry;
    p_.why = "'" + n.name + "' (" + n.op->name + ") " + why;
  }
  void set(int t, int axis, int64_t units, const std::set<int>& sources) { p_.t[t] = {axis, units, sources}; }

  void visit(int ni) {
    const ir::Node& n = g_.nodes[ni];
    std::set<int> sources;
    bool any = false;
    for (int t : n.inputs) {
      if (!split(t)) continue;
      any = true;
      sources.insert(p_.t[t].sources.begin(), p_.t[t].sources.end());
    }
    const int w = constantWeight(g_, n);
    const int x = n.inputs.empty() ? -1 : n.inputs[0];
    if (w >= 0 && split(x) && p_.t[x].units > 0 && p_.t[x].axis == int(g_.tensors[x].shape.size()) - 1) {
      rowSplit(ni, sources);  // reads a slice along K: by rows, y whole after its AllReduce
      return;
    }
    auto root = roots_.find(ni);
    if (root != roots_.end() && !any) {
      columnSplit(ni, root->second);
      return;
    }
    if (!any) return;
    if (n.subgraph || n.outputs.empty()) return fail(sources, n, "has a body");
    if (is(n, "Shape")) {  // only the sizes: fine while nothing takes the split one
      if (shapeAvoids(ni, p_.t[x].axis)) return;
      return fail(sources, n, "reads the split dimension's size");
    }
    if ((is(n, "Split") || is(n, "StridedSlice")) && split(x) && p_.t[x].units == 0) return pieceOf(ni);
    for (int t : n.inputs) {
      if (split(t) && p_.t[t].units == 0) return fail(sources, n, "reads a packed weight's output whole");
    }
    if (n.outputs.size() != 1 || n.outputs[0] < 0) return fail(sources, n, "has several outputs");
    const int y = n.outputs[0];
    const Shape& ys = g_.tensors[y].shape;
    const int yr = int(ys.size());
    int out_axis = kWhole;
    int64_t units = 0;
    if (n.op->op_class == OpClass::kElementwise || isMatMul(n) || is(n, "Rotary")) {
      if (!alignedOperands(n, sources, &out_axis, &units)) return;
    } else if ((n.op->op_class == OpClass::kReshape && !is(n, "Concat")) ||
               (is(n, "DynamicReshape") && n.inputs.size() == 2 && g_.tensors[n.inputs[1]].isConstant() &&
                g_.tensors[n.inputs[1]].dtype == DType::kInt64)) {  // (the shape entry the rank graph rewrites)
      if (split(n.inputs.back()) && n.inputs.size() > 1) return fail(sources, n, "takes its shape from a slice");
      units = p_.t[x].units;
      out_axis = reshapeAxis(g_.tensors[x].shape, ys, p_.t[x].axis, units);
      if (out_axis < 0) return fail(sources, n, "cannot keep each part of the split dimension in one piece", true);
    } else if (is(n, "StridedSlice") && n.inputs.size() == 1) {  // along other axes (rotary's halves)
      const auto& a = n.attrs.get<StridedSliceAttrs>();
      for (int64_t ax : a.axes) {
        if ((ax < 0 ? ax + yr : ax) == p_.t[x].axis) return fail(sources, n, "slices the split dimension");
      }
      out_axis = p_.t[x].axis;
      units = p_.t[x].units;
    } else if (is(n, "Concat")) {  // slices side by side along another axis (rotate-half)
      int64_t a = n.attrs.get<AxisAttrs>().axis;
      if (a < 0) a += yr;
      for (int t : n.inputs) {
        if (!split(t) || p_.t[t].axis != p_.t[x].axis || p_.t[t].units != p_.t[x].units || a == p_.t[x].axis) {
          return fail(sources, n, "joins a slice with values split otherwise");
        }
      }
      out_axis = p_.t[x].axis;
      units = p_.t[x].units;
    } else if (is(n, "Transpose")) {
      const auto& perm = n.attrs.get<PermAttrs>().perm;
      out_axis = int(std::find(perm.begin(), perm.end(), p_.t[x].axis) - perm.begin());
      units = p_.t[x].units;
    } else if (is(n, "Softmax") || is(n, "LogSoftmax")) {
      int64_t a = n.attrs.get<AxisAttrs>().axis;
      if (a < 0) a += yr;
      if (a == p_.t[x].axis) return fail(sources, n, "normalises along the split dimension");
      out_axis = p_.t[x].axis;
      units = p_.t[x].units;
    } else if (is(n, "CachedAttention")) {
      if (!cachedAttention(n, sources, &units)) return;
      out_axis = 1;
    } else {
      return fail(sources, n, "cannot run on a slice");
    }
    if (ys[size_t(out_axis)] <= 0 || ys[size_t(out_axis)] % units != 0) {
      return fail(sources, n, "has a split dimension of " + std::to_string(ys[size_t(out_axis)]) + ", not " +
                  std::to_string(units) + " equal parts", true);
    }
    set(y, out_axis, units, sources);
  }

  void columnSplit(int ni, const Root& root) {
    const ir::Node& n = g_.nodes[ni];
    std::set<int> active;
    for (int s : root.sources) {
      if (src_[s].active) active.insert(s);
    }
    if (active.empty()) return;
    const int y = n.outputs[0];
    p_.columns.insert(ni);
    if (root.split_node < 0 && root.slice_nodes.empty()) return set(y, int(g_.tensors[y].shape.size()) - 1, src_[root.sources[0]].units(), active);
    set(y, int(g_.tensors[y].shape.size()) - 1, 0, active);
  }

  // Whether every reader of Shape node `ni` takes dims other than `axis` (StridedSlices).
  bool shapeAvoids(int ni, int axis) const {
    for (int c : consumersOf(g_, g_.nodes[ni].outputs[0])) {
      if (!is(g_.nodes[c], "StridedSlice")) return false;
      const auto& a = g_.nodes[c].attrs.get<StridedSliceAttrs>();
      if (a.begins.size() != 1 || a.ends.size() != 1 || (!a.steps.empty() && a.steps[0] != 1) || a.begins[0] < 0) return false;
      if (!(a.ends[0] <= axis || a.begins[0] > axis)) return false;
    }
    return true;
  }

  // A Split or StridedSlice of a packed output: each output its piece's slice (or whole).
  void pieceOf(int ni) {
    const ir::Node& n = g_.nodes[ni];
    for (const auto& [root_node, r] : roots_) {
      const bool split = r.split_node == ni;
      const auto at = std::find(r.slice_nodes.begin(), r.slice_nodes.end(), ni);
      if (!split && at == r.slice_nodes.end()) continue;
      for (size_t k = 0; k < r.sources.size(); ++k) {
        if (!split && size_t(at - r.slice_nodes.begin()) != k) continue;
        const Source& s = src_[r.sources[k]];
        const int out = split ? n.outputs[k] : n.outputs[0];
        if (s.active) set(out, int(g_.tensors[out].shape.size()) - 1, s.units(), {r.sources[k]});
      }
      return;
    }
    fail(p_.t[n.inputs[0]].sources, n, "reads a packed output it was not found for");
  }

  void rowSplit(int ni, const std::set<int>& sources) {
    const ir::Node& n = g_.nodes[ni];
    const int x = n.inputs[0];
    if (blockQuant(n)) {  // each rank's rows start on a block
      const int64_t k = g_.tensors[x].shape.back(), block = n.attrs.get<QuantAttrs>().block_size;
      for (int r = 0; r < ranks_; ++r) {
        if (block <= 0 || elementRange(k, p_.t[x].units, r, ranks_).first % block != 0) {
          return fail(sources, n, "would split its quantization blocks of " + std::to_string(block), true);
        }
      }
    }
    p_.rows.insert(ni);
  }

  // Elementwise ops, products along batch dims, Rotary off its last axis: every split
  // operand split along the same output axis (right-aligned) in the same units, every
  // whole operand of size 1 there (broadcast) or a constant of the full size (sliced).
  bool alignedOperands(const ir::Node& n, const std::set<int>& sources, int* out_axis, int64_t* units) {
    const int yr = int(g_.tensors[n.outputs[0]].shape.size());
    const Shape& ys = g_.tensors[n.outputs[0]].shape;
    int axis = kWhole;
    int64_t most = 0;
    for (int t : n.inputs) {
      if (!split(t)) continue;
      const int a = yr - int(g_.tensors[t].shape.size()) + p_.t[t].axis;
      if (axis != kWhole && a != axis) {
        fail(sources, n, "would combine slices with values split otherwise");
        return false;
      }
      axis = a;
      most = std::max(most, p_.t[t].units);
    }
    std::set<int> fewer;  // operands in fewer units: those sources try more
    for (int t : n.inputs) {
      if (split(t) && p_.t[t].units != most) fewer.insert(p_.t[t].sources.begin(), p_.t[t].sources.end());
    }
    if (!fewer.empty()) {
      fail(fewer, n, "would combine slices in " + std::to_string(most) + " parts with slices in fewer", true);
      return false;
    }
    if ((isMatMul(n) && axis >= yr - 2) || (is(n, "Rotary") && axis == yr - 1)) {
      fail(sources, n, "would mix the slice along its own axis");
      return false;
    }
    for (int t : n.inputs) {
      if (t < 0 || split(t)) continue;
      const Shape& s = g_.tensors[t].shape;
      const int a = axis - (yr - int(s.size()));
      const bool sliceable = a >= 0 && g_.tensors[t].isConstant() && s[size_t(a)] == ys[size_t(axis)];
      if ((isMatMul(n) && a >= int(s.size()) - 2) || (a >= 0 && s[size_t(a)] != 1 && !sliceable)) {
        fail(sources, n, "would combine a slice with a whole operand");
        return false;
      }
    }
    *out_axis = axis;
    *units = most;
    return true;
  }

  // CachedAttention (BNSD): q, k, v split along the heads in the same units (each unit
  // whole KV groups), the caches (graph inputs only it reads) split with them.
  bool cachedAttention(const ir::Node& n, const std::set<int>& sources, int64_t* units) {
    if (n.attrs.get<AttentionAttrs>().layout != AttentionLayout::kBNSD) {
      fail(sources, n, "is not in the [batch, heads, positions, dim] layout");
      return false;
    }
    int64_t u = 0;
    std::set<int> fewer;
    for (int k = 0; k < 3; ++k) {
      const int t = n.inputs[size_t(k)];
      if (!split(t) || p_.t[t].axis != 1) {
        fail(sources, n, "would combine heads split otherwise (query, key and value must split by heads together)");
        return false;
      }
      u = std::max(u, p_.t[t].units);
    }
    for (int k = 0; k < 3; ++k) {
      const int t = n.inputs[size_t(k)];
      if (p_.t[t].units != u) fewer.insert(p_.t[t].sources.begin(), p_.t[t].sources.end());
    }
    if (!fewer.empty()) {
      fail(fewer, n, "would pair query and key/value heads split in different parts", true);
      return false;
    }
    for (int k : {3, 4}) {
      const int t = n.inputs[size_t(k)];
      const bool input = std::find(g_.inputs.begin(), g_.inputs.end(), t) != g_.inputs.end();
      if (!input || consumersOf(g_, t).size() != 1 || g_.tensors[t].shape[1] % u != 0) {
        fail(sources, n, "has a cache that is not its own graph input", false);
        return false;
      }
      set(t, 1, u, sources);
    }
    if (split(n.inputs[5])) {
      fail(sources, n, "reads a split past length");
      return false;
    }
    *units = u;
    return true;
  }

  const ir::Graph& g_;
  const std::vector<Source>& src_;
  const std::map<int, Root>& roots_;
  const int ranks_;
  Propagation p_;
};

// Rank r's elements of `t` along `axis`: the ranges, one after another.

}  // namespace

Propagation propagateSplits(const ir::Graph& g, const std::vector<Source>& sources, const std::map<int, Root>& roots, int ranks) {
  return Propagator(g, sources, roots, ranks).run();
}

}  // namespace gkrt::tp
