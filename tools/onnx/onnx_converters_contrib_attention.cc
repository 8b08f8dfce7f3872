// onnxruntime's attention operators (domain com.microsoft), as its transformer optimizer
// and quantizer write them, onto the one attention form the fusion passes know
// (onnx_attention_parts.h: FlashAttention where the pattern pass takes it):
//   Attention: x @ weights (+ bias) split into Q, K, V (qkv_hidden_sizes, or thirds);
//     mask_index as right-padding lengths [B], a raw 0/1 mask [B, T] or [B, S, T]
//     (masked keys get mask_filter_value added, as onnxruntime does), attention_bias
//     added, unidirectional = causal, past [2, B, heads, P, head] before the new keys and
//     present stacked the same way.
//   QAttention: the same over dequantized input and weight (per-tensor or per-column).
//   MultiHeadAttention: Q, K, V as [B, S, hidden] (bias added), K/V already split
//     [B, heads, T, head], packed QKV [B, S, heads, 3, head] or packed KV
//     [B, T, heads, 2, head]; key_padding_mask as lengths [B] or a raw mask [B, T];
//     attention_bias; past_key/past_value; unidirectional.
#include <map>

#include "tools/onnx/onnx_attention_parts.h"

namespace gkrt::onnx_import {
namespace {

// An additive float mask [B, 1, 1|S, T] from a raw 0/1 mask [B, T] or [B, S, T]:
// 0 where it attends, mask_filter_value where it does not.
Value rawMaskBias(Context& c, const Node& n, Value mask, Value like) {
  const Value m = c.op1("Cast", {mask}, CastAttrs{dtypeOf(c, like)});
  const Value off = c.op1("Sub", {scalarLike(c, 1.0f, m), m});
  const Value bias = c.op1("Mul", {off, scalarLike(c, attrFloat(n, "mask_filter_value", -10000.0f), m)});
  return c.op1("Unsqueeze", {bias}, AxesAttrs{shapeOf(c, mask).size() == 2 ? Ints{1, 2} : Ints{1}, true});
}

// A padding mask: lengths [B] (keys at or past the length are padding) or raw [B, T] /
// [B, S, T]; with attention_bias (input `bias_k`) added.
Status setMask(Context& c, const Node& n, AttentionArgs& a, int mask_k, int bias_k, Value like) {
  Value additive;
  if (mask_k >= 0 && c.present(n, mask_k)) {
    const Value m = c.in(n, mask_k);
    const size_t r = shapeOf(c, m).size();
    if (r == 1) {
      const Shape ms = shapeOf(c, m), qs = shapeOf(c, a.q);
      if (ms[0] >= 0 && qs[0] >= 0 && ms[0] != qs[0]) {
        return unsupported(n, "a 1-D mask must hold one length per batch row ([2B] end/start positions are not supported)");
      }
      if (a.causal) return unsupported(n, "unidirectional with a lengths mask");
      a.has_valid = true;
      a.valid = c.op1("Cast", {m}, CastAttrs{DType::kInt64});
    } else if (r == 2 || r == 3) {
      additive = rawMaskBias(c, n, m, like);
    } else {
      return unsupported(n, "mask of rank " + std::to_string(r) + " (takes [B], [B, T] or [B, S, T])");
    }
  }
  if (bias_k >= 0 && c.present(n, bias_k)) additive = additive.id >= 0 ? c.op1("Add", {additive, c.in(n, bias_k)}) : c.in(n, bias_k);
  if (additive.id >= 0) {
    a.has_mask = true;
    a.mask = additive;
  }
  return Status::Ok();
}

Value mergeHeads(Context& c, Value y) {  // [B, heads, S, head] -> [B, S, heads * head]
  return reshapeKeeping(c, c.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3}}), {0, 0, -1});
}

// Attention and QAttention after their input and weights are float.
Status attentionFrom(Context& c, const Node& n, Outs& o, Value x, Value w, Value bias, int mask_k, int past_k, int bias_k) {
  if (attrInt(n, "do_rotary", 0)) return unsupported(n, "do_rotary");
  if (attrInt(n, "past_present_share_buffer", 0)) return unsupported(n, "past_present_share_buffer");
  const int64_t heads = attrInt(n, "num_heads", 0);
  const Shape ws = shapeOf(c, w);
  if (heads <= 0 || ws.size() != 2 || ws[1] <= 0) return unsupported(n, "needs num_heads and 2-D weights");
  Ints sizes = attrInts(n, "qkv_hidden_sizes");
  if (sizes.empty()) sizes = {ws[1] / 3, ws[1] / 3, ws[1] / 3};
  if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != ws[1] || sizes[0] % heads || sizes[2] % heads) {
    return unsupported(n, "qkv_hidden_sizes must split the weights' columns into Q, K, V divisible by num_heads");
  }
  ASSIGN_OR_RETURN(Outs projected, convertAs(c, Node(), "MatMul", {x, w}, 1, {}));
  Value qkv = projected[0];
  if (bias.id >= 0) qkv = c.op1("Add", {qkv, bias});
  AttentionArgs a;
  a.q = splitHeads(c, sliceLast(c, qkv, 0, sizes[0]), heads);
  a.k = splitHeads(c, sliceLast(c, qkv, sizes[0], sizes[0] + sizes[1]), heads);
  a.v = splitHeads(c, sliceLast(c, qkv, sizes[0] + sizes[1], ws[1]), heads);
  a.q_heads = a.kv_heads = heads;
  a.scale = attrFloat(n, "scale", 0.0f);
  a.causal = attrInt(n, "unidirectional", 0) != 0;
  if (past_k >= 0 && c.present(n, past_k)) {  // [2, B, heads, P, head]
    const Value past = c.in(n, past_k);
    a.past = true;
    a.past_k = c.op1("Squeeze", {c.op1("StridedSlice", {past}, StridedSliceAttrs{{0}, {1}, {0}, {1}})}, AxesAttrs{{0}, false});
    a.past_v = c.op1("Squeeze", {c.op1("StridedSlice", {past}, StridedSliceAttrs{{1}, {2}, {0}, {1}})}, AxesAttrs{{0}, false});
  }
  RETURN_IF_ERROR(setMask(c, n, a, mask_k, bias_k, x));
  ASSIGN_OR_RETURN(AttentionValues r, buildAttention(c, n, a));
  Value present;
  if (n.output_size() > 1 && !n.output(1).empty()) {
    present = c.op1("Concat", {c.op1("Unsqueeze", {r.present_k}, AxesAttrs{{0}, true}),
                               c.op1("Unsqueeze", {r.present_v}, AxesAttrs{{0}, true})}, AxisAttrs{0, false});
  }
  o = {mergeHeads(c, r.y), present};
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

Status msAttention(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 6)) return unsupported(n, "past_sequence_length (past_present_share_buffer)");
  return attentionFrom(c, n, o, c.in(n, 0), c.in(n, 1), c.in(n, 2), 3, 4, 5);
}

Status qAttention(Context& c, const Node& n, Outs& o) {
  auto deq = [&](Value v, Value scale, int zp_k, int64_t axis) {
    QuantAttrs q;
    q.axis = axis;
    q.to = dtypeOf(c, scale);
    std::vector<Value> ins = {v, scale};
    if (c.present(n, zp_k)) ins.push_back(c.in(n, zp_k));
    return c.op1("DequantizeLinear", ins, q);
  };
  const Value x = deq(c.in(n, 0), c.in(n, 3), 6, 1);
  const Value w = deq(c.in(n, 1), c.in(n, 4), 7, 1);  // per tensor, or per column (axis 1 of [H, 3H])
  return attentionFrom(c, n, o, x, w, c.in(n, 2), 5, 8, -1);
}

// [B, L, heads, n, head] -> part p as [B, heads, L, head].
Value packedPart(Context& c, Value x, int64_t p) {
  const Value part = c.op1("Squeeze", {c.op1("StridedSlice", {x}, StridedSliceAttrs{{p}, {p + 1}, {3}, {1}})}, AxesAttrs{{3}, false});
  return c.op1("Transpose", {part}, PermAttrs{{0, 2, 1, 3}});
}

Status multiHeadAttention(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 8) || c.present(n, 9)) return unsupported(n, "past_sequence_length / cache_indirection (beam search buffers)");
  const int64_t heads = attrInt(n, "num_heads", 0);
  if (heads <= 0) return unsupported(n, "needs num_heads");
  Value q = c.in(n, 0), k = c.in(n, 1), v = c.in(n, 2);
  const size_t qr = shapeOf(c, q).size();
  AttentionArgs a;
  if (qr == 5) {  // packed QKV [B, S, heads, 3, head]
    if (c.present(n, 1) || c.present(n, 3)) return unsupported(n, "packed QKV takes no key, value or bias");
    a.q = packedPart(c, q, 0), a.k = packedPart(c, q, 1), a.v = packedPart(c, q, 2);
  } else if (qr == 3 && c.present(n, 1) && shapeOf(c, k).size() == 5) {  // packed KV [B, T, heads, 2, head]
    if (c.present(n, 3)) return unsupported(n, "packed KV with a bias");
    a.q = splitHeads(c, q, heads), a.k = packedPart(c, k, 0), a.v = packedPart(c, k, 1);
  } else if (qr == 3 && c.present(n, 1) && c.present(n, 2)) {
    if (c.present(n, 3)) {  // bias [Dq + Dk + Dv]
      const int64_t dq = shapeOf(c, q)[2], dk = shapeOf(c, k).back(), dv = shapeOf(c, v).back();
      const Value b = c.in(n, 3);
      if (dq < 0 || dk < 0 || dv < 0) return unsupported(n, "a bias needs static hidden sizes");
      q = c.op1("Add", {q, sliceLast(c, b, 0, dq)});
      if (shapeOf(c, k).size() == 3) k = c.op1("Add", {k, sliceLast(c, b, dq, dq + dk)});
      if (shapeOf(c, v).size() == 3) v = c.op1("Add", {v, sliceLast(c, b, dq + dk, dq + dk + dv)});
    }
    a.q = splitHeads(c, q, heads);
    a.k = shapeOf(c, k).size() == 4 ? k : splitHeads(c, k, heads);  // 4-D: already [B, heads, T, head]
    a.v = shapeOf(c, v).size() == 4 ? v : splitHeads(c, v, heads);
  } else {
    return unsupported(n, "query " + shapeToString(shapeOf(c, q)) + " with this key/value form");
  }
  a.q_heads = a.kv_heads = heads;
  a.scale = attrFloat(n, "scale", 0.0f);
  a.causal = attrInt(n, "unidirectional", 0) != 0;
  if (c.present(n, 6) && c.present(n, 7)) {
    a.past = true;
    a.past_k = c.in(n, 6), a.past_v = c.in(n, 7);
  }
  RETURN_IF_ERROR(setMask(c, n, a, 4, 5, a.q));
  ASSIGN_OR_RETURN(AttentionValues r, buildAttention(c, n, a));
  o = {mergeHeads(c, r.y), r.present_k, r.present_v, r.qk};
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

}  // namespace

void registerContribAttentionConverters(std::map<std::string, Converter>& t) {
  const std::string ms = "com.microsoft.";
  t[ms + "Attention"] = msAttention;
  t[ms + "QAttention"] = qAttention;
  t[ms + "MultiHeadAttention"] = multiHeadAttention;
}

}  // namespace gkrt::onnx_import
