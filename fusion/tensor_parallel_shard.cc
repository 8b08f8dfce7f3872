#include "fusion/tensor_parallel_shard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "fusion/tensor_parallel_plan.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

using namespace tp;

bool is(const ir::Node& n, const char* op) { return n.op && std::strcmp(n.op->name, op) == 0; }

// Rank r's elements of `t` along `axis`: the ranges, one after another.
ir::Tensor sliceConstant(const ir::Tensor& t, int axis, const std::vector<std::pair<int64_t, int64_t>>& ranges, int rank) {
  ir::Tensor s = t;
  const size_t esize = dtypeSize(t.dtype);
  const int64_t outer = product(t.shape, 0, size_t(axis)), inner = product(t.shape, size_t(axis) + 1, t.shape.size());
  const int64_t dim = t.shape[size_t(axis)];
  int64_t part = 0;
  for (const auto& [b, e] : ranges) part += e - b;
  std::vector<uint8_t> bytes(size_t(outer * part * inner) * esize);
  uint8_t* out = bytes.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto& [b, e] : ranges) {
      const size_t n = size_t((e - b) * inner) * esize;
      std::memcpy(out, t.constant->data + size_t((o * dim + b) * inner) * esize, n);
      out += n;
    }
  }
  s.shape[size_t(axis)] = part;
  s.name = t.name + "/rank" + std::to_string(rank);
  s.constant = ir::ConstData::copyOf(bytes.data(), bytes.size());
  return s;
}

// The candidate unit counts of `size` columns on `ranks` ranks.
std::vector<int64_t> unitCandidates(int64_t size, int ranks) {
  std::vector<int64_t> c;
  if (size % ranks == 0) c.push_back(ranks);
  for (int64_t u = ranks + 1; u <= size && c.size() < 64; ++u) {
    if (size % u == 0) c.push_back(u);
  }
  return c;
}

}  // namespace

StatusOr<ir::Graph> shardForRank(const ir::Graph& model, int rank, int ranks, ShardReport* report) {
  if (ranks < 2) return makeError(StatusCode::kInvalidArgument, "tensor parallel: ", ranks, " ranks; give 2 or more");
  if (rank < 0 || rank >= ranks) return makeError(StatusCode::kInvalidArgument, "tensor parallel: rank ", rank, " of ", ranks, " is not a rank");
  const ir::Graph& g = model;
  ShardReport local;
  ShardReport& r = report ? *report : local;
  r = ShardReport{};
  std::vector<Source> sources;
  std::map<int, Root> roots;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ir::Node& n = g.nodes[ni];
    if (constantWeight(g, n) < 0) continue;
    const int y = n.outputs[0];
    const int64_t columns = columnsOf(g, n);
    Root root;
    std::vector<int64_t> pieces = packedPieces(g, y, &root);
    if (pieces.empty()) pieces = {columns};
    int64_t offset = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      Source s;
      s.node = int(ni);
      s.piece = int(k);
      s.offset = offset;
      s.size = pieces[k];
      offset += pieces[k];
      s.candidates = unitCandidates(s.size, ranks);
      s.active = !s.candidates.empty();
      if (!s.active) {
        r.kept_whole.push_back(n.name + ": its " + std::to_string(s.size) + " columns do not divide into " + std::to_string(ranks) + " ranks");
      }
      root.sources.push_back(int(sources.size()));
      sources.push_back(std::move(s));
    }
    roots[int(ni)] = std::move(root);
  }
  Propagation p;
  while (true) {  // more units for the sources that need them, else whole, until every slice ends in a row split
    p = propagateSplits(g, sources, roots, ranks);
    if (p.failed.empty()) break;
    size_t changed = 0;
    for (int f : p.failed) {
      if (!sources[size_t(f)].active) continue;
      ++changed;
      Source& s = sources[size_t(f)];
      if (p.retry && s.at + 1 < s.candidates.size()) {
        ++s.at;
        continue;
      }
      s.active = false;
      const ir::Node& n = g.nodes[size_t(s.node)];
      r.kept_whole.push_back(n.name + (roots[s.node].sources.size() > 1 ? " part " + std::to_string(s.piece) : "") + ": " + p.why);
    }
    if (changed == 0) return makeError(StatusCode::kInternal, "tensor parallel: no way on from ", p.why);
  }
  if (p.rows.empty()) {
    return makeError(StatusCode::kInvalidArgument, "tensor parallel: nothing in the model splits across ranks (a MatMul with constant "
                     "weights by columns, then one by rows)", r.kept_whole.empty() ? "" : "; " + r.kept_whole.front());
  }
  ir::Graph out = ir::cloneGraph(g);
  std::vector<Shape> want(g.tensors.size());
  auto localDim = [&](int64_t dim, int64_t units) {
    const auto [b, e] = elementRange(dim, units, rank, ranks);
    return e - b;
  };
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    want[t] = g.tensors[t].shape;
    const TensorSplit& s = p.t[t];
    if (s.axis != kWhole && s.units > 0) want[t][size_t(s.axis)] = localDim(want[t][size_t(s.axis)], s.units);
  }
  // A column root's ranges of its weight's columns: per piece, rank r's part, or all of it when it stays whole.
  auto columnRanges = [&](const Root& root, std::vector<int64_t>* sizes) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int si : root.sources) {
      const Source& s = sources[size_t(si)];
      auto [b, e] = s.active ? elementRange(s.size, s.units(), rank, ranks) : std::pair<int64_t, int64_t>{0, s.size};
      ranges.push_back({s.offset + b, s.offset + e});
      sizes->push_back(e - b);
    }
    return ranges;
  };
  std::vector<ir::Node> nodes;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    ir::Node n = out.nodes[ni];
    const bool bq = blockQuant(n);
    if (p.columns.count(int(ni))) {
      std::vector<int64_t> sizes;
      const auto ranges = columnRanges(roots[int(ni)], &sizes);
      for (size_t k = 1; k < n.inputs.size(); ++k) {  // W by its columns; a block-quantized one's scales, offsets and bias too
        if (n.inputs[k] >= 0 && (k == 1 || bq)) n.inputs[k] = out.addTensor(sliceConstant(g.tensors[size_t(n.inputs[k])], bq ? 0 : 1, ranges, rank));
      }
      int64_t total = 0;
      for (int64_t s : sizes) total += s;
      want[size_t(n.outputs[0])].back() = total;
      const Root& root = roots[int(ni)];
      if (root.split_node >= 0) out.nodes[size_t(root.split_node)].attrs = SplitAttrs{-1, Ints(sizes.begin(), sizes.end())};
      int64_t at = 0;
      for (size_t k = 0; k < root.slice_nodes.size(); ++k) {  // the StridedSlices: this rank's columns of each piece
        StridedSliceAttrs a = out.nodes[size_t(root.slice_nodes[k])].attrs.get<StridedSliceAttrs>();
        a.begins = {at};
        a.ends = {at + sizes[k]};
        out.nodes[size_t(root.slice_nodes[k])].attrs = a;
        at += sizes[k];
      }
      r.column_split.push_back(n.name);
    } else if (p.rows.count(int(ni))) {
      const int x = n.inputs[0];
      const auto [k0, k1] = elementRange(g.tensors[size_t(x)].shape.back(), p.t[size_t(x)].units, rank, ranks);
      if (bq) {  // the blocks of rows k0 .. k1 of W, with their scales and offsets; the bias on rank 0 alone
        const int64_t block = n.attrs.get<QuantAttrs>().block_size;
        const std::pair<int64_t, int64_t> blocks{k0 / block, (k1 + block - 1) / block};
        for (size_t k = 1; k < std::min<size_t>(n.inputs.size(), 4); ++k) {
          if (n.inputs[k] >= 0) n.inputs[k] = out.addTensor(sliceConstant(g.tensors[size_t(n.inputs[k])], 1, {blocks}, rank));
        }
        if (n.inputs.size() > 4 && rank != 0) n.inputs.resize(4);
      } else {
        n.inputs[1] = out.addTensor(sliceConstant(g.tensors[size_t(n.inputs[1])], 0, {{k0, k1}}, rank));
      }
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
    } else if (n.outputs.size() == 1 && n.outputs[0] >= 0 && p.t[size_t(n.outputs[0])].axis != kWhole &&
               p.t[size_t(n.outputs[0])].units > 0) {
      const int y = n.outputs[0];
      const Shape& ys = g.tensors[size_t(y)].shape;
      const int yr = int(ys.size()), a = p.t[size_t(y)].axis;
      const int64_t units = p.t[size_t(y)].units;
      const auto range = elementRange(ys[size_t(a)], units, rank, ranks);
      const bool reshape = is(n, "Reshape") || is(n, "DynamicReshape");
      for (size_t k = 0; k < n.inputs.size() && !reshape; ++k) {  // whole constants of the full size along the split axis: sliced
        const int t = n.inputs[k];
        if (t < 0 || p.t[size_t(t)].axis != kWhole || !g.tensors[size_t(t)].isConstant()) continue;
        const int j = a - (yr - int(g.tensors[size_t(t)].shape.size()));
        if (j >= 0 && g.tensors[size_t(t)].shape[size_t(j)] != 1) n.inputs[k] = out.addTensor(sliceConstant(g.tensors[size_t(t)], j, {range}, rank));
      }
      if (is(n, "Reshape")) {
        Ints shape = n.attrs.get<ShapeAttrs>().shape;
        if (size_t(a) < shape.size() && shape[size_t(a)] == ys[size_t(a)]) shape[size_t(a)] = range.second - range.first;
        n.attrs = ShapeAttrs{shape};
      } else if (is(n, "DynamicReshape")) {  // its constant shape's entry for the split dim
        const ir::Tensor& st = g.tensors[size_t(n.inputs[1])];
        if (size_t(a) < size_t(st.constant->size / 8)) {  // int64: the plan takes no other
          std::vector<int64_t> v(st.constant->size / 8);
          std::memcpy(v.data(), st.constant->data, st.constant->size);
          if (v[size_t(a)] == ys[size_t(a)]) {
            v[size_t(a)] = range.second - range.first;
            ir::Tensor s = st;
            s.name += "/rank" + std::to_string(rank);
            s.constant = ir::ConstData::copyOf(v.data(), v.size() * 8);
            n.inputs[1] = out.addTensor(s);
          }
        }
      } else if (n.attrs.kind() == AttrKind::kAttention && n.attrs.get<AttentionAttrs>().heads > 0) {
        AttentionAttrs at = n.attrs.get<AttentionAttrs>();
        const auto [u0, u1] = unitRange(rank, ranks, units);
        at.heads = at.heads / units * (u1 - u0);
        n.attrs = at;
      }
    }
    nodes.push_back(std::move(n));
  }
  for (size_t t = 0; t < g.tensors.size(); ++t) out.tensors[t].shape = want[t];
  out.nodes = std::move(nodes);
  out.metadata["tensor_parallel"] = "rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  RETURN_IF_ERROR(ir::validateGraph(out).withContext("tensor parallel rank graph"));
  if (Status inferred = ir::inferShapes(out); !inferred.ok()) {
    ir::Graph whole = ir::cloneGraph(g);  // a decoder with sizes known only at run time: each plan's shapes are checked then
    if (ir::inferShapes(whole).ok()) return inferred.withContext("tensor parallel rank graph");
    ir::compactGraph(out);
    return out;
  }
  for (size_t t = 0; t < g.tensors.size(); ++t) {  // what inference says must be what the split says
    if (out.tensors[t].shape != want[t]) {
      return makeError(StatusCode::kInternal, "tensor parallel: tensor '", g.tensors[t].name, "' comes out ",
                       shapeToString(out.tensors[t].shape), ", split as ", shapeToString(want[t]));
    }
  }
  ir::compactGraph(out);  // the whole weights the slices replaced
  return out;
}

}  // namespace gkrt
