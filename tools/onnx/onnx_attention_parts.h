// The pieces the attention converters share (onnx_converters_attention.cc): the opset 23
// Attention and RotaryEmbedding, and onnxruntime's GroupQueryAttention and
// RotaryEmbedding (onnx_converters_contrib.cc) are all written with them, so the fusion
// passes meet one form of attention.
#pragma once

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {

Value scalarI64(Context& c, int64_t v);
// Reshape with ONNX's 0 (keep the input's dim), also for dims known only at run time.
Value reshapeKeeping(Context& c, Value x, Ints shape);
// x's dim `axis` as an int64 scalar (a graph value when it is known only at run time).
Value dimOf(Context& c, Value x, int64_t axis);
Value sliceLast(Context& c, Value x, int64_t begin, int64_t end);
// [B, S, heads * head] -> [B, heads, S, head]
Value splitHeads(Context& c, Value x, int64_t heads);

// A rotary input as [B, S, heads, head]: 4-D [B, heads, S, head] transposed, 3-D
// [B, S, hidden] split into `heads`; and the rotated result back in x's layout.
StatusOr<Value> rotaryHeads(Context& c, const Node& n, Value x, int64_t heads);
Value rotaryBack(Context& c, Value x, Value y);

// Rotary embedding of v [B, S, heads, head] with cos/sin [B, S, rotary / 2] (rotary 0:
// the whole head), halves or interleaved pairs.
StatusOr<Value> applyRotary(Context& c, const Node& n, Value v, Value cos, Value sin, int64_t rotary, bool interleaved);

struct AttentionArgs {
  Value q, k, v;                 // [B, q_heads, S, head], [B, kv_heads, S_new, head] (v: its own head size)
  bool past = false;             // past_k/past_v [B, kv_heads, P, head] go before k/v
  Value past_k, past_v;
  bool has_mask = false;         // bool (true = attend) or additive float, broadcast to [B, heads, S, T]
  Value mask;
  bool has_valid = false;        // int [B]: row b's keys at or past valid[b] are padding, and its
  Value valid;                   // queries end at valid[b] (the causal offset is valid[b] - S)
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0;               // 0: 1 / sqrt(head)
  float softcap = 0;
  bool causal = false;
  int64_t left = -1, right = -1; // window sizes, -1 unbounded
};
struct AttentionValues {
  Value y;                       // [B, q_heads, S, v_head]
  Value present_k, present_v;    // past + new
  Value qk, scores, probs;       // scaled (soft-capped) scores, with the bias, after softmax
};
StatusOr<AttentionValues> buildAttention(Context& c, const Node& n, const AttentionArgs& a);

}  // namespace gkrt::onnx_import
