#include "fusion/tensor_parallel_shard.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

constexpr int kWhole = -1;

bool is(const ir::Node& n, const char* op) { return n.op && std::strcmp(n.op->name, op) == 0; }
bool isMatMul(const ir::Node& n) { return is(n, "MatMul") || is(n, "BatchMatMul"); }

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to; ++k) p *= s[k];
  return p;
}

// A MatMul x · W with W a constant matrix [K, N] (no transposes): its weight, else -1.
int constantWeight(const ir::Graph& g, const ir::Node& n) {
  if (!isMatMul(n) || n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[1] < 0) return -1;
  if (n.attrs.kind() == AttrKind::kMatMul) {
    const auto& a = n.attrs.get<MatMulAttrs>();
    if (a.transpose_a || a.transpose_b) return -1;
  }
  const ir::Tensor& w = g.tensors[n.inputs[1]];
  return w.isConstant() && w.shape.size() == 2 && !g.tensors[n.inputs[0]].isConstant() ? n.inputs[1] : -1;
}

// The output axis a Reshape-class op maps input axis `a` onto so that each rank's
// contiguous chunk of it stays one contiguous chunk, or -1.
int reshapeAxis(const Shape& in, const Shape& out, int a, int ranks) {
  const int64_t outer = product(in, 0, size_t(a));
  int64_t p = 1;
  for (size_t b = 0; b < out.size(); ++b) {
    if (p == outer && out[b] % ranks == 0 && out[b] > 1) return int(b);
    p *= out[b];
    if (p > outer) break;
  }
  return -1;
}

// The split state of every tensor given the column roots, or the failure: the roots
// whose slices reached an op that cannot take them.
struct Propagation {
  std::vector<int> axis;                  // per tensor: split axis, or kWhole
  std::vector<std::set<int>> roots;       // per tensor: the column roots its slice comes from
  std::set<int> columns;                  // MatMul nodes split by columns
  std::set<int> rows;                     // MatMul nodes split by rows
  std::set<int> failed_roots;
  std::string why;
};

Propagation propagate(const ir::Graph& g, const std::set<int>& column_roots, int ranks) {
  Propagation p;
  p.axis.assign(g.tensors.size(), kWhole);
  p.roots.assign(g.tensors.size(), {});
  auto fail = [&](const std::set<int>& roots, const ir::Node& n, const std::string& why) {
    p.failed_roots.insert(roots.begin(), roots.end());
    p.why = "'" + n.name + "' (" + n.op->name + ") " + why;
  };
  for (size_t ni = 0; ni < g.nodes.size() && p.failed_roots.empty(); ++ni) {
    const ir::Node& n = g.nodes[ni];
    std::set<int> roots;
    bool any = false;
    for (int t : n.inputs) {
      if (t >= 0 && p.axis[t] != kWhole) {
        any = true;
        roots.insert(p.roots[t].begin(), p.roots[t].end());
      }
    }
    const int w = constantWeight(g, n);
    if (w >= 0 && n.inputs[0] >= 0 && p.axis[n.inputs[0]] == int(g.tensors[n.inputs[0]].shape.size()) - 1) {
      p.rows.insert(int(ni));  // reads a slice along K: by rows, y whole after its AllReduce
      continue;
    }
    if (column_roots.count(int(ni)) && !any) {  // x whole, W by columns: y split on its last axis
      const int y = n.outputs[0];
      p.axis[y] = int(g.tensors[y].shape.size()) - 1;
      p.roots[y] = {int(ni)};
      p.columns.insert(int(ni));
      continue;
    }
    if (!any) continue;
    if (n.subgraph || n.outputs.size() != 1 || n.outputs[0] < 0) {
      fail(roots, n, "has several outputs or a body");
      break;
    }
    const int y = n.outputs[0];
    const Shape& ys = g.tensors[y].shape;
    const int yr = int(ys.size());
    const int x0 = n.inputs[0];
    int out_axis = kWhole;
    if (n.op->op_class == OpClass::kElementwise || isMatMul(n)) {
      // Every split operand split along the same output axis (right-aligned), every
      // whole operand of size 1 there (broadcast) or a constant of the full size (sliced).
      for (int t : n.inputs) {
        if (t < 0 || p.axis[t] == kWhole) continue;
        const int a = yr - int(g.tensors[t].shape.size()) + p.axis[t];
        if (out_axis != kWhole && a != out_axis) out_axis = -2;
        else if (out_axis != -2) out_axis = a;
      }
      if (isMatMul(n) && out_axis >= yr - 2) out_axis = -2;  // only a batch axis splits a product of slices
      for (int t : n.inputs) {
        if (out_axis < 0 || t < 0 || p.axis[t] != kWhole) continue;
        const Shape& s = g.tensors[t].shape;
        const int a = out_axis - (yr - int(s.size()));
        if (isMatMul(n) && a >= int(s.size()) - 2) out_axis = -2;
        else if (a >= 0 && s[size_t(a)] != 1 && !(g.tensors[t].isConstant() && s[size_t(a)] == ys[size_t(out_axis)])) out_axis = -2;
      }
      if (out_axis < 0) {
        fail(roots, n, "would combine slices with values split otherwise");
        break;
      }
    } else if (n.op->op_class == OpClass::kReshape && !is(n, "Concat")) {
      out_axis = reshapeAxis(g.tensors[x0].shape, ys, p.axis[x0], ranks);
      if (out_axis < 0) {
        fail(roots, n, "cannot keep the split dimension in one piece");
        break;
      }
    } else if (is(n, "Transpose")) {
      const auto& perm = n.attrs.get<PermAttrs>().perm;
      out_axis = int(std::find(perm.begin(), perm.end(), p.axis[x0]) - perm.begin());
    } else if (is(n, "Softmax") || is(n, "LogSoftmax")) {
      int64_t a = n.attrs.get<AxisAttrs>().axis;
      if (a < 0) a += yr;
      if (a == p.axis[x0]) {
        fail(roots, n, "normalises along the split dimension");
        break;
      }
      out_axis = p.axis[x0];
    } else {
      fail(roots, n, "cannot run on a slice");
      break;
    }
    if (ys[size_t(out_axis)] % ranks != 0) {
      fail(roots, n, "has a split dimension of " + std::to_string(ys[size_t(out_axis)]) + ", not divisible by the ranks");
      break;
    }
    p.axis[y] = out_axis;
    p.roots[y] = roots;
  }
  for (int t : g.outputs) {
    if (p.failed_roots.empty() && p.axis[t] != kWhole) {
      p.failed_roots = p.roots[t];
      p.why = "graph output '" + g.tensors[t].name + "' would be a slice";
    }
  }
  return p;
}

// Rank r's chunk of `t` along `axis`.
ir::Tensor sliceConstant(const ir::Tensor& t, int axis, int rank, int ranks) {
  ir::Tensor s = t;
  const size_t esize = dtypeSize(t.dtype);
  const int64_t outer = product(t.shape, 0, size_t(axis)), inner = product(t.shape, size_t(axis) + 1, t.shape.size());
  const int64_t part = t.shape[size_t(axis)] / ranks;
  std::vector<uint8_t> bytes(size_t(outer * part * inner) * esize);
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(bytes.data() + size_t(o * part * inner) * esize,
                t.constant->data + size_t((o * t.shape[size_t(axis)] + rank * part) * inner) * esize, size_t(part * inner) * esize);
  }
  s.shape[size_t(axis)] = part;
  s.name = t.name + "/rank" + std::to_string(rank);
  s.constant = ir::ConstData::copyOf(bytes.data(), bytes.size());
  return s;
}

}  // namespace

StatusOr<ir::Graph> shardForRank(const ir::Graph& model, int rank, int ranks, ShardReport* report) {
  if (ranks < 2) return makeError(StatusCode::kInvalidArgument, "tensor parallel: ", ranks, " ranks; give 2 or more");
  if (rank < 0 || rank >= ranks) return makeError(StatusCode::kInvalidArgument, "tensor parallel: rank ", rank, " of ", ranks, " is not a rank");
  const ir::Graph& g = model;
  for (const ir::Tensor& t : g.tensors) {
    if (!isStatic(t.shape)) {
      return makeError(StatusCode::kInvalidArgument, "tensor parallel: tensor '", t.name, "' has a dynamic shape ", shapeToString(t.shape),
                       "; fix the input shapes first (gkrt convert --input-shape)");
    }
  }
  ShardReport local;
  ShardReport& r = report ? *report : local;
  r = ShardReport{};
  std::set<int> roots;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const int w = constantWeight(g, g.nodes[ni]);
    if (w < 0) continue;
    if (g.tensors[w].shape[1] % ranks == 0) {
      roots.insert(int(ni));
    } else {
      r.kept_whole.push_back(g.nodes[ni].name + ": its " + std::to_string(g.tensors[w].shape[1]) + " columns do not divide into " +
                             std::to_string(ranks) + " ranks");
    }
  }
  Propagation p;
  while (true) {  // drop the roots whose slices cannot go on, until every slice ends in a row split
    p = propagate(g, roots, ranks);
    if (p.failed_roots.empty()) break;
    for (int f : p.failed_roots) {
      roots.erase(f);
      r.kept_whole.push_back(g.nodes[size_t(f)].name + ": " + p.why);
    }
  }
  // A root whose slice no row split consumed (dead ends) is pointless: such a slice can
  // only reach a graph output, which propagate() refuses, so every root has rows here.
  if (p.rows.empty()) {
    return makeError(StatusCode::kInvalidArgument, "tensor parallel: nothing in the model splits across ranks (a MatMul with constant "
                     "weights by columns, then one by rows)", r.kept_whole.empty() ? "" : "; " + r.kept_whole.front());
  }
  ir::Graph out = ir::cloneGraph(g);
  for (size_t t = 0; t < out.tensors.size(); ++t) {
    if (p.axis[t] != kWhole) out.tensors[t].shape[size_t(p.axis[t])] /= ranks;
  }
  std::vector<ir::Node> nodes;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    ir::Node n = out.nodes[ni];
    if (p.columns.count(int(ni))) {
      n.inputs[1] = out.addTensor(sliceConstant(g.tensors[size_t(n.inputs[1])], 1, rank, ranks));
      r.column_split.push_back(n.name);
    } else if (p.rows.count(int(ni))) {
      n.inputs[1] = out.addTensor(sliceConstant(g.tensors[size_t(n.inputs[1])], 0, rank, ranks));
      const int y = n.outputs[0];
      ir::Tensor partial = out.tensors[size_t(y)];
      partial.name += "/partial";
      n.outputs[0] = out.addTensor(partial);
      r.row_split.push_back(n.name);
      ir::Node sum;
      sum.name = n.name + "/all_reduce";
      sum.op = findOp("AllReduce");
      sum.inputs = {n.outputs[0]};
      sum.outputs = {y};
      nodes.push_back(n);
      nodes.push_back(sum);
      continue;
    } else if (n.outputs.size() == 1 && n.outputs[0] >= 0 && p.axis[size_t(n.outputs[0])] != kWhole) {
      const int y = n.outputs[0];
      const int yr = int(g.tensors[size_t(y)].shape.size()), a = p.axis[size_t(y)];
      for (int& t : n.inputs) {  // whole constants of the full size along the split axis: sliced
        if (t < 0 || p.axis[size_t(t)] != kWhole || !g.tensors[size_t(t)].isConstant()) continue;
        const int k = a - (yr - int(g.tensors[size_t(t)].shape.size()));
        if (k >= 0 && g.tensors[size_t(t)].shape[size_t(k)] != 1) t = out.addTensor(sliceConstant(g.tensors[size_t(t)], k, rank, ranks));
      }
      if (is(n, "Reshape")) n.attrs = ShapeAttrs{out.tensors[size_t(y)].shape};
    }
    nodes.push_back(std::move(n));
  }
  out.nodes = std::move(nodes);
  out.metadata["tensor_parallel"] = "rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  RETURN_IF_ERROR(ir::validateGraph(out).withContext("tensor parallel rank graph"));
  RETURN_IF_ERROR(ir::inferShapes(out).withContext("tensor parallel rank graph"));
  for (size_t t = 0; t < g.tensors.size(); ++t) {  // what inference says must be what the split says
    const Shape& want = out.tensors[t].shape;
    Shape split = g.tensors[t].shape;
    if (p.axis[t] != kWhole) split[size_t(p.axis[t])] /= ranks;
    if (want != split) {
      return makeError(StatusCode::kInternal, "tensor parallel: tensor '", g.tensors[t].name, "' comes out ", shapeToString(want),
                       ", split as ", shapeToString(split));
    }
  }
  ir::compactGraph(out);  // the whole weights the slices replaced
  return out;
}

}  // namespace gkrt
