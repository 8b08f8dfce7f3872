// CachedAttention: a decoder's self-attention over a key/value cache of fixed capacity,
// the op the KV-cache pass (fusion/passes/kv_cache_pass.cc) makes of a model's
// `present = Concat(past, new)` + attention for stateful generation (runtime/generator.h).
//
//   CachedAttention(q [B, Hq, S, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv],
//                   cache_k [B, Hkv, C, D], cache_v [B, Hkv, C, Dv], past int [1])
//     -> y [B, Hq, S, Dv]
//
// Stores k and v into the caches at positions past .. past + S - 1 (in place: the
// cache inputs are the generator's state), then query i of head h attends causally to
// cache positions 0 .. past + i of KV head h / (Hq / Hkv) (grouped-query attention:
// K/V heads are shared, never repeated in memory), scores scaled by the op's `scale`
// (0: 1 / sqrt(D)). A past below 0 or past + S over C is an error ("the context is
// full"), never a write outside the cache.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ir/shape.h"
#include "runtime/ir/status.h"
#include "runtime/ir/tensor_view.h"

namespace gkrt::ops {

struct CachedAttentionDims {
  int64_t b = 0, hq = 0, hkv = 0, s = 0, d = 0, dv = 0, capacity = 0;
  float scale = 0;
  int64_t group() const { return hq / hkv; }
};

// Dims from the six operand shapes (q, k, v, cache_k, cache_v, past); messages name
// the operand that disagrees.
StatusOr<CachedAttentionDims> cachedAttentionDims(const std::vector<const Shape*>& shapes, float scale);
// The run's past length from operand 5 (int32 or int64, one element), checked against
// the capacity.
StatusOr<int64_t> cachedAttentionPast(const TensorView& past, const CachedAttentionDims& d);
// Copies k and v into the caches at `past` (float32 or any dtype of `elem` bytes).
void storeIntoCache(const CachedAttentionDims& d, int64_t past, size_t elem, const void* k, const void* v, void* cache_k,
                    void* cache_v);

}  // namespace gkrt::ops
