// ONNX opset 23 Attention and RotaryEmbedding, written as the ops a decoder exported
// with standard ops already has (MatMul, scale, mask, Softmax, MatMul; Slice, Mul,
// Concat), so the fusion passes see one form of attention whatever the exporter wrote.
// Sequence and past lengths may be dynamic: masks and reshapes take them from Shape.
//
// Attention: 3-D Q/K/V with q_num_heads/kv_num_heads or 4-D [B, heads, S, head]; an
// optional bool or float attn_mask (broadcast over [B, heads, S, T]); past_key/past_value
// concatenated before the new keys (outputs present_key/present_value); is_causal with
// the past as offset (a query at position i sees keys j <= i + past); grouped-query heads
// (each KV head serves q_num_heads / kv_num_heads query heads); scale (default
// 1/sqrt(head)); softcap; left/right_window_size; nonpad_kv_seqlen (an external cache
// padded per batch); the qk_matmul_output output in its four modes. Where a mask can
// leave a row with no key (a mask input, a window, padding), the row's weights are 0 as
// the spec has it, not 0/0.
//
// RotaryEmbedding: 3-D [B, S, hidden] with num_heads or 4-D [B, heads, S, head];
// cos/sin caches indexed by position_ids ([max_pos, rotary/2]) or given per position
// ([B, S, rotary/2]); the rotate-half and interleaved forms; rotary_embedding_dim below
// the head size leaves the rest as it is.
#include <cmath>
#include <limits>
#include <map>

#include "tools/onnx/onnx_attention_parts.h"

namespace gkrt::onnx_import {

Value scalarI64(Context& c, int64_t v) {
  HostTensor t(DType::kInt64, {});
  t.as<int64_t>()[0] = v;
  return c.constant(t);
}

// Reshape with ONNX's 0 (keep the input's dim), also for dims known only at run time.
Value reshapeKeeping(Context& c, Value x, Ints shape) {
  if (c.isDynamic(x) && std::count(shape.begin(), shape.end(), 0)) return c.op1("DynamicReshape", {x, c.ints(shape)});
  const Shape xs = shapeOf(c, x);
  for (size_t d = 0; d < shape.size(); ++d) if (shape[d] == 0 && d < xs.size()) shape[d] = xs[d];
  return c.op1("Reshape", {x}, ShapeAttrs{shape});
}

// x's dim `axis` as an int64 scalar (a graph value when it is known only at run time).
Value dimOf(Context& c, Value x, int64_t axis) {
  if (!c.isDynamic(x)) return scalarI64(c, shapeOf(c, x)[axis]);
  const Value d = c.op1("StridedSlice", {c.op1("Shape", {x})}, StridedSliceAttrs{{axis}, {axis + 1}, {0}, {1}});
  return c.op1("Reshape", {d}, ShapeAttrs{{}});
}

Value sliceLast(Context& c, Value x, int64_t begin, int64_t end) {
  const int64_t last = static_cast<int64_t>(shapeOf(c, x).size()) - 1;
  return c.op1("StridedSlice", {x}, StridedSliceAttrs{{begin}, {end}, {last}, {1}});
}

StatusOr<Value> rotaryHeads(Context& c, const Node& n, Value x, int64_t heads) {
  const Shape xs = shapeOf(c, x);
  if (xs.size() == 4) return c.op1("Transpose", {x}, PermAttrs{{0, 2, 1, 3}});
  if (xs.size() != 3) return unsupported(n, "input must be 3-D or 4-D, got " + shapeToString(xs));
  if (heads <= 0 || xs[2] < 0 || xs[2] % heads != 0) {
    return unsupported(n, "a 3-D input needs num_heads dividing its static hidden size, got num_heads " +
                              std::to_string(heads) + " for " + shapeToString(xs));
  }
  return reshapeKeeping(c, x, {0, 0, heads, xs[2] / heads});
}

Value rotaryBack(Context& c, Value x, Value y) {
  const Shape xs = shapeOf(c, x);
  return xs.size() == 4 ? c.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3}}) : reshapeKeeping(c, y, {0, 0, xs[2]});
}

StatusOr<Value> applyRotary(Context& c, const Node& n, Value v, Value cos, Value sin, int64_t rotary, bool interleaved) {
  const int64_t head = shapeOf(c, v).size() == 4 ? shapeOf(c, v)[3] : -1;
  if (rotary == 0) rotary = head;
  if (head < 0 || rotary <= 0 || rotary > head || rotary % 2 != 0) {
    return unsupported(n, "rotary_embedding_dim " + std::to_string(rotary) + " must be even and at most the head size " +
                              std::to_string(head));
  }
  const int64_t half = rotary / 2;
  if (shapeOf(c, cos).size() != 3 || shapeOf(c, cos).back() != half) {
    return unsupported(n, "the cos/sin caches must give [batch, sequence, " + std::to_string(half) + "], got " +
                              shapeToString(shapeOf(c, cos)));
  }
  cos = c.op1("ExpandDims", {cos}, AxesAttrs{{2}, false});  // [B, S, 1, half]: one angle for every head
  sin = c.op1("ExpandDims", {sin}, AxesAttrs{{2}, false});
  const Value rot = rotary < head ? sliceLast(c, v, 0, rotary) : v;
  Value x1, x2;
  if (interleaved) {  // pairs (0, 1), (2, 3), ...
    const Value pairs = reshapeKeeping(c, rot, {0, 0, 0, half, 2});
    x1 = reshapeKeeping(c, sliceLast(c, pairs, 0, 1), {0, 0, 0, half});
    x2 = reshapeKeeping(c, sliceLast(c, pairs, 1, 2), {0, 0, 0, half});
  } else {  // halves
    x1 = sliceLast(c, rot, 0, half);
    x2 = sliceLast(c, rot, half, rotary);
  }
  const Value real = c.op1("Sub", {c.op1("Mul", {cos, x1}), c.op1("Mul", {sin, x2})});
  const Value imag = c.op1("Add", {c.op1("Mul", {sin, x1}), c.op1("Mul", {cos, x2})});
  Value y;
  if (interleaved) {
    const Value both = c.op1("Concat", {c.op1("ExpandDims", {real}, AxesAttrs{{4}, false}),
                                        c.op1("ExpandDims", {imag}, AxesAttrs{{4}, false})}, AxisAttrs{4, false});
    y = reshapeKeeping(c, both, {0, 0, 0, rotary});
  } else {
    y = c.op1("Concat", {real, imag}, AxisAttrs{3, false});
  }
  if (rotary < head) y = c.op1("Concat", {y, sliceLast(c, v, rotary, head)}, AxisAttrs{3, false});
  return y;
}

// [B, S, heads * head] -> [B, heads, S, head]
Value splitHeads(Context& c, Value x, int64_t heads) {
  return c.op1("Transpose", {reshapeKeeping(c, x, {0, 0, heads, -1})}, PermAttrs{{0, 2, 1, 3}});
}

StatusOr<AttentionValues> buildAttention(Context& c, const Node& n, const AttentionArgs& a) {
  const Value q = a.q;
  const int64_t q_heads = a.q_heads, kv_heads = a.kv_heads;
  if (shapeOf(c, q).size() != 4 || shapeOf(c, a.k).size() != 4 || shapeOf(c, a.v).size() != 4) {
    return unsupported(n, "Q, K and V must be [batch, heads, sequence, head size], got " + shapeToString(shapeOf(c, q)) + ", " +
                              shapeToString(shapeOf(c, a.k)) + ", " + shapeToString(shapeOf(c, a.v)));
  }
  const int64_t head = shapeOf(c, q)[3], v_head = shapeOf(c, a.v)[3];
  if (q_heads <= 0 || kv_heads <= 0 || head <= 0 || v_head < 0 || q_heads % kv_heads != 0) {
    return unsupported(n, "q heads " + std::to_string(q_heads) + " must be a multiple of kv heads " + std::to_string(kv_heads));
  }
  AttentionValues out;
  out.present_k = a.past ? c.op1("Concat", {a.past_k, a.k}, AxisAttrs{2, false}) : a.k;
  out.present_v = a.past ? c.op1("Concat", {a.past_v, a.v}, AxisAttrs{2, false}) : a.v;
  Value keys = out.present_k, values = out.present_v;
  if (q_heads != kv_heads) {  // each KV head serves q_heads / kv_heads consecutive query heads
    const int64_t rep = q_heads / kv_heads;
    auto repeat = [&](Value x, int64_t size) {
      const Value tiled = c.op1("Tile", {c.op1("ExpandDims", {x}, AxesAttrs{{2}, false})}, TileAttrs{{1, 1, rep, 1, 1}});
      return reshapeKeeping(c, tiled, {0, q_heads, -1, size});
    };
    keys = repeat(keys, head);
    values = repeat(values, v_head);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float scale = a.scale > 0 ? a.scale : 1.0f / std::sqrt(static_cast<float>(head));
  Value scores = c.op1("BatchMatMul", {q, c.op1("Transpose", {keys}, PermAttrs{{0, 1, 3, 2}})}, MatMulAttrs{});
  scores = c.op1("Mul", {scores, scalarLike(c, scale, scores)});
  if (a.softcap > 0) {  // cap * tanh(scores / cap)
    scores = c.op1("Mul", {c.op1("Tanh", {c.op1("Mul", {scores, scalarLike(c, 1.0f / a.softcap, scores)})}),
                           scalarLike(c, a.softcap, scores)});
  }
  out.qk = scores;
  auto additive = [&](Value allowed) {  // 0 where allowed, -inf elsewhere
    return c.op1("Select", {allowed, scalarLike(c, 0, scores), scalarLike(c, -inf, scores)});
  };
  Value bias;
  bool has_bias = false, can_mask_a_row = false;
  auto addBias = [&](Value b) {
    bias = has_bias ? c.op1("Add", {bias, b}) : b;
    has_bias = true;
  };
  if (a.has_mask) {
    Value m = dtypeOf(c, a.mask) == DType::kBool ? additive(a.mask) : a.mask;
    const Shape ms = shapeOf(c, m);
    const int64_t T = shapeOf(c, keys)[2];
    if (!ms.empty() && isStatic(ms) && T >= 0 && ms.back() < T && !c.isDynamic(keys)) {  // keys past the mask: masked
      Shape pad_shape = ms;
      pad_shape.back() = T - ms.back();
      HostTensor pad(dtypeOf(c, m), pad_shape);
      for (int64_t e = 0; e < numElements(pad_shape); ++e) ops::storeF(pad.data(), pad.dtype(), e, -inf);
      m = c.op1("Concat", {m, c.constant(pad)}, AxisAttrs{-1, false});
    }
    addBias(m);
    can_mask_a_row = true;
  }
  // Positions: query i (of S) sits at i + offset among the keys j (of T); offset is the
  // past length, or per batch (valid keys) - S with a per-row key count.
  if (a.causal || a.left >= 0 || a.right >= 0) {
    const Value S = dimOf(c, q, 2);
    const Value i = c.op1("ExpandDims", {c.op1("DynamicRange", {scalarI64(c, 0), S, scalarI64(c, 1)})}, AxesAttrs{{1}, false});
    const Value j = c.op1("DynamicRange", {scalarI64(c, 0), dimOf(c, keys, 2), scalarI64(c, 1)});
    Value offset = a.past ? dimOf(c, a.past_k, 2) : scalarI64(c, 0);
    if (a.has_valid) offset = reshapeKeeping(c, c.op1("Sub", {c.op1("Cast", {a.valid}, CastAttrs{DType::kInt64}), S}), {-1, 1, 1});
    const Value d = c.op1("Sub", {c.op1("Add", {i, offset}), j});  // [S, T] or [B, S, T]: how far key j lies behind
    Value allowed;
    bool any = false;
    auto both = [&](Value x) {
      allowed = any ? c.op1("LogicalAnd", {allowed, x}) : x;
      any = true;
    };
    if (a.causal) both(c.op1("GreaterEqual", {d, scalarI64(c, 0)}));
    if (a.left >= 0) both(c.op1("LessEqual", {d, scalarI64(c, a.left)}));
    if (a.right >= 0) both(c.op1("GreaterEqual", {d, scalarI64(c, -a.right)}));
    Value b = additive(allowed);
    if (a.has_valid) b = c.op1("ExpandDims", {b}, AxesAttrs{{1}, false});  // [B, 1, S, T]
    addBias(b);
    can_mask_a_row = can_mask_a_row || a.has_valid || a.left >= 0 || a.right >= 0;
  }
  if (a.has_valid) {  // keys at or past the row's valid count are padding
    const Value j = c.op1("DynamicRange", {scalarI64(c, 0), dimOf(c, keys, 2), scalarI64(c, 1)});
    const Value len = reshapeKeeping(c, c.op1("Cast", {a.valid}, CastAttrs{DType::kInt64}), {-1, 1, 1, 1});
    addBias(additive(c.op1("Less", {j, len})));
    can_mask_a_row = true;
  }
  out.scores = has_bias ? c.op1("Add", {scores, bias}) : scores;
  out.probs = c.op1("Softmax", {out.scores}, AxisAttrs{-1, false});
  if (can_mask_a_row) {  // a row with every key masked attends to nothing: 0, not 0/0
    const Value row_max = c.op1("ReduceMax", {bias}, AxesAttrs{{-1}, true});
    out.probs = c.op1("Select", {c.op1("Equal", {row_max, scalarLike(c, -inf, row_max)}), scalarLike(c, 0, out.probs), out.probs});
  }
  out.y = c.op1("BatchMatMul", {out.probs, values}, MatMulAttrs{});
  return out;
}

namespace {

Status rotaryEmbedding(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  ASSIGN_OR_RETURN(Value v, rotaryHeads(c, n, x, attrInt(n, "num_heads", 0)));
  Value cos = c.in(n, 1), sin = c.in(n, 2);
  if (c.present(n, 3)) {
    cos = c.op1("Gather", {cos, c.in(n, 3)}, AxisAttrs{0, false});
    sin = c.op1("Gather", {sin, c.in(n, 3)}, AxisAttrs{0, false});
  }
  ASSIGN_OR_RETURN(Value y, applyRotary(c, n, v, cos, sin, attrInt(n, "rotary_embedding_dim", 0), attrInt(n, "interleaved", 0) != 0));
  o = {rotaryBack(c, x, y)};
  return Status::Ok();
}

Status attention(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 4) != c.present(n, 5)) return unsupported(n, "past_key and past_value come together");
  if (c.present(n, 4) && c.present(n, 6)) return unsupported(n, "nonpad_kv_seqlen cannot be combined with a past cache");
  AttentionArgs a;
  a.q = c.in(n, 0), a.k = c.in(n, 1), a.v = c.in(n, 2);
  const size_t rank = shapeOf(c, a.q).size();
  if ((rank != 3 && rank != 4) || shapeOf(c, a.k).size() != rank || shapeOf(c, a.v).size() != rank) {
    return unsupported(n, "Q, K and V must all be 3-D or all 4-D");
  }
  if (rank == 3) {
    a.q_heads = attrInt(n, "q_num_heads", 0);
    a.kv_heads = attrInt(n, "kv_num_heads", 0);
    if (a.q_heads <= 0 || a.kv_heads <= 0) return unsupported(n, "3-D inputs need q_num_heads and kv_num_heads");
    a.q = splitHeads(c, a.q, a.q_heads);
    a.k = splitHeads(c, a.k, a.kv_heads);
    a.v = splitHeads(c, a.v, a.kv_heads);
  } else {
    a.q_heads = shapeOf(c, a.q)[1];
    a.kv_heads = shapeOf(c, a.k)[1];
  }
  a.past = c.present(n, 4);
  if (a.past) a.past_k = c.in(n, 4), a.past_v = c.in(n, 5);
  a.has_mask = c.present(n, 3);
  if (a.has_mask) a.mask = c.in(n, 3);
  a.has_valid = c.present(n, 6);
  if (a.has_valid) a.valid = c.in(n, 6);
  a.scale = attrFloat(n, "scale", 0.0f);
  a.softcap = attrFloat(n, "softcap", 0.0f);
  a.causal = attrInt(n, "is_causal", 0) != 0;
  a.left = attrInt(n, "left_window_size", -1);
  a.right = attrInt(n, "right_window_size", -1);
  ASSIGN_OR_RETURN(AttentionValues r, buildAttention(c, n, a));
  Value y = r.y;
  if (rank == 3) y = reshapeKeeping(c, c.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3}}), {0, 0, -1});
  o = {y, r.present_k, r.present_v};
  if (n.output_size() > 3 && !n.output(3).empty()) {  // the scores as qk_matmul_output_mode picks them
    const int64_t mode = attrInt(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return unsupported(n, "qk_matmul_output_mode must be 0-3, got " + std::to_string(mode));
    o.push_back(mode <= 1 ? r.qk : mode == 2 ? r.scores : r.probs);
  }
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

}  // namespace

void registerAttentionConverters(std::map<std::string, Converter>& t) {
  t["Attention"] = attention;
  t["RotaryEmbedding"] = rotaryEmbedding;
}

}  // namespace gkrt::onnx_import
