// The KV-cache rewrite for stateful generation (runtime/generator.h): a decoder as
// exporters write it takes the past keys/values as inputs of a growing length and returns
// `present = Concat(past, new)`; every token would copy the whole past and change every
// shape. bindKvCache() turns each layer's
//
//   present_k = Concat(past_k, k, axis 2), present_v = Concat(past_v, v, axis 2)
//   y = Softmax(scale * q · repeat(present_k)^T (+ mask)) · repeat(present_v)
//
// (repeat: the grouped-query head expansion ExpandDims/Tile/BroadcastTo/Reshape; the
// mask and its all-masked-row guard whatever builds them) into one CachedAttention node
// (runtime/ir/ops/cached_attention.h) over a cache input of fixed capacity, which it
// updates in place, and a new int64 input `gkrt_past_length`. The present outputs go;
// the mask's subgraph goes with them. The rewritten attention is causal over every
// cached position, as a decoder's self-attention with no padding is: models whose
// attention is anything else (sliding windows, soft-capped scores, padding inside the
// sequence) are not decoders this supports, and the scores chain is checked for the
// forms it knows.
//
// The three forms the decoder tests write (tests/models/make_llm.py: optimum export,
// onnxruntime-genai builder, opset 23) all convert to this shape.
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

struct KvCacheLayer {
  std::string key, value;  // input names (the models' past names), now the cache of capacity positions
  int64_t kv_heads = 0, head_dim = 0, value_head_dim = 0;
};
struct KvCacheBinding {
  std::vector<KvCacheLayer> layers;
  std::vector<std::string> removed_outputs;  // the present outputs
  int64_t capacity = 0;
  DType dtype = DType::kFloat32;
};

inline constexpr const char* kPastLengthInput = "gkrt_past_length";

// Rewrites `g` (a converted model, dims still symbolic) in place. Errors name the
// layer and what did not match.
StatusOr<KvCacheBinding> bindKvCache(ir::Graph& g, int64_t capacity);

// The logits of the last position only (a prompt's prefill needs no more): when output
// tensor `logits` is a matmul of hidden states [batch, positions, hidden] with 2-D
// weights (or a BlockQuantMatMul), those are cut to their last position first (SmolLM2's lm_head over a
// 128-token prompt took 36% of the prefill); other producers are left as they are.
void keepLastPositionLogits(ir::Graph& g, int logits);

}  // namespace gkrt
