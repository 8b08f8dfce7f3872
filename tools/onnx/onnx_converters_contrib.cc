// onnxruntime's own operators (domain com.microsoft) that its model builder and its
// transformer optimizer write, each as the gkrt ops it is made of (onnxruntime's
// ContribOperators.md for the semantics):
//   SkipLayerNormalization / SkipSimplifiedLayerNormalization: (input + skip + bias)
//     normalised (LayerNorm / RmsNorm); the sum as output 3.
//   SimplifiedLayerNormalization: RmsNorm.
//   FastGelu (tanh form, + bias), BiasGelu and Gelu (erf form), QuickGelu
//   (x * sigmoid(alpha x)), BiasAdd (x + bias + skip), FusedMatMul (alpha, transposes of
//   the last two dims).
//   MatMulNBits: 4- or 8-bit block-quantized weights (uint8 zero points or the default
//     2^(bits-1)) kept in their blocks as one BlockQuantMatMul (runtime/ir/ops/
//     block_quant_matmul.h) with the bias; accuracy_level 4 lets it quantize the
//     activations to int8 per block, as onnxruntime does.
//   RotaryEmbedding: as the ONNX op, inputs in onnxruntime's order (position_ids second;
//     a one-element position_ids is the offset of the sequence).
//   GroupQueryAttention: Q/K/V (or packed QKV) split into heads, rotary inside
//     (do_rotary) at positions seqlens_k + 1 - S + i (0 + i for a first prompt), the past
//     concatenated before the new keys (present = past + new: the exact-length past of a
//     plain onnxruntime run, not a shared max-length buffer), causal with each row's
//     seqlens_k + 1 keys, local_window_size, softcap, GQA heads.
//   BiasSplitGelu: (x + bias) split in halves along the last axis, left * GeLU(right).
//   FusedConv: Conv (+ Z) then its activation (Relu, Tanh, Sigmoid, LeakyRelu, Clip,
//     HardSigmoid with activation_params); FusedGemm: Gemm then its activation
//     (activation_alpha/_beta); NhwcConv: Conv on NHWC input and output.
//   EmbedLayerNormalization: word + position (position_ids, or 0..S-1) + segment
//     embeddings, LayerNorm; mask_index the mask's sum per row (int32), the sum as output 2.
// The quantized ones (QLinear*, QGemm, DynamicQuantize*, GatherBlockQuantized) are in
// onnx_converters_contrib_quant.cc.
#include <cmath>
#include <cstring>
#include <map>

#include "tools/onnx/onnx_attention_parts.h"

namespace gkrt::onnx_import {
namespace {

Value addIf(Context& c, const Node& n, Value x, int k) { return c.present(n, k) ? c.op1("Add", {x, c.in(n, k)}) : x; }

// input + skip (+ bias), normalised; outputs (y, mean, inv_std_var, sum) as the op names them.
template <bool kSimplified> Status skipNorm(Context& c, const Node& n, Outs& o) {
  const float eps = attrFloat(n, "epsilon", 1e-12f);
  Value sum = c.op1("Add", {c.in(n, 0), c.in(n, 1)});
  sum = addIf(c, n, sum, kSimplified ? 3 : 4);
  const Value gamma = c.in(n, 2);
  Value y, mean, inv;
  if (kSimplified) {
    y = c.op1("RmsNorm", {sum, gamma}, NormAttrs{-1, eps});
    if (n.output_size() > 2 && !n.output(2).empty()) {
      const Value ms = c.op1("ReduceMean", {c.op1("Mul", {sum, sum})}, AxesAttrs{{-1}, true});
      inv = c.op1("Rsqrt", {c.op1("Add", {ms, scalarLike(c, eps, ms)})});
    }
    mean = inv;
  } else {
    auto outs = c.op("LayerNorm", {sum, gamma, c.present(n, 3) ? c.in(n, 3) : Value{}}, NormAttrs{-1, eps}, 3);
    y = outs[0];
    mean = outs[1];
    inv = c.op1("Rsqrt", {c.op1("Add", {outs[2], scalarLike(c, eps, outs[2])})});
  }
  o = {y, mean, inv, sum};
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

Status simplifiedLayerNorm(Context& c, const Node& n, Outs& o) {
  o = {c.op1("RmsNorm", {c.in(n, 0), c.in(n, 1)}, NormAttrs{attrInt(n, "axis", -1), attrFloat(n, "epsilon", 1e-5f)})};
  return Status::Ok();
}

template <GeluApprox kApprox, bool kBias> Status gelu(Context& c, const Node& n, Outs& o) {
  const Value x = kBias ? c.op1("Add", {c.in(n, 0), c.in(n, 1)}) : addIf(c, n, c.in(n, 0), 1);
  o = {c.op1("GeLU", {x}, GeluAttrs{kApprox})};
  return Status::Ok();
}

Status quickGelu(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Value s = c.op1("Sigmoid", {c.op1("Mul", {x, scalarLike(c, attrFloat(n, "alpha", 1.702f), x)})});
  o = {c.op1("Mul", {x, s})};
  return Status::Ok();
}

Status biasAdd(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Add", {c.op1("Add", {c.in(n, 0), c.in(n, 1)}), c.in(n, 2)})};
  return Status::Ok();
}

Status fusedMatMul(Context& c, const Node& n, Outs& o) {
  if (attrInt(n, "transBatchA", 0) || attrInt(n, "transBatchB", 0)) {
    return unsupported(n, "transBatchA/transBatchB are not supported");
  }
  auto lastTwoSwapped = [&](Value x) {
    const int64_t r = static_cast<int64_t>(shapeOf(c, x).size());
    Ints perm;
    for (int64_t d = 0; d < r; ++d) perm.push_back(d);
    if (r >= 2) std::swap(perm[r - 1], perm[r - 2]);
    return c.op1("Transpose", {x}, PermAttrs{perm});
  };
  Value a = c.in(n, 0), b = c.in(n, 1);
  if (shapeOf(c, a).size() < 2 || shapeOf(c, b).size() < 2) return unsupported(n, "operands must have rank 2 or more");
  if (attrInt(n, "transA", 0)) a = lastTwoSwapped(a);
  if (attrInt(n, "transB", 0)) b = lastTwoSwapped(b);
  const bool batched = shapeOf(c, a).size() > 2 || shapeOf(c, b).size() > 2;
  Value y = c.op1(batched ? "BatchMatMul" : "MatMul", {a, b}, MatMulAttrs{});
  const float alpha = attrFloat(n, "alpha", 1.0f);
  if (alpha != 1.0f) y = c.op1("Mul", {y, scalarLike(c, alpha, y)});
  o = {y};
  return Status::Ok();
}

Status matMulNBits(Context& c, const Node& n, Outs& o) {
  const int64_t K = attrInt(n, "K", 0), N = attrInt(n, "N", 0), bits = attrInt(n, "bits", 4);
  const int64_t block = attrInt(n, "block_size", 0);
  if (K <= 0 || N <= 0 || (bits != 4 && bits != 8) || block < 16 || (block & (block - 1)) != 0) {
    return unsupported(n, "needs K, N > 0, bits 4 or 8 and a power-of-two block_size >= 16");
  }
  if (c.present(n, 4)) return unsupported(n, "g_idx (act-order) is not supported");
  ASSIGN_OR_RETURN(HostTensor q, c.constant(c.in(n, 1), "MatMulNBits B"));
  ASSIGN_OR_RETURN(HostTensor scales, c.constant(c.in(n, 2), "MatMulNBits scales"));
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  if (q.dtype() != DType::kUInt8 || numElements(q.shape()) != N * blocks * blob) {
    return unsupported(n, "B must be uint8 [N, blocks, blob] = [" + std::to_string(N) + ", " + std::to_string(blocks) + ", " +
                              std::to_string(blob) + "], got " + shapeToString(q.shape()));
  }
  if (numElements(scales.shape()) != N * blocks) return unsupported(n, "scales must hold N * blocks values");
  const std::vector<float> s = scales.toFloats();
  std::vector<int> zp;
  if (c.present(n, 3)) {
    ASSIGN_OR_RETURN(HostTensor z, c.constant(c.in(n, 3), "MatMulNBits zero_points"));
    if (z.dtype() != DType::kUInt8) return unsupported(n, "float zero points are not supported (only uint8)");
    const int64_t row = bits == 4 ? (blocks + 1) / 2 : blocks;  // bytes of one column's zero points
    if (numElements(z.shape()) != N * row) return unsupported(n, "zero_points must hold N * " + std::to_string(row) + " bytes");
    const uint8_t* zb = z.as<uint8_t>();
    zp.resize(size_t(N * blocks));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t b = 0; b < blocks; ++b)
        zp[size_t(j * blocks + b)] = bits == 8 ? zb[j * row + b] : (zb[j * row + b / 2] >> (4 * (b % 2))) & 15;
  }
  // Kept in blocks: weight = (q - zp) * scale. 4 bits with the default zero point 8 are
  // int4 values (q - 8: the nibbles' top bit flipped); other zero points become offsets
  // -zp * scale. 8 bits are stored as int8 (q - 128), offsets (128 - zp) * scale.
  QuantAttrs attrs;
  attrs.block_size = block;
  attrs.precision = attrInt(n, "accuracy_level", 0) == 4 ? DType::kInt8 : DType::kFloat32;
  HostTensor w(bits == 4 ? DType::kUInt8 : DType::kInt8, {N, blocks, blob});
  std::memcpy(w.data(), q.data(), size_t(N * blocks * blob));
  uint8_t* wb = static_cast<uint8_t*>(w.data());
  Value offsets;
  if (bits == 4 && zp.empty()) {
    attrs.to = DType::kInt4;
    for (int64_t i = 0; i < N * blocks * blob; ++i) wb[i] ^= 0x88;
  } else {
    attrs.to = bits == 4 ? DType::kUInt4 : DType::kInt8;
    if (bits == 8) for (int64_t i = 0; i < N * blocks * blob; ++i) wb[i] ^= 0x80;  // q - 128 as int8
    if (!zp.empty()) {
      HostTensor off(DType::kFloat32, {N, blocks});
      for (int64_t i = 0; i < N * blocks; ++i) off.as<float>()[i] = -float(zp[size_t(i)] - (bits == 8 ? 128 : 0)) * s[size_t(i)];
      offsets = c.constant(off);
    }
  }
  HostTensor sc(DType::kFloat32, {N, blocks});
  std::copy(s.begin(), s.end(), sc.as<float>());
  const Value bias = c.present(n, 5) ? c.in(n, 5) : Value{};
  o = {c.op1("BlockQuantMatMul", {c.in(n, 0), c.constant(w), c.constant(sc), offsets, bias}, attrs)};
  return Status::Ok();
}

// [B, S] positions from position_ids ([B, S], or one offset) for x [B, S, ...].
Value positionsOf(Context& c, Value ids, Value x) {
  if (numElements(shapeOf(c, ids)) == 1 && !c.isDynamic(ids)) {  // offset + 0 .. S-1
    const Value range = c.op1("DynamicRange", {scalarI64(c, 0), dimOf(c, x, 1), scalarI64(c, 1)});
    return c.op1("ExpandDims", {c.op1("Add", {range, reshapeKeeping(c, c.op1("Cast", {ids}, CastAttrs{DType::kInt64}), {})})},
                 AxesAttrs{{0}, false});
  }
  return c.op1("Cast", {ids}, CastAttrs{DType::kInt64});
}

Status ortRotaryEmbedding(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  int64_t heads = attrInt(n, "num_heads", 0);
  if (xs.size() == 3 && heads <= 0 && xs[2] > 0) {  // the op's default: heads of the rotary dim (or the cache's)
    const int64_t rotary = attrInt(n, "rotary_embedding_dim", 0);
    heads = xs[2] / (rotary > 0 ? rotary : 2 * shapeOf(c, c.in(n, 2)).back());
  }
  ASSIGN_OR_RETURN(Value v, rotaryHeads(c, n, x, heads));
  const Value pos = positionsOf(c, c.in(n, 1), xs.size() == 4 ? v : x);
  const Value cos = c.op1("Gather", {c.in(n, 2), pos}, AxisAttrs{0, false});
  const Value sin = c.op1("Gather", {c.in(n, 3), pos}, AxisAttrs{0, false});
  ASSIGN_OR_RETURN(Value y, applyRotary(c, n, v, cos, sin, attrInt(n, "rotary_embedding_dim", 0), attrInt(n, "interleaved", 0) != 0));
  o = {rotaryBack(c, x, y)};
  return Status::Ok();
}

Status groupQueryAttention(Context& c, const Node& n, Outs& o) {
  if (attrInt(n, "smooth_softmax", 0)) return unsupported(n, "smooth_softmax is not supported");
  for (int k : {9, 10, 11}) {
    if (c.present(n, k)) return unsupported(n, "input " + std::to_string(k) + " (position_ids / attention_bias / head_sink) is not supported");
  }
  AttentionArgs a;
  a.q_heads = attrInt(n, "num_heads", 0);
  a.kv_heads = attrInt(n, "kv_num_heads", 0);
  const Value query = c.in(n, 0);
  const Shape qs = shapeOf(c, query);
  if (a.q_heads <= 0 || a.kv_heads <= 0 || qs.size() != 3 || qs[2] < 0) {
    return unsupported(n, "needs num_heads, kv_num_heads and a 3-D query with a static hidden size");
  }
  Value q = query, k, v;
  int64_t head;
  if (!c.present(n, 1)) {  // packed QKV: [B, S, (heads + 2 kv_heads) * head]
    head = qs[2] / (a.q_heads + 2 * a.kv_heads);
    const int64_t qw = a.q_heads * head, kw = a.kv_heads * head;
    q = sliceLast(c, query, 0, qw);
    k = sliceLast(c, query, qw, qw + kw);
    v = sliceLast(c, query, qw + kw, qw + 2 * kw);
  } else {
    head = qs[2] / a.q_heads;
    k = c.in(n, 1);
    v = c.in(n, 2);
  }
  const Value seqlens = c.op1("Cast", {c.in(n, 5)}, CastAttrs{DType::kInt64});  // [B]: total keys of the row - 1
  const Value valid = c.op1("Add", {seqlens, scalarI64(c, 1)});
  Value qh = reshapeKeeping(c, q, {0, 0, a.q_heads, head}), kh = reshapeKeeping(c, k, {0, 0, a.kv_heads, head});
  if (attrInt(n, "do_rotary", 0)) {
    // positions valid - S + i, from 0 for a first prompt shorter than its padded rows
    const Value S = dimOf(c, query, 1);
    const Value start = c.op1("Maximum", {c.op1("Sub", {valid, S}), scalarI64(c, 0)});
    const Value i = c.op1("DynamicRange", {scalarI64(c, 0), S, scalarI64(c, 1)});
    const Value pos = c.op1("Add", {reshapeKeeping(c, start, {-1, 1}), i});  // [B, S]
    const Value cos = c.op1("Gather", {c.in(n, 7), pos}, AxisAttrs{0, false});
    const Value sin = c.op1("Gather", {c.in(n, 8), pos}, AxisAttrs{0, false});
    const bool interleaved = attrInt(n, "rotary_interleaved", 0) != 0;
    const int64_t rotary = 2 * shapeOf(c, c.in(n, 7)).back();
    ASSIGN_OR_RETURN(qh, applyRotary(c, n, qh, cos, sin, rotary, interleaved));
    ASSIGN_OR_RETURN(kh, applyRotary(c, n, kh, cos, sin, rotary, interleaved));
  }
  a.q = c.op1("Transpose", {qh}, PermAttrs{{0, 2, 1, 3}});
  a.k = c.op1("Transpose", {kh}, PermAttrs{{0, 2, 1, 3}});
  a.v = splitHeads(c, v, a.kv_heads);
  a.past = c.present(n, 3) && c.present(n, 4);
  if (a.past) a.past_k = c.in(n, 3), a.past_v = c.in(n, 4);
  a.has_valid = true;
  a.valid = valid;
  a.causal = true;
  a.scale = attrFloat(n, "scale", 0.0f);
  a.softcap = attrFloat(n, "softcap", 0.0f);
  const int64_t window = attrInt(n, "local_window_size", -1);
  if (window >= 0) a.left = window - 1;  // the query's own position and window - 1 before it
  ASSIGN_OR_RETURN(AttentionValues r, buildAttention(c, n, a));
  o = {reshapeKeeping(c, c.op1("Transpose", {r.y}, PermAttrs{{0, 2, 1, 3}}), {0, 0, -1}), r.present_k, r.present_v};
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

Status biasSplitGelu(Context& c, const Node& n, Outs& o) {
  const Value x = c.op1("Add", {c.in(n, 0), c.in(n, 1)});
  const Shape s = shapeOf(c, x);
  if (s.empty() || s.back() <= 0 || s.back() % 2) return unsupported(n, "the last dim must be known and even");
  const int64_t half = s.back() / 2;
  o = {c.op1("Mul", {sliceLast(c, x, 0, half), c.op1("GeLU", {sliceLast(c, x, half, 2 * half)}, GeluAttrs{GeluApprox::kNone})})};
  return Status::Ok();
}

// An ONNX activation node for FusedConv's and FusedGemm's `activation` with its
// parameters (FusedConv: activation_params; FusedGemm: activation_alpha, _beta).
StatusOr<Value> fusedActivation(Context& c, const Node& n, Value y) {
  const std::string act = attrString(n, "activation", "");
  if (act.empty()) return y;
  std::vector<float> p;
  if (const auto* a = findAttr(n, "activation_params")) p.assign(a->floats().begin(), a->floats().end());
  if (findAttr(n, "activation_alpha")) p.push_back(attrFloat(n, "activation_alpha", 0));
  if (findAttr(n, "activation_beta")) p.push_back(attrFloat(n, "activation_beta", 0));
  Node m;
  m.set_name(n.name());
  auto param = [&](const char* name, size_t k) {
    if (k >= p.size()) return;
    auto* a = m.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(p[k]);
  };
  std::vector<Value> ins = {y};
  if (act == "LeakyRelu") {
    param("alpha", 0);
  } else if (act == "HardSigmoid") {
    param("alpha", 0), param("beta", 1);
  } else if (act == "Clip") {
    if (p.size() != 2) return unsupported(n, "Clip takes activation_params [min, max]");
    ins = {y, scalarLike(c, p[0], y), scalarLike(c, p[1], y)};
  } else if (act != "Relu" && act != "Tanh" && act != "Sigmoid") {
    return unsupported(n, "activation '" + act + "' (takes Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid)");
  }
  ASSIGN_OR_RETURN(Outs r, convertAs(c, m, act, ins, 1, {}));
  return r[0];
}

Status fusedConv(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, "Conv", {c.in(n, 0), c.in(n, 1), c.in(n, 2)}, 1, {"activation", "activation_params"}));
  Value v = c.present(n, 3) ? c.op1("Add", {y[0], c.in(n, 3)}) : y[0];
  ASSIGN_OR_RETURN(v, fusedActivation(c, n, v));
  o = {v};
  return Status::Ok();
}

Status fusedGemm(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins = {c.in(n, 0), c.in(n, 1)};
  if (c.present(n, 2)) ins.push_back(c.in(n, 2));
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, "Gemm", ins, 1,
                                     {"activation", "activation_alpha", "activation_beta", "activation_gamma"}));
  ASSIGN_OR_RETURN(Value v, fusedActivation(c, n, y[0]));
  o = {v};
  return Status::Ok();
}

Status nhwcConv(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, "Conv", {channelsFirst(c, c.in(n, 0)), c.in(n, 1), c.in(n, 2)}, 1, {}));
  o = {channelsLast(c, y[0])};
  return Status::Ok();
}

Status embedLayerNorm(Context& c, const Node& n, Outs& o) {
  const Value ids = c.in(n, 0);
  ASSIGN_OR_RETURN(Outs word, convertAs(c, Node(), "Gather", {c.in(n, 2), ids}, 1, {}));
  Value positions = c.in(n, 8);
  if (!c.present(n, 8)) {  // 0 .. S-1
    ASSIGN_OR_RETURN(Outs range, convertAs(c, Node(), "Range", {scalarI64(c, 0), dimOf(c, ids, 1), scalarI64(c, 1)}, 1, {}));
    positions = range[0];
  }
  ASSIGN_OR_RETURN(Outs pos, convertAs(c, Node(), "Gather", {c.in(n, 3), positions}, 1, {}));
  Value sum = c.op1("Add", {word[0], pos[0]});
  if (c.present(n, 1) && c.present(n, 4)) {
    ASSIGN_OR_RETURN(Outs seg, convertAs(c, Node(), "Gather", {c.in(n, 4), c.in(n, 1)}, 1, {}));
    sum = c.op1("Add", {sum, seg[0]});
  }
  auto ln = c.op("LayerNorm", {sum, c.in(n, 5), c.in(n, 6)}, NormAttrs{-1, attrFloat(n, "epsilon", 1e-12f)}, 3);
  Value mask_index;
  if (c.present(n, 7)) {
    mask_index = c.op1("ReduceSum", {c.op1("Cast", {c.in(n, 7)}, CastAttrs{DType::kInt32})}, AxesAttrs{{1}, false});
  } else {  // no mask: zeros, one per row
    mask_index = c.op1("Mul", {c.op1("ReduceSum", {c.op1("Cast", {ids}, CastAttrs{DType::kInt32})}, AxesAttrs{{1}, false}),
                               c.constant(HostTensor(DType::kInt32, {}))});
  }
  o = {ln[0], mask_index, sum};
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

}  // namespace

void registerContribConverters(std::map<std::string, Converter>& t) {
  const std::string ms = "com.microsoft.";
  t[ms + "SkipLayerNormalization"] = skipNorm<false>;
  t[ms + "SkipSimplifiedLayerNormalization"] = skipNorm<true>;
  t[ms + "SimplifiedLayerNormalization"] = simplifiedLayerNorm;
  t[ms + "FastGelu"] = gelu<GeluApprox::kTanh, false>;
  t[ms + "BiasGelu"] = gelu<GeluApprox::kNone, true>;
  t[ms + "Gelu"] = gelu<GeluApprox::kNone, false>;
  t[ms + "QuickGelu"] = quickGelu;
  t[ms + "BiasAdd"] = biasAdd;
  t[ms + "FusedMatMul"] = fusedMatMul;
  t[ms + "MatMulNBits"] = matMulNBits;
  t[ms + "RotaryEmbedding"] = ortRotaryEmbedding;
  t[ms + "GroupQueryAttention"] = groupQueryAttention;
  t[ms + "BiasSplitGelu"] = biasSplitGelu;
  t[ms + "FusedConv"] = fusedConv;
  t[ms + "FusedGemm"] = fusedGemm;
  t[ms + "NhwcConv"] = nhwcConv;
  t[ms + "EmbedLayerNormalization"] = embedLayerNorm;
  registerContribQuantConverters(t);
  registerContribAttentionConverters(t);
}

}  // namespace gkrt::onnx_import
