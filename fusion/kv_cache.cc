#include "fusion/kv_cache.h"

#include <cstring>
#include <limits>
#include <set>

#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

bool named(const ir::Node& n, std::initializer_list<const char*> ops) {
  for (const char* op : ops) if (n.op && std::strcmp(n.op->name, op) == 0) return true;
  return false;
}

// The head-repeat and layout ops a cached key or value passes through on its way to a
// matmul (their data input is input 0).
bool isViewOp(const ir::Node& n) {
  return named(n, {"ExpandDims", "Reshape", "DynamicReshape", "BroadcastTo", "DynamicBroadcastTo", "Tile", "DynamicTile",
                   "Transpose", "IdentityMath"});
}

struct Walk {
  const ir::Graph& g;
  std::vector<std::vector<int>> readers;  // node indices reading each tensor's data
  std::vector<char> is_output;
  std::vector<int> producer;

  explicit Walk(const ir::Graph& graph) : g(graph), readers(graph.tensors.size()), is_output(graph.tensors.size(), 0) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].op && g.nodes[i].op->reads_only_shapes) continue;  // a size for the mask: goes with it
      for (int t : g.nodes[i].inputs) if (t >= 0) readers[size_t(t)].push_back(int(i));
    }
    for (int t : g.outputs) is_output[size_t(t)] = 1;
    producer = g.producers();
  }
  // The one node reading `t` (t no graph output unless `output_ok`), or -1.
  int onlyReader(int t, bool output_ok = false) const {
    if (readers[size_t(t)].size() != 1 || (is_output[size_t(t)] && !output_ok)) return -1;
    return readers[size_t(t)][0];
  }
};

// From a present tensor through view ops to the matmul reading it.
struct ViewChain {
  int end = -1;            // the tensor the matmul reads
  int matmul = -1;         // that matmul's node
  bool transposed = false; // a Transpose of the last two dims on the way (keys)
  std::string why;
};

ViewChain followViews(const Walk& w, int t) {
  ViewChain c;
  bool expanded_at_2 = false, repeated = false;
  for (bool first = true;; first = false) {
    const int r = w.onlyReader(t, first);
    if (r < 0) {
      c.why = "'" + w.g.tensors[size_t(t)].name + "' is read by " + std::to_string(w.readers[size_t(t)].size()) +
              " nodes, not one chain to the attention";
      return c;
    }
    const ir::Node& n = w.g.nodes[size_t(r)];
    if (!isViewOp(n) || n.inputs.empty() || n.inputs[0] != t) {
      if (named(n, {"BatchMatMul", "MatMul"})) {
        c.end = t;
        c.matmul = r;
        if (repeated && !expanded_at_2) c.why = "the grouped-query head repeat is not ExpandDims(axis 2) + Tile/Expand + Reshape";
        return c;
      }
      c.why = "'" + w.g.tensors[size_t(t)].name + "' goes into " + ir::describeNode(w.g, r) + ", not a matmul of the attention";
      return c;
    }
    if (named(n, {"Transpose"})) {
      if (n.attrs.get<PermAttrs>().perm != Ints{0, 1, 3, 2} || c.transposed) {
        c.why = ir::describeNode(w.g, r) + " is not the keys' transpose of the last two dims";
        return c;
      }
      c.transposed = true;
    }
    if (named(n, {"ExpandDims"})) expanded_at_2 = n.attrs.get<AxesAttrs>().axes == Ints{2};
    if (named(n, {"Tile", "DynamicTile", "BroadcastTo", "DynamicBroadcastTo"})) repeated = true;
    t = n.outputs[0];
  }
}

struct LayerMatch {
  int concat_k = -1, concat_v = -1, pv = -1, q = -1;
  float scale = 1.0f;
};

// From the scores matmul to the probabilities matmul: scale, added masks, Softmax, the
// all-masked-row guard.
Status followScores(const Walk& w, int qk, int v_end, LayerMatch* m) {
  const ir::Graph& g = w.g;
  int t = g.nodes[size_t(qk)].outputs[0];
  bool softmax = false;
  for (;;) {
    const int r = w.onlyReader(t);
    if (r < 0) return makeError(StatusCode::kUnsupported, "the attention scores '", g.tensors[size_t(t)].name, "' are read more than once");
    const ir::Node& n = g.nodes[size_t(r)];
    const int other = n.inputs.size() == 2 ? n.inputs[n.inputs[0] == t ? 1 : 0] : -1;
    if (!softmax && named(n, {"Mul", "Div", "RealDiv"}) && passes::scalarConstant(g, other)) {
      const float c = *passes::scalarConstant(g, other);
      if (named(n, {"Mul"})) m->scale *= c;
      else if (n.inputs[1] == other && c != 0) m->scale /= c;
      else return makeError(StatusCode::kUnsupported, ir::describeNode(g, r), " divides by the scores");
    } else if (!softmax && named(n, {"Add"})) {
      // a mask or bias: the rewritten attention is causal with no padding (kv_cache.h)
    } else if (!softmax && named(n, {"Tanh"})) {
      return makeError(StatusCode::kUnsupported, "soft-capped attention scores (", ir::describeNode(g, r), ")");
    } else if (!softmax && named(n, {"Softmax"})) {
      const int64_t axis = n.attrs.get<AxisAttrs>().axis;
      if (axis != -1 && axis != 3) return makeError(StatusCode::kUnsupported, ir::describeNode(g, r), " is not over the keys");
      softmax = true;
    } else if (softmax && named(n, {"Select"}) && n.inputs.size() == 3 && n.inputs[2] == t) {
      // a row with every key masked: no such row in causal attention over a filled cache
    } else if (softmax && named(n, {"BatchMatMul", "MatMul"}) && n.inputs[0] == t && n.inputs[1] == v_end) {
      const auto& a = n.attrs.get<MatMulAttrs>();
      if (a.transpose_a || a.transpose_b) return makeError(StatusCode::kUnsupported, ir::describeNode(g, r), " transposes an operand");
      m->pv = r;
      return Status::Ok();
    } else {
      return makeError(StatusCode::kUnsupported, "the attention scores go into ", ir::describeNode(g, r),
                       ", not a scale, mask, Softmax or the values' matmul");
    }
    t = n.outputs[0];
  }
}

}  // namespace

StatusOr<KvCacheBinding> bindKvCache(ir::Graph& g, int64_t capacity) {
  if (capacity <= 0) return makeError(StatusCode::kInvalidArgument, "the KV cache capacity must be positive, got ", capacity);
  if (!findOp("CachedAttention")) {
    return makeError(StatusCode::kUnsupported, "this gkrt build has no CachedAttention op (a minimal build without it): "
                     "generation needs it; add CachedAttention to the op list");
  }
  if (g.findTensor(kPastLengthInput) >= 0) {
    return makeError(StatusCode::kInvalidArgument, "the model already has a tensor '", kPastLengthInput, "': bound twice?");
  }
  const Walk w(g);
  std::set<int> inputs(g.inputs.begin(), g.inputs.end());
  // present = Concat(past input, new, axis 2) of rank 4: a layer's key or value
  std::vector<int> concats;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!named(n, {"Concat"}) || n.inputs.size() != 2 || !inputs.count(n.inputs[0])) continue;
    const Shape& s = g.tensors[size_t(n.inputs[0])].shape;
    const int64_t axis = n.attrs.get<AxisAttrs>().axis;
    if (s.size() == 4 && (axis == 2 || axis == -2)) concats.push_back(int(i));
  }
  if (concats.empty()) {
    return makeError(StatusCode::kUnsupported, "no KV cache in this model: no output is Concat(past input, new keys, axis 2) of "
                     "[batch, heads, positions, head dim] (export the decoder with past key/value inputs)");
  }
  std::vector<LayerMatch> layers;
  std::set<int> used;
  for (int ck : concats) {
    const ViewChain kc = followViews(w, g.nodes[size_t(ck)].outputs[0]);
    if (kc.matmul < 0 || !kc.why.empty()) continue;  // a value (or not attention): found from its key
    const ir::Node& qk = g.nodes[size_t(kc.matmul)];
    if (qk.inputs[1] != kc.end || qk.attrs.get<MatMulAttrs>().transpose_a || kc.transposed == qk.attrs.get<MatMulAttrs>().transpose_b) continue;
    // the values: the concat whose chain ends at the other matmul
    LayerMatch m;
    m.concat_k = ck;
    m.q = qk.inputs[0];
    Status found = makeError(StatusCode::kUnsupported, "no values' Concat(past, new) feeds the attention of '",
                             g.tensors[size_t(g.nodes[size_t(ck)].outputs[0])].name, "'");
    for (int cv : concats) {
      if (cv == ck || used.count(cv)) continue;
      const ViewChain vc = followViews(w, g.nodes[size_t(cv)].outputs[0]);
      if (vc.matmul < 0 || vc.transposed || g.nodes[size_t(vc.matmul)].inputs[1] != vc.end) continue;
      if (!vc.why.empty()) { found = makeError(StatusCode::kUnsupported, vc.why); continue; }
      LayerMatch trial = m;
      trial.concat_v = cv;
      Status s = followScores(w, kc.matmul, vc.end, &trial);
      if (s.ok() && trial.pv == vc.matmul) {
        m = trial;
        found = Status::Ok();
        break;
      }
      if (!s.ok()) found = s;
    }
    if (!found.ok()) return found.withContext("KV cache of '" + g.tensors[size_t(g.nodes[size_t(ck)].inputs[0])].name + "'");
    used.insert(ck);
    used.insert(m.concat_v);
    layers.push_back(m);
  }
  if (layers.empty()) {
    return makeError(StatusCode::kUnsupported, "the model's past/present Concats feed no attention gkrt recognises (",
                     followViews(w, g.nodes[size_t(concats[0])].outputs[0]).why, ")");
  }
  KvCacheBinding b;
  b.capacity = capacity;
  ir::Tensor past_len;
  past_len.name = kPastLengthInput;
  past_len.dtype = DType::kInt64;
  past_len.shape = {1};
  const int past_t = g.addTensor(past_len);
  g.inputs.push_back(past_t);
  std::set<int> removed;
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerMatch& m = layers[l];
    const ir::Node ck = g.nodes[size_t(m.concat_k)], cv = g.nodes[size_t(m.concat_v)];
    KvCacheLayer layer;
    for (int t : {ck.inputs[0], cv.inputs[0]}) {
      ir::Tensor& cache = g.tensors[size_t(t)];
      cache.shape[2] = capacity;
      if (cache.dim_symbols.size() == 4) cache.dim_symbols[2].clear();
    }
    layer.key = g.tensors[size_t(ck.inputs[0])].name;
    layer.value = g.tensors[size_t(cv.inputs[0])].name;
    layer.kv_heads = g.tensors[size_t(ck.inputs[0])].shape[1];
    layer.head_dim = g.tensors[size_t(ck.inputs[0])].shape[3];
    layer.value_head_dim = g.tensors[size_t(cv.inputs[0])].shape[3];
    b.dtype = g.tensors[size_t(ck.inputs[0])].dtype;
    b.layers.push_back(layer);
    for (int t : {ck.outputs[0], cv.outputs[0]}) {
      removed.insert(t);
      if (w.is_output[size_t(t)]) b.removed_outputs.push_back(g.tensors[size_t(t)].name);
    }
    ir::Node n;
    n.name = g.nodes[size_t(m.pv)].name + "/cached";
    n.op = findOp("CachedAttention");
    n.attrs = AttentionAttrs{m.scale, AttentionLayout::kBNSD, 0, false};
    n.inputs = {m.q, ck.inputs[1], cv.inputs[1], ck.inputs[0], cv.inputs[0], past_t};
    n.outputs = {g.nodes[size_t(m.pv)].outputs[0]};
    g.nodes[size_t(m.pv)] = std::move(n);
  }
  std::vector<int> outputs;
  for (int t : g.outputs) if (!removed.count(t)) outputs.push_back(t);
  g.outputs = outputs;
  ir::compactGraph(g);
  return b;
}

void keepLastPositionLogits(ir::Graph& g, int logits) {
  const std::vector<int> producers = g.producers();
  const int p = producers[size_t(logits)];
  const OpDef* slice = findOp("StridedSlice");
  if (p < 0 || !slice) return;
  const ir::Node& mm = g.nodes[size_t(p)];
  const std::string op = mm.op->name;
  const bool block_quant = op == "BlockQuantMatMul";  // weights kept in blocks: [N, blocks, blob]
  if (!block_quant && ((op != "MatMul" && op != "BatchMatMul") || mm.inputs.size() != 2)) return;
  const ir::Tensor& h = g.tensors[size_t(mm.inputs[0])];
  if (h.shape.size() != 3 || (!block_quant && g.tensors[size_t(mm.inputs[1])].shape.size() != 2) ||
      g.tensors[size_t(logits)].shape.size() != 3) {
    return;
  }
  ir::Tensor last = h;
  last.name = h.name + "/last_position";
  last.shape[1] = 1;
  if (last.dim_symbols.size() == 3) last.dim_symbols[1].clear();
  last.constant.reset();
  last.value.reset();
  const int t = g.addTensor(last);
  ir::Node cut;
  cut.name = mm.name + "/last_position";
  cut.op = slice;
  cut.attrs = StridedSliceAttrs{{-1}, {std::numeric_limits<int64_t>::max()}, {1}, {1}};
  cut.inputs = {mm.inputs[0]};
  cut.outputs = {t};
  g.nodes[size_t(p)].inputs[0] = t;
  ir::Tensor& y = g.tensors[size_t(logits)];
  y.shape[1] = 1;
  if (y.dim_symbols.size() == 3) y.dim_symbols[1].clear();
  g.nodes.insert(g.nodes.begin() + p, std::move(cut));
}

}  // namespace gkrt
