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

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

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

Status rotaryEmbedding(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  const bool interleaved = attrInt(n, "interleaved", 0) != 0;
  Value v;  // [B, S, heads, head]
  if (xs.size() == 4) {
    v = c.op1("Transpose", {x}, PermAttrs{{0, 2, 1, 3}});
  } else if (xs.size() == 3) {
    const int64_t heads = attrInt(n, "num_heads", 0);
    if (heads <= 0 || xs[2] < 0 || xs[2] % heads != 0) {
      return unsupported(n, "a 3-D input needs num_heads dividing its static hidden size, got num_heads " +
                                std::to_string(heads) + " for " + shapeToString(xs));
    }
    v = reshapeKeeping(c, x, {0, 0, heads, xs[2] / heads});
  } else {
    return unsupported(n, "input must be 3-D or 4-D, got " + shapeToString(xs));
  }
  const int64_t head = shapeOf(c, v)[3];
  int64_t rotary = attrInt(n, "rotary_embedding_dim", 0);
  if (rotary == 0) rotary = head;
  if (head < 0 || rotary <= 0 || rotary > head || rotary % 2 != 0) {
    return unsupported(n, "rotary_embedding_dim " + std::to_string(rotary) + " must be even and at most the head size " +
                              std::to_string(head));
  }
  const int64_t half = rotary / 2;
  Value cos = c.in(n, 1), sin = c.in(n, 2);
  if (c.present(n, 3)) {
    cos = c.op1("Gather", {cos, c.in(n, 3)}, AxisAttrs{0, false});
    sin = c.op1("Gather", {sin, c.in(n, 3)}, AxisAttrs{0, false});
  }
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
  o = {xs.size() == 4 ? c.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3}}) : reshapeKeeping(c, y, {0, 0, xs[2]})};
  return Status::Ok();
}

// [B, S, heads * head] -> [B, heads, S, head]
Value splitHeads(Context& c, Value x, int64_t heads) {
  return c.op1("Transpose", {reshapeKeeping(c, x, {0, 0, heads, -1})}, PermAttrs{{0, 2, 1, 3}});
}

Status attention(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 4) != c.present(n, 5)) return unsupported(n, "past_key and past_value come together");
  if (c.present(n, 4) && c.present(n, 6)) return unsupported(n, "nonpad_kv_seqlen cannot be combined with a past cache");
  Value q = c.in(n, 0), k = c.in(n, 1), v = c.in(n, 2);
  const size_t rank = shapeOf(c, q).size();
  if ((rank != 3 && rank != 4) || shapeOf(c, k).size() != rank || shapeOf(c, v).size() != rank) {
    return unsupported(n, "Q, K and V must all be 3-D or all 4-D");
  }
  int64_t q_heads, kv_heads;
  if (rank == 3) {
    q_heads = attrInt(n, "q_num_heads", 0);
    kv_heads = attrInt(n, "kv_num_heads", 0);
    if (q_heads <= 0 || kv_heads <= 0) return unsupported(n, "3-D inputs need q_num_heads and kv_num_heads");
    q = splitHeads(c, q, q_heads);
    k = splitHeads(c, k, kv_heads);
    v = splitHeads(c, v, kv_heads);
  } else {
    q_heads = shapeOf(c, q)[1];
    kv_heads = shapeOf(c, k)[1];
  }
  const int64_t head = shapeOf(c, q)[3], v_head = shapeOf(c, v)[3];
  if (q_heads <= 0 || kv_heads <= 0 || head <= 0 || v_head < 0 || q_heads % kv_heads != 0) {
    return unsupported(n, "q heads " + std::to_string(q_heads) + " must be a multiple of kv heads " + std::to_string(kv_heads));
  }
  const bool past = c.present(n, 4), nonpad = c.present(n, 6);
  const Value present_k = past ? c.op1("Concat", {c.in(n, 4), k}, AxisAttrs{2, false}) : k;
  const Value present_v = past ? c.op1("Concat", {c.in(n, 5), v}, AxisAttrs{2, false}) : v;
  Value keys = present_k, values = present_v;
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
  const float scale = attrFloat(n, "scale", 1.0f / std::sqrt(static_cast<float>(head)));
  Value scores = c.op1("BatchMatMul", {q, c.op1("Transpose", {keys}, PermAttrs{{0, 1, 3, 2}})}, MatMulAttrs{});
  scores = c.op1("Mul", {scores, scalarLike(c, scale, scores)});
  if (const float cap = attrFloat(n, "softcap", 0.0f); cap > 0) {  // cap * tanh(scores / cap)
    scores = c.op1("Mul", {c.op1("Tanh", {c.op1("Mul", {scores, scalarLike(c, 1.0f / cap, scores)})}), scalarLike(c, cap, scores)});
  }
  const Value qk = scores;
  auto additive = [&](Value allowed) {  // 0 where allowed, -inf elsewhere
    return c.op1("Select", {allowed, scalarLike(c, 0, scores), scalarLike(c, -inf, scores)});
  };
  Value bias;
  bool has_bias = false, can_mask_a_row = false;
  auto addBias = [&](Value b) {
    bias = has_bias ? c.op1("Add", {bias, b}) : b;
    has_bias = true;
  };
  if (c.present(n, 3)) {
    Value m = dtypeOf(c, c.in(n, 3)) == DType::kBool ? additive(c.in(n, 3)) : c.in(n, 3);
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
  // past length, or per batch nonpad_kv_seqlen - S with an external cache.
  const bool causal = attrInt(n, "is_causal", 0) != 0;
  const int64_t left = attrInt(n, "left_window_size", -1), right = attrInt(n, "right_window_size", -1);
  if (causal || left >= 0 || right >= 0) {
    const Value S = dimOf(c, q, 2);
    const Value i = c.op1("ExpandDims", {c.op1("DynamicRange", {scalarI64(c, 0), S, scalarI64(c, 1)})}, AxesAttrs{{1}, false});
    const Value j = c.op1("DynamicRange", {scalarI64(c, 0), dimOf(c, keys, 2), scalarI64(c, 1)});
    Value offset = past ? dimOf(c, c.in(n, 4), 2) : scalarI64(c, 0);
    if (nonpad) offset = reshapeKeeping(c, c.op1("Sub", {c.op1("Cast", {c.in(n, 6)}, CastAttrs{DType::kInt64}), S}), {-1, 1, 1});
    Value d = c.op1("Sub", {c.op1("Add", {i, offset}), j});  // [S, T] or [B, S, T]: how far key j lies behind
    Value allowed;
    bool any = false;
    auto both = [&](Value a) {
      allowed = any ? c.op1("LogicalAnd", {allowed, a}) : a;
      any = true;
    };
    if (causal) both(c.op1("GreaterEqual", {d, scalarI64(c, 0)}));
    if (left >= 0) both(c.op1("LessEqual", {d, scalarI64(c, left)}));
    if (right >= 0) both(c.op1("GreaterEqual", {d, scalarI64(c, -right)}));
    Value b = additive(allowed);
    if (nonpad) b = c.op1("ExpandDims", {b}, AxesAttrs{{1}, false});  // [B, 1, S, T]
    addBias(b);
    can_mask_a_row = can_mask_a_row || nonpad || left >= 0 || right >= 0;
  }
  if (nonpad) {  // keys at or past nonpad_kv_seqlen[b] are padding
    const Value j = c.op1("DynamicRange", {scalarI64(c, 0), dimOf(c, keys, 2), scalarI64(c, 1)});
    const Value len = reshapeKeeping(c, c.op1("Cast", {c.in(n, 6)}, CastAttrs{DType::kInt64}), {-1, 1, 1, 1});
    addBias(additive(c.op1("Less", {j, len})));
    can_mask_a_row = true;
  }
  if (has_bias) scores = c.op1("Add", {scores, bias});
  Value probs = c.op1("Softmax", {scores}, AxisAttrs{-1, false});
  if (can_mask_a_row) {  // a row with every key masked attends to nothing: 0, not 0/0
    const Value row_max = c.op1("ReduceMax", {bias}, AxesAttrs{{-1}, true});
    probs = c.op1("Select", {c.op1("Equal", {row_max, scalarLike(c, -inf, row_max)}), scalarLike(c, 0, probs), probs});
  }
  Value y = c.op1("BatchMatMul", {probs, values}, MatMulAttrs{});
  if (rank == 3) y = reshapeKeeping(c, c.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3}}), {0, 0, -1});
  o = {y, present_k, present_v};
  if (n.output_size() > 3 && !n.output(3).empty()) {  // the scores as qk_matmul_output_mode picks them
    const int64_t mode = attrInt(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return unsupported(n, "qk_matmul_output_mode must be 0-3, got " + std::to_string(mode));
    o.push_back(mode <= 1 ? qk : mode == 2 ? scores : probs);
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
