#include "tools/gguf/gguf_import.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "runtime/builder.h"
#include "runtime/model_io.h"
#include "tools/gguf/gguf_blocks.h"
#include "tools/trial_graphs.h"

namespace gkrt::gguf {
namespace {

using Node = gkrt::Value;  // a value of the graph being built (gguf::Value is a metadata value)

struct Hyper {
  std::string arch;
  int64_t layers = 0, hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  double rope_base = 10000, eps = 1e-5, rope_linear = 1;
  bool permuted_qk = false;  // llama: llama.cpp's converter interleaved the rotary halves
  bool qkv_bias = false;     // qwen2
};

std::string dimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

StatusOr<Hyper> hyperParameters(const GgufFile& f) {
  Hyper h;
  h.arch = f.architecture();
  if (h.arch != "llama" && h.arch != "qwen2") {
    return makeError(StatusCode::kUnsupported, "GGUF general.architecture is '", h.arch.empty() ? "(missing)" : h.arch,
                     "'; gkrt converts the architectures llama (Llama, SmolLM2, TinyLlama, Mistral) and qwen2");
  }
  const std::string a = h.arch + ".";
  auto integer = [&](const std::string& key, int64_t fallback, int64_t* out) -> Status {
    if (!f.find(a + key) && fallback >= 0) {
      *out = fallback;
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(*out, f.getInt(a + key));
    if (*out <= 0) return makeError(StatusCode::kInvalidModel, "GGUF metadata '", a, key, "' is ", *out, "; it must be positive");
    return Status::Ok();
  };
  RETURN_IF_ERROR(integer("block_count", -1, &h.layers));
  RETURN_IF_ERROR(integer("embedding_length", -1, &h.hidden));
  RETURN_IF_ERROR(integer("feed_forward_length", -1, &h.ffn));
  RETURN_IF_ERROR(integer("attention.head_count", -1, &h.heads));
  RETURN_IF_ERROR(integer("attention.head_count_kv", h.heads, &h.kv_heads));
  RETURN_IF_ERROR(integer("attention.key_length", h.hidden / h.heads, &h.head_dim));
  int64_t value_dim = 0, rope_dims = 0;
  RETURN_IF_ERROR(integer("attention.value_length", h.head_dim, &value_dim));
  RETURN_IF_ERROR(integer("rope.dimension_count", h.head_dim, &rope_dims));
  if (value_dim != h.head_dim || rope_dims != h.head_dim || h.head_dim % 2 != 0) {
    return makeError(StatusCode::kUnsupported, "GGUF ", h.arch, " with key length ", h.head_dim, ", value length ", value_dim,
                     " and rotary dims ", rope_dims, ": gkrt converts equal, even ones (rotary over the whole head)");
  }
  if (h.head_dim <= 0) {
    return makeError(StatusCode::kInvalidModel, "GGUF ", a, "embedding_length ", h.hidden, " over head_count ", h.heads,
                     " leaves no head dim; give ", a, "attention.key_length");
  }
  if (h.heads % h.kv_heads != 0) {
    return makeError(StatusCode::kInvalidModel, "GGUF ", a, "attention.head_count ", h.heads, " is not a multiple of head_count_kv ",
                     h.kv_heads);
  }
  if (f.find(a + "rope.freq_base")) { ASSIGN_OR_RETURN(h.rope_base, f.getFloat(a + "rope.freq_base")); }
  ASSIGN_OR_RETURN(h.eps, f.getFloat(a + "attention.layer_norm_rms_epsilon"));
  if (const Value* type = f.find(a + "rope.scaling.type"); type && type->s != "none") {
    if (type->s != "linear") {
      return makeError(StatusCode::kUnsupported, "GGUF ", a, "rope.scaling.type '", type->s, "': gkrt converts none and linear");
    }
    ASSIGN_OR_RETURN(h.rope_linear, f.getFloat(a + "rope.scaling.factor"));
    if (!(h.rope_linear > 0)) return makeError(StatusCode::kInvalidModel, "GGUF ", a, "rope.scaling.factor must be positive");
  }
  const Tensor* embd = f.findTensor("token_embd.weight");
  if (!embd) return makeError(StatusCode::kInvalidModel, "GGUF file has no tensor 'token_embd.weight' (the token embedding)");
  if (embd->dims.size() != 2) return makeError(StatusCode::kInvalidModel, "GGUF tensor 'token_embd.weight' is not 2-D");
  h.vocab = embd->dims[1];
  // The sizes the graph is built from must be the tensors' (checked before anything is
  // made of them): the first layer's Q and K, and a tensor for every layer.
  int64_t q_rows = 0, k_rows = 0;
  const Tensor* q = f.findTensor("blk.0.attn_q.weight");
  const Tensor* k = f.findTensor("blk.0.attn_k.weight");
  if (__builtin_mul_overflow(h.heads, h.head_dim, &q_rows) || __builtin_mul_overflow(h.kv_heads, h.head_dim, &k_rows) || !q ||
      !k || q->dims != std::vector<int64_t>{h.hidden, q_rows} || k->dims != std::vector<int64_t>{h.hidden, k_rows}) {
    return makeError(StatusCode::kInvalidModel, "GGUF ", h.arch, " with hidden ", h.hidden, " and ", h.heads, " heads (", h.kv_heads,
                     " KV) of ", h.head_dim, " needs blk.0.attn_q.weight [", h.hidden, ", heads x head dim] and attn_k.weight [",
                     h.hidden, ", KV heads x head dim]; the file has ", q ? dimsText(q->dims) : "no attn_q", " and ",
                     k ? dimsText(k->dims) : "no attn_k");
  }
  if (!f.findTensor("blk." + std::to_string(h.layers - 1) + ".attn_norm.weight")) {
    return makeError(StatusCode::kInvalidModel, "GGUF ", a, "block_count is ", h.layers, " but the file has no tensor 'blk.",
                     h.layers - 1, ".attn_norm.weight'");
  }
  h.permuted_qk = h.arch == "llama";
  h.qkv_bias = h.arch == "qwen2";
  return h;
}


// An arena array as a constant's bytes, the arena kept alive by it.
template <class T> std::shared_ptr<const ir::ConstData> inArena(const ArenaArray<T>& a, const std::shared_ptr<HugePageArena>& arena) {
  auto c = std::make_shared<ir::ConstData>();
  c->data = reinterpret_cast<const uint8_t*>(a.data());
  c->size = a.size() * sizeof(T);
  c->owner = arena;
  c->huge_pages = true;
  return c;
}

template <class V> std::shared_ptr<const ir::ConstData> own(V v) {
  using T = typename V::value_type;
  auto held = std::make_shared<V>(std::move(v));
  auto c = std::make_shared<ir::ConstData>();
  c->data = reinterpret_cast<const uint8_t*>(held->data());
  c->size = held->size() * sizeof(T);
  c->owner = held;
  return c;
}

// A weight converted once, for both trial builds.
struct Converted {
  std::shared_ptr<const ir::ConstData> values, scales, offsets;  // block types (offsets may be null)
  std::shared_ptr<const ir::ConstData> floats;                   // float types: [K, N] (a matmul) or as stored
  int64_t block = 0, blocks = 0, blob = 0;
  DType to = DType::kInt8;
};

class Importer {
 public:
  Importer(const GgufFile& f, const Hyper& h, const ImportOptions& o) : f_(f), h_(h), o_(o) {}

  // The graph at trial sizes: sequence length `seq`, cache length `past`.
  StatusOr<ir::Graph> build(int64_t seq, int64_t past);

 private:
  // The tensor `name` with ggml dims `dims`, or an error naming both.
  StatusOr<const Tensor*> tensor(const std::string& name, std::vector<int64_t> dims, bool optional = false) {
    const Tensor* t = f_.findTensor(name);
    if (!t) {
      if (optional) return static_cast<const Tensor*>(nullptr);
      return makeError(StatusCode::kInvalidModel, "GGUF file has no tensor '", name, "', which ", h_.arch, " needs");
    }
    if (t->dims != dims) {
      return makeError(StatusCode::kInvalidModel, "GGUF tensor '", name, "' is ", dimsText(t->dims), " (ggml order); ", h_.arch,
                       " with hidden ", h_.hidden, ", ", h_.heads, " heads (", h_.kv_heads, " KV) of ", h_.head_dim, ", feed-forward ",
                       h_.ffn, " and vocabulary ", h_.vocab, " needs ", dimsText(dims));
    }
    return t;
  }
  Node constantF(const std::vector<float>& v, const Shape& s) { return b_.constant("", DType::kFloat32, s, v.data()); }
  Node constantF(const std::shared_ptr<const ir::ConstData>& v, const Shape& s, const std::string& name = "") {
    return b_.constant(name, DType::kFloat32, s, v);
  }
  // One graph constant per converted array and build (a tied output shares the embedding's).
  Node shared(const std::string& name, DType dt, const Shape& s, const std::shared_ptr<const ir::ConstData>& data) {
    auto it = nodes_.find(data.get());
    if (it != nodes_.end()) return it->second;
    return nodes_[data.get()] = b_.constant(name, dt, s, data);
  }
  // The block weight `t` (rows reordered by row_of), converted on first use.
  StatusOr<const Converted*> blocks(const Tensor& t, const std::vector<int64_t>& row_of, bool one_a_byte = false);
  Node int64s(const Ints& v) { return b_.constant("", DType::kInt64, {int64_t(v.size())}, v.data()); }
  Node int64Scalar(int64_t v) { return b_.constant("", DType::kInt64, {}, &v); }
  Node reshape(Node x, const Ints& shape) { return b_.op1("DynamicReshape", {x, int64s(shape)}); }  // 0: keep the dim
  Node dimOf(Node x, int64_t axis) {
    const Node d = b_.op1("StridedSlice", {b_.op1("Shape", {x})}, StridedSliceAttrs{{axis}, {axis + 1}, {0}, {1}});
    return b_.op1("Reshape", {d}, ShapeAttrs{{}});
  }
  StatusOr<Node> vector(const std::string& name, int64_t n, const std::vector<int64_t>& row_of = {}) {
    ASSIGN_OR_RETURN(const Tensor* t, tensor(name, {n}));
    Converted& c = converted_[name];
    if (!c.floats) {
      ASSIGN_OR_RETURN(std::vector<float> v, floatValues(*t));
      if (!row_of.empty()) {
        std::vector<float> p(v.size());
        for (size_t i = 0; i < p.size(); ++i) p[i] = v[size_t(row_of[i])];
        v.swap(p);
      }
      c.floats = own(std::move(v));
    }
    return constantF(c.floats, {n}, name);
  }
  // x [1, S, K] times the weight `name` (ggml [K, N]) -> [1, S, N], plus `bias` (may be absent).
  StatusOr<Node> linear(Node x, const std::string& name, int64_t K, int64_t N, const std::vector<int64_t>& row_of = {},
                         Node bias = {});
  // Sibling weights on the same x (Q/K/V; gate/up) as one matmul over their rows
  // concatenated, then a Split (fusion makes SwiGLU of a gate/up pair); separate
  // matmuls when their types differ.
  struct Part {
    std::string name;
    int64_t N;
    std::vector<int64_t> row_of;
    Node bias;
  };
  StatusOr<std::vector<Node>> linears(Node x, int64_t K, const std::vector<Part>& parts);
  StatusOr<Node> embed(Node ids, const Tensor& table);
  StatusOr<Node> layer(int64_t l, Node x, Node cos, Node sin, Node causal, Node past_k, Node past_v);

  const GgufFile& f_;
  const Hyper& h_;
  const ImportOptions& o_;
  GraphBuilder b_;
  std::map<std::string, Converted> converted_;  // by tensor name (+ "/bytes": one a byte)
  std::map<const ir::ConstData*, Node> nodes_;   // this build's constants
  std::shared_ptr<HugePageArena> arena_ = std::make_shared<HugePageArena>();  // the converted block weights
};

StatusOr<const Converted*> Importer::blocks(const Tensor& t, const std::vector<int64_t>& row_of, bool one_a_byte) {
  // A Q8_0 table is one a byte already: the embedding and a tied output share it.
  const bool bytes = one_a_byte && TensorType(t.type) != TensorType::kQ8_0 && TensorType(t.type) != TensorType::kQ6_K;
  Converted& c = converted_[t.name + (bytes ? "/bytes" : "")];
  if (c.values) return &c;
  ASSIGN_OR_RETURN(BlockWeight w, blockWeight(t, arena_, row_of));
  if (bytes) { ASSIGN_OR_RETURN(w, valuesPerByte(w)); }
  c.block = w.block;
  c.blocks = w.blocks;
  c.blob = w.blob;
  c.to = w.to;
  c.values = inArena(w.values, arena_);
  c.scales = inArena(w.scales, arena_);
  if (!w.offsets.empty()) c.offsets = inArena(w.offsets, arena_);
  return &c;
}

StatusOr<Node> Importer::linear(Node x, const std::string& name, int64_t K, int64_t N, const std::vector<int64_t>& row_of,
                                 Node bias) {
  ASSIGN_OR_RETURN(const Tensor* t, tensor(name, {K, N}));
  const std::string node = name.substr(0, name.rfind('.'));
  if (isBlockQuantType(t->type)) {
    ASSIGN_OR_RETURN(const Converted* c, blocks(*t, row_of));
    QuantAttrs a;
    a.block_size = c->block;
    a.to = c->to;
    a.precision = o_.int8_activations ? DType::kInt8 : DType::kFloat32;
    const Node values = shared(name, c->to == DType::kInt8 ? DType::kInt8 : DType::kUInt8, {N, c->blocks, c->blob}, c->values);
    const Node scales = shared(name + "/scales", DType::kFloat32, {N, c->blocks}, c->scales);
    const Node offsets = c->offsets ? shared(name + "/offsets", DType::kFloat32, {N, c->blocks}, c->offsets) : Node{};
    return b_.op("BlockQuantMatMul", {x, values, scales, offsets, bias}, a, 1, node)[0];
  }
  Converted& c = converted_[name + "/kn"];
  if (!c.floats) {
    ASSIGN_OR_RETURN(std::vector<float> w, floatValues(*t, row_of));
    std::vector<float> kn(w.size());  // [N, K] -> [K, N]
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) kn[size_t(k * N + n)] = w[size_t(n * K + k)];
    c.floats = own(std::move(kn));
  }
  Node y = b_.op("BatchMatMul", {x, constantF(c.floats, {K, N}, name)}, MatMulAttrs{}, 1, node)[0];
  if (bias.id >= 0) y = b_.add(y, bias);
  return y;
}

StatusOr<std::vector<Node>> Importer::linears(Node x, int64_t K, const std::vector<Part>& parts) {
  std::vector<const Tensor*> ts;
  bool same = true;
  for (const Part& p : parts) {
    ASSIGN_OR_RETURN(const Tensor* t, tensor(p.name, {K, p.N}));
    same = same && (ts.empty() || t->type == ts[0]->type) && (p.bias.id >= 0) == (parts[0].bias.id >= 0);
    ts.push_back(t);
  }
  std::vector<Node> out;
  if (!same || parts.size() == 1) {
    for (const Part& p : parts) {
      ASSIGN_OR_RETURN(Node y, linear(x, p.name, K, p.N, p.row_of, p.bias));
      out.push_back(y);
    }
    return out;
  }
  std::string key;
  int64_t total = 0;
  SplitAttrs split{-1, {}};
  for (const Part& p : parts) key += (key.empty() ? "" : "+") + p.name, total += p.N, split.sizes.push_back(p.N);
  const std::string node = key.substr(0, key.find('+')) + "+" + std::to_string(parts.size() - 1);
  Converted& c = converted_[key];
  if (!c.values && !c.floats) {
    if (isBlockQuantType(ts[0]->type)) {
      ASSIGN_OR_RETURN(BlockWeight w, blockLayout(*ts[0], total, arena_));  // rows [N, blocks, blob]: one after another
      int64_t first = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        RETURN_IF_ERROR(convertBlockRows(*ts[i], parts[i].row_of, w, first));
        first += parts[i].N;
      }
      c.block = w.block, c.blocks = w.blocks, c.blob = w.blob, c.to = w.to;
      c.values = inArena(w.values, arena_);
      c.scales = inArena(w.scales, arena_);
      if (!w.offsets.empty()) c.offsets = inArena(w.offsets, arena_);
    } else {
      std::vector<float> kn(size_t(K * total));  // [K, total]
      int64_t col = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        ASSIGN_OR_RETURN(std::vector<float> w, floatValues(*ts[i], parts[i].row_of));
        const int64_t N = parts[i].N;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k) kn[size_t(k * total + col + n)] = w[size_t(n * K + k)];
        col += N;
      }
      c.floats = own(std::move(kn));
    }
  }
  Node y;
  if (c.values) {
    QuantAttrs a;
    a.block_size = c.block;
    a.to = c.to;
    a.precision = o_.int8_activations ? DType::kInt8 : DType::kFloat32;
    const Node values = shared(key, c.to == DType::kInt8 ? DType::kInt8 : DType::kUInt8, {total, c.blocks, c.blob}, c.values);
    const Node scales = shared(key + "/scales", DType::kFloat32, {total, c.blocks}, c.scales);
    const Node offsets = c.offsets ? shared(key + "/offsets", DType::kFloat32, {total, c.blocks}, c.offsets) : Node{};
    y = b_.op("BlockQuantMatMul", {x, values, scales, offsets}, a, 1, node)[0];
  } else {
    y = b_.op("BatchMatMul", {x, shared(key, DType::kFloat32, {K, total}, c.floats)}, MatMulAttrs{}, 1, node)[0];
  }
  if (parts[0].bias.id >= 0) {
    std::vector<Node> bs;
    for (const Part& p : parts) bs.push_back(p.bias);
    y = b_.add(y, b_.op1("Concat", bs, AxisAttrs{0, false}));
  }
  return b_.op("Split", {y}, split, int(parts.size()), node + "/split");
}

StatusOr<Node> Importer::embed(Node ids, const Tensor& table) {
  if (!isBlockQuantType(table.type)) {
    Converted& c = converted_[table.name];
    if (!c.floats) {
      ASSIGN_OR_RETURN(std::vector<float> w, floatValues(table));
      c.floats = own(std::move(w));
    }
    return b_.op("Gather", {constantF(c.floats, {h_.vocab, h_.hidden}, table.name), ids}, AxisAttrs{0, false}, 1, "token_embd")[0];
  }
  // Gathered from the blocks (values one a byte), then widened: q * scale (+ offset).
  ASSIGN_OR_RETURN(const Converted* c, blocks(table, {}, true));
  auto rows = [&](Node t) { return b_.op1("Gather", {t, ids}, AxisAttrs{0, false}); };
  const Node values = shared(table.name, DType::kInt8, {h_.vocab, c->blocks, c->block}, c->values);
  const Node scales = shared(table.name + "/scales", DType::kFloat32, {h_.vocab, c->blocks}, c->scales);
  const Node q = b_.op1("Cast", {rows(values)}, CastAttrs{DType::kFloat32});
  Node x = b_.mul(q, b_.op1("ExpandDims", {rows(scales)}, AxesAttrs{{3}, false}));
  if (c->offsets) {
    const Node offsets = shared(table.name + "/offsets", DType::kFloat32, {h_.vocab, c->blocks}, c->offsets);
    x = b_.add(x, b_.op1("ExpandDims", {rows(offsets)}, AxesAttrs{{3}, false}));
  }
  return reshape(x, {0, 0, h_.hidden});
}

StatusOr<Node> Importer::layer(int64_t l, Node x, Node cos, Node sin, Node causal, Node past_k, Node past_v) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t H = h_.heads, KV = h_.kv_heads, D = h_.head_dim, E = h_.hidden;
  const float eps = float(h_.eps);
  const std::vector<int64_t> q_rows = h_.permuted_qk ? unpermuteRotaryRows(H, D) : std::vector<int64_t>{};
  const std::vector<int64_t> k_rows = h_.permuted_qk ? unpermuteRotaryRows(KV, D) : std::vector<int64_t>{};
  ASSIGN_OR_RETURN(Node attn_norm, vector(p + "attn_norm.weight", E));
  const Node hn = b_.op("RmsNorm", {x, attn_norm}, NormAttrs{-1, eps}, 1, p + "attn_norm")[0];
  Node qb, kb, vb;
  if (h_.qkv_bias) {
    ASSIGN_OR_RETURN(qb, vector(p + "attn_q.bias", H * D, q_rows));
    ASSIGN_OR_RETURN(kb, vector(p + "attn_k.bias", KV * D, k_rows));
    ASSIGN_OR_RETURN(vb, vector(p + "attn_v.bias", KV * D));
  }
  ASSIGN_OR_RETURN(std::vector<Node> qkv, linears(hn, E, {{p + "attn_q.weight", H * D, q_rows, qb},
                                                          {p + "attn_k.weight", KV * D, k_rows, kb},
                                                          {p + "attn_v.weight", KV * D, {}, vb}}));
  Node q = qkv[0], k = qkv[1], v = qkv[2];
  const PermAttrs to_heads{{0, 2, 1, 3}};
  q = b_.op1("Transpose", {b_.op1("Rotary", {reshape(q, {0, 0, H, D}), cos, sin})}, to_heads);
  k = b_.op1("Transpose", {b_.op1("Rotary", {reshape(k, {0, 0, KV, D}), cos, sin})}, to_heads);
  v = b_.op1("Transpose", {reshape(v, {0, 0, KV, D})}, to_heads);
  const Node present_k = b_.op1("Concat", {past_k, k}, AxisAttrs{2, false});
  const Node present_v = b_.op1("Concat", {past_v, v}, AxisAttrs{2, false});
  b_.output(present_k, "present." + std::to_string(l) + ".key");
  b_.output(present_v, "present." + std::to_string(l) + ".value");
  Node keys = present_k, values = present_v;
  if (H != KV) {  // each KV head serves H / KV consecutive query heads
    auto repeat = [&](Node t) {
      const Node tiled = b_.op1("Tile", {b_.op1("ExpandDims", {t}, AxesAttrs{{2}, false})}, TileAttrs{{1, 1, H / KV, 1, 1}});
      return reshape(tiled, {0, H, -1, D});
    };
    keys = repeat(keys);
    values = repeat(values);
  }
  Node scores = b_.op1("BatchMatMul", {q, b_.op1("Transpose", {keys}, PermAttrs{{0, 1, 3, 2}})}, MatMulAttrs{});
  scores = b_.add(b_.mul(scores, 1.0f / std::sqrt(float(D))), causal);
  const Node probs = b_.op1("Softmax", {scores}, AxisAttrs{-1, false});
  const Node attn = b_.op1("BatchMatMul", {probs, values}, MatMulAttrs{});
  const Node merged = reshape(b_.op1("Transpose", {attn}, to_heads), {0, 0, H * D});
  ASSIGN_OR_RETURN(Node o, linear(merged, p + "attn_output.weight", H * D, E));
  x = b_.add(x, o);
  ASSIGN_OR_RETURN(Node ffn_norm, vector(p + "ffn_norm.weight", E));
  const Node h2 = b_.op("RmsNorm", {x, ffn_norm}, NormAttrs{-1, eps}, 1, p + "ffn_norm")[0];
  ASSIGN_OR_RETURN(std::vector<Node> gate_up, linears(h2, E, {{p + "ffn_gate.weight", h_.ffn, {}, {}},
                                                              {p + "ffn_up.weight", h_.ffn, {}, {}}}));
  const Node act = b_.mul(b_.op1("SiLU", {gate_up[0]}), gate_up[1]);
  ASSIGN_OR_RETURN(Node down, linear(act, p + "ffn_down.weight", h_.ffn, E));
  return b_.add(x, down);
}

StatusOr<ir::Graph> Importer::build(int64_t seq, int64_t past_len) {
  b_ = GraphBuilder();
  nodes_.clear();
  const int64_t D = h_.head_dim;
  const Node ids = b_.input("input_ids", DType::kInt64, {1, seq});
  const Node positions = b_.input("position_ids", DType::kInt64, {1, seq});
  std::vector<Node> past;
  for (int64_t l = 0; l < h_.layers; ++l) {
    for (const char* kv : {"key", "value"}) {
      past.push_back(b_.input("past_key_values." + std::to_string(l) + "." + kv, DType::kFloat32, {1, h_.kv_heads, past_len, D}));
    }
  }
  // Rotary angles: position * inv_freq (over the linear scaling factor and llama 3's
  // per-frequency factors, rope_freqs.weight, when the file has them).
  std::vector<float> inv_freq(size_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(1.0 / std::pow(h_.rope_base, double(2 * i) / double(D)) / h_.rope_linear);
  ASSIGN_OR_RETURN(const Tensor* freq_factors, tensor("rope_freqs.weight", {D / 2}, true));
  if (freq_factors) {
    ASSIGN_OR_RETURN(std::vector<float> ff, floatValues(*freq_factors));
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] /= ff[i];
  }
  const Node pos = b_.op1("ExpandDims", {b_.op1("Cast", {positions}, CastAttrs{DType::kFloat32})}, AxesAttrs{{2}, false});
  const Node angles = b_.mul(pos, constantF(inv_freq, {D / 2}));  // [1, S, D/2]
  const Node cos = b_.op1("ExpandDims", {b_.op1("Cos", {angles})}, AxesAttrs{{2}, false});  // [1, S, 1, D/2]
  const Node sin = b_.op1("ExpandDims", {b_.op1("Sin", {angles})}, AxesAttrs{{2}, false});
  // The causal bias [S, P + S]: 0 where key j <= P + i, -inf after.
  const Node S = dimOf(ids, 1), P = dimOf(past[0], 2);
  const Node i = b_.op1("ExpandDims", {b_.op1("DynamicRange", {int64Scalar(0), S, int64Scalar(1)})}, AxesAttrs{{1}, false});
  const Node j = b_.op1("DynamicRange", {int64Scalar(0), b_.add(S, P), int64Scalar(1)});
  const Node allowed = b_.op1("GreaterEqual", {b_.sub(b_.add(i, P), j), int64Scalar(0)});
  const float inf = std::numeric_limits<float>::infinity();
  const Node zero = b_.constant(Shape{}, {0.0f}), minus_inf = b_.constant(Shape{}, {-inf});
  const Node causal = b_.op1("Select", {allowed, zero, minus_inf});

  ASSIGN_OR_RETURN(const Tensor* embd, tensor("token_embd.weight", {h_.hidden, h_.vocab}));
  ASSIGN_OR_RETURN(Node x, embed(ids, *embd));
  for (int64_t l = 0; l < h_.layers; ++l) {
    ASSIGN_OR_RETURN(x, layer(l, x, cos, sin, causal, past[size_t(2 * l)], past[size_t(2 * l + 1)]));
  }
  ASSIGN_OR_RETURN(Node norm, vector("output_norm.weight", h_.hidden));
  x = b_.op("RmsNorm", {x, norm}, NormAttrs{-1, float(h_.eps)}, 1, "output_norm")[0];
  ASSIGN_OR_RETURN(const Tensor* output, tensor("output.weight", {h_.hidden, h_.vocab}, true));
  ASSIGN_OR_RETURN(Node logits, linear(x, output ? "output.weight" : "token_embd.weight", h_.hidden, h_.vocab));
  b_.output(logits, "logits");
  b_.setMetadata("producer", "gkrt convert (GGUF " + h_.arch + ")");
  b_.setMetadata(kGgufMetadataKey, f_.metadataOnly());
  if (const Value* name = f_.find("general.name"); name && name->type == ValueType::kString) b_.setMetadata("name", name->s);
  return b_.finish();
}

}  // namespace

StatusOr<ir::Graph> importGguf(const GgufFile& file, const std::string& what, const ImportOptions& options) {
  auto h = hyperParameters(file);
  if (!h.ok()) return h.status().withContext(what);
  // Built at two trial sizes; the dims that differ are the dynamic ones (trial_graphs.h).
  Importer im(file, *h, options);
  auto a = im.build(2, 3);
  if (!a.ok()) return a.status().withContext(what);
  auto b = im.build(3, 5);
  if (!b.ok()) return b.status().withContext(what);
  auto g = tools::mergeTrialGraphs(std::move(a).value(), *b, "a gkrt bug: please report it with the GGUF file's `gkrt info`");
  if (!g.ok()) return g.status().withContext(what);
  for (int t : g->inputs) {
    ir::Tensor& in = g->tensors[size_t(t)];
    in.shape[0] = 1;
    in.dim_symbols.assign(in.shape.size(), "");
    in.dim_symbols[0] = "batch_size";
    in.dim_symbols[in.shape.size() == 2 ? 1 : 2] = in.shape.size() == 2 ? "sequence_length" : "past_sequence_length";
  }
  return g;
}

StatusOr<ir::Graph> importGguf(const std::string& path, const ImportOptions& options) {
  ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path));
  return importGguf(f, path, options);
}

}  // namespace gkrt::gguf
