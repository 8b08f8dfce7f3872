// CachedAttention (runtime/ir/ops/cached_attention.h): rules, the shared helpers and the
// reference kernel (double accumulation, any float dtype).
#include "runtime/ir/ops/cached_attention.h"

#include <cmath>
#include <cstring>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

StatusOr<CachedAttentionDims> cachedAttentionDims(const std::vector<const Shape*>& s, float scale) {
  static const char* kNames[] = {"q", "k", "v", "cache_k", "cache_v"};
  for (int i = 0; i < 5; ++i) {
    if (!s[size_t(i)] || s[size_t(i)]->size() != 4) {
      return makeError(StatusCode::kInvalidArgument, "CachedAttention ", kNames[i], " must be 4-D [batch, heads, positions, head dim], got ",
                       s[size_t(i)] ? shapeToString(*s[size_t(i)]) : std::string("nothing"));
    }
  }
  const Shape &q = *s[0], &k = *s[1], &v = *s[2], &ck = *s[3], &cv = *s[4];
  CachedAttentionDims d;
  d.b = q[0], d.hq = q[1], d.s = q[2], d.d = q[3], d.hkv = k[1], d.dv = v[3], d.capacity = ck[2];
  d.scale = scale > 0 ? scale : 1.0f / std::sqrt(static_cast<float>(d.d));
  auto bad = [&](const char* what) {
    return makeError(StatusCode::kInvalidArgument, "CachedAttention ", what, ": q ", shapeToString(q), ", k ", shapeToString(k),
                     ", v ", shapeToString(v), ", cache_k ", shapeToString(ck), ", cache_v ", shapeToString(cv));
  };
  if (k != Shape{d.b, d.hkv, d.s, d.d}) return bad("k must be [batch, kv heads, q's positions, q's head dim]");
  if (v != Shape{d.b, d.hkv, d.s, d.dv}) return bad("v must be [batch, kv heads, q's positions, v head dim]");
  if (ck != Shape{d.b, d.hkv, d.capacity, d.d}) return bad("cache_k must be [batch, kv heads, capacity, head dim]");
  if (cv != Shape{d.b, d.hkv, d.capacity, d.dv}) return bad("cache_v must be cache_k's shape with v's head dim");
  if (d.hkv <= 0 || d.hq % d.hkv != 0) return bad("the query heads must be a multiple of the kv heads");
  if (s.size() > 5 && s[5] && numElements(*s[5]) != 1) {
    return makeError(StatusCode::kInvalidArgument, "CachedAttention past must hold one element, got ", shapeToString(*s[5]));
  }
  return d;
}

StatusOr<int64_t> cachedAttentionPast(const TensorView& past, const CachedAttentionDims& d) {
  const int64_t p = past.dtype == DType::kInt32 ? *past.as<int32_t>() : *past.as<int64_t>();
  if (p < 0 || p + d.s > d.capacity) {
    return makeError(StatusCode::kInvalidArgument, "the context is full: ", p, " cached positions + ", d.s,
                     " new ones exceed the cache's capacity of ", d.capacity,
                     " (start a new sequence, or create the generator with a larger max context)");
  }
  return p;
}

void storeIntoCache(const CachedAttentionDims& d, int64_t past, size_t elem, const void* k, const void* v, void* cache_k,
                    void* cache_v) {
  for (int64_t b = 0; b < d.b; ++b) {
    for (int64_t h = 0; h < d.hkv; ++h) {
      const int64_t src = (b * d.hkv + h) * d.s, dst = (b * d.hkv + h) * d.capacity + past;
      std::memcpy(static_cast<char*>(cache_k) + size_t(dst * d.d) * elem, static_cast<const char*>(k) + size_t(src * d.d) * elem,
                  size_t(d.s * d.d) * elem);
      std::memcpy(static_cast<char*>(cache_v) + size_t(dst * d.dv) * elem, static_cast<const char*>(v) + size_t(src * d.dv) * elem,
                  size_t(d.s * d.dv) * elem);
    }
  }
}

namespace {

std::vector<const Shape*> shapesOf(const In& in) {
  std::vector<const Shape*> s;
  for (const TensorType* t : in) s.push_back(t ? &t->shape : nullptr);
  return s;
}

Status dtypeCachedAttention(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < 5; ++k) {
    RETURN_IF_ERROR(requireFloat(n, in[k], k));
    if (in[k]->dtype != in[0]->dtype) {
      return makeError(StatusCode::kInvalidArgument, "CachedAttention input ", k, " is ", dtypeName(in[k]->dtype), ", q is ",
                       dtypeName(in[0]->dtype), "; q, k, v and the caches need one float type");
    }
  }
  if (in[5]->dtype != DType::kInt64 && in[5]->dtype != DType::kInt32) {
    return makeError(StatusCode::kInvalidArgument, "CachedAttention past must be int32 or int64, got ", dtypeName(in[5]->dtype));
  }
  out = {in[0]->dtype};
  return Status::Ok();
}

Status shapeCachedAttention(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(CachedAttentionDims d, cachedAttentionDims(shapesOf(in), n.attrs.get<AttentionAttrs>().scale));
  if (n.attrs.get<AttentionAttrs>().layout != AttentionLayout::kBNSD || n.attrs.get<AttentionAttrs>().key_transposed) {
    return makeError(StatusCode::kInvalidArgument, "CachedAttention takes the BNSD layout, keys not transposed");
  }
  out = {{d.b, d.hq, d.s, d.dv}};
  return Status::Ok();
}

Status cachedAttentionKernel(const KernelContext& c) {
  std::vector<const Shape*> shapes;
  for (const TensorView& t : c.inputs) shapes.push_back(&t.shape);
  ASSIGN_OR_RETURN(CachedAttentionDims d, cachedAttentionDims(shapes, c.node.attrs.get<AttentionAttrs>().scale));
  ASSIGN_OR_RETURN(int64_t past, cachedAttentionPast(c.in(5), d));
  const DType t = c.in(0).dtype;
  void* ck = const_cast<void*>(c.in(3).data);  // the cache: updated in place
  void* cv = const_cast<void*>(c.in(4).data);
  storeIntoCache(d, past, dtypeSize(t), c.in(1).data, c.in(2).data, ck, cv);
  std::vector<double> p(size_t(past + d.s)), acc(size_t(d.dv));
  for (int64_t b = 0; b < d.b; ++b) {
    for (int64_t h = 0; h < d.hq; ++h) {
      const int64_t kv = b * d.hkv + h / d.group();
      for (int64_t i = 0; i < d.s; ++i) {
        const int64_t qo = ((b * d.hq + h) * d.s + i) * d.d, keys = past + i + 1;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d.d; ++e) dot += double(loadF(c.in(0).data, t, qo + e)) * loadF(ck, t, (kv * d.capacity + j) * d.d + e);
          p[size_t(j)] = dot * d.scale;
          m = std::max(m, p[size_t(j)]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < keys; ++j) {
          const double w = std::exp(p[size_t(j)] - m);
          sum += w;
          for (int64_t e = 0; e < d.dv; ++e) acc[size_t(e)] += w * loadF(cv, t, (kv * d.capacity + j) * d.dv + e);
        }
        const int64_t yo = ((b * d.hq + h) * d.s + i) * d.dv;
        for (int64_t e = 0; e < d.dv; ++e) storeF(c.out(0).data, t, yo + e, static_cast<float>(acc[size_t(e)] / sum));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void registerCachedAttentionOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("CachedAttention")) {
    OpDef d{"CachedAttention", OpClass::kOpaque, 6, 6, 1, 1, AttrKind::kAttention, dtypeCachedAttention, shapeCachedAttention,
            cachedAttentionKernel,
            "(q, k, v, cache_k, cache_v, past) -> k, v stored into the caches at past; causal GQA attention over "
            "cache positions 0..past+i (gkrt's own, for generation)"};
    d.updates_inputs = (1u << 3) | (1u << 4);
    t.push_back(d);
  }
}

}  // namespace gkrt::ops
