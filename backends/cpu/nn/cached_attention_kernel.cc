#include "backends/cpu/nn/cached_attention_kernel.h"

#include <algorithm>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/row_math.h"
#include "runtime/ir/ops/cached_attention.h"

namespace gkrt::cpu {
namespace {

// One query row against `keys` cached positions: scores, softmax, the weighted values.
// One build per CPU tier (cpu_tier.h; kTier keeps the instantiations apart).
typedef float Vec8 __attribute__((vector_size(32)));
#define GKRT_LOAD8(p) ({ Vec8 v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })

// p[j] = exp(p[j] - m) for the keys; returns their sum (the softmax's denominator).
__attribute__((always_inline)) inline float expShiftedInPlace(float* p, int64_t keys, float m) {
  float sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    p[j] = expNonPositive(p[j] - m);
    sum += p[j];
  }
  return sum;
}

// Head dim 64 (most small LLMs): the query (pre-scaled) and the weighted values' sums in
// eight vector registers each, one key's score a dot of eight FMAs.
template <int kTier>
__attribute__((always_inline)) inline void attendRow64(const float* qr, const float* kb, const float* vb, int64_t keys, float scale,
                                                       float* p, float* yr) {
  Vec8 q[8];
  for (int i = 0; i < 8; ++i) q[i] = GKRT_LOAD8(qr + 8 * i) * scale;
  float m = -INFINITY;
  auto score = [](const Vec8& t) { return ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7])); };
  int64_t j = 0;
  for (; j + 4 <= keys; j += 4) {  // four keys' dots side by side: four FMA chains, not one
    const float* kr = kb + j * 64;
    Vec8 t0 = q[0] * GKRT_LOAD8(kr), t1 = q[0] * GKRT_LOAD8(kr + 64), t2 = q[0] * GKRT_LOAD8(kr + 128), t3 = q[0] * GKRT_LOAD8(kr + 192);
    for (int i = 1; i < 8; ++i) {
      t0 += q[i] * GKRT_LOAD8(kr + 8 * i);
      t1 += q[i] * GKRT_LOAD8(kr + 64 + 8 * i);
      t2 += q[i] * GKRT_LOAD8(kr + 128 + 8 * i);
      t3 += q[i] * GKRT_LOAD8(kr + 192 + 8 * i);
    }
    p[j] = score(t0), p[j + 1] = score(t1), p[j + 2] = score(t2), p[j + 3] = score(t3);
    m = std::max(m, std::max(std::max(p[j], p[j + 1]), std::max(p[j + 2], p[j + 3])));
  }
  for (; j < keys; ++j) {
    const float* kr = kb + j * 64;
    Vec8 t = q[0] * GKRT_LOAD8(kr);
    for (int i = 1; i < 8; ++i) t += q[i] * GKRT_LOAD8(kr + 8 * i);
    p[j] = score(t);
    m = std::max(m, p[j]);
  }
  const float sum = expShiftedInPlace(p, keys, m);
  Vec8 a[8] = {};
  for (int64_t j = 0; j < keys; ++j) {
    const Vec8 pj = Vec8{} + p[j];
    const float* vr = vb + j * 64;
    for (int i = 0; i < 8; ++i) a[i] += pj * GKRT_LOAD8(vr + 8 * i);
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < 8; ++i) {
    const Vec8 y = a[i] * inv;
    __builtin_memcpy(yr + 8 * i, &y, sizeof y);
  }
}

template <int kTier>
__attribute__((always_inline)) inline void attendRowBody(const float* qr, const float* kb, const float* vb, int64_t keys, int64_t D,
                                                         int64_t Dv, float scale, float* p, float* acc, float* yr) {
  if (D == 64 && Dv == 64) return attendRow64<kTier>(qr, kb, vb, keys, scale, p, yr);
  float m = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    const float* kr = kb + j * D;
    const float s = laneSumOf(D, [&](int64_t e) { return qr[e] * kr[e]; }) * scale;
    p[j] = s;
    m = std::max(m, s);
  }
  const float sum = expShiftedInPlace(p, keys, m);
  std::fill(acc, acc + Dv, 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float pj = p[j];
    const float* vr = vb + j * Dv;
    for (int64_t e = 0; e < Dv; ++e) acc[e] += pj * vr[e];
  }
  const float inv = 1.0f / sum;
  for (int64_t e = 0; e < Dv; ++e) yr[e] = acc[e] * inv;
}

#define GKRT_ATTEND_ARGS const float *qr, const float *kb, const float *vb, int64_t keys, int64_t D, int64_t Dv, float scale, float *p, \
                         float *acc, float *yr
#ifdef GKRT_X86_TIERS
GKRT_TARGET_AVX512 void attendRowAvx512(GKRT_ATTEND_ARGS) { attendRowBody<2>(qr, kb, vb, keys, D, Dv, scale, p, acc, yr); }
GKRT_TARGET_AVX2 void attendRowAvx2(GKRT_ATTEND_ARGS) { attendRowBody<1>(qr, kb, vb, keys, D, Dv, scale, p, acc, yr); }
#endif
void attendRowPortable(GKRT_ATTEND_ARGS) { attendRowBody<0>(qr, kb, vb, keys, D, Dv, scale, p, acc, yr); }
#undef GKRT_ATTEND_ARGS

using AttendRowFn = void (*)(const float*, const float*, const float*, int64_t, int64_t, int64_t, float, float*, float*, float*);
AttendRowFn attendRowForTier() {
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx512)) return attendRowAvx512;
  if (cpuTier().has(CpuIsa::kAvx2)) return attendRowAvx2;
#endif
  return attendRowPortable;
}

class CachedAttentionKernel final : public Kernel {
 public:
  CachedAttentionKernel(const ops::CachedAttentionDims& d, ThreadPool& pool) : d_(d), pool_(pool) {}

  size_t workspaceBytes() const override { return size_t(pool_.size()) * size_t(d_.capacity + d_.dv) * sizeof(float); }
  std::string detail() const override { return "gkrt cached attention"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    ASSIGN_OR_RETURN(const int64_t past, ops::cachedAttentionPast(in[5], d_));
    float* ck = const_cast<float*>(in[3].as<float>());  // the caches: updated in place
    float* cv = const_cast<float*>(in[4].as<float>());
    ops::storeIntoCache(d_, past, sizeof(float), in[1].data, in[2].data, ck, cv);
    const float* q = in[0].as<float>();
    float* y = out[0].as<float>();
    float* scratch = static_cast<float*>(ws);
    const int64_t tasks = d_.b * d_.hq * d_.s;
    pool_.parallelFor(tasks, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* p = scratch + size_t(thread) * size_t(d_.capacity + d_.dv);
      float* acc = p + d_.capacity;
      for (int64_t w = begin; w < end; ++w) row(q, ck, cv, y, w, past, p, acc);
    });
    return Status::Ok();
  }

 private:
  // Query row w = ((b * hq) + h) * s + i.
  void row(const float* q, const float* ck, const float* cv, float* y, int64_t w, int64_t past, float* p, float* acc) const {
    const int64_t i = w % d_.s, bh = w / d_.s, b = bh / d_.hq, h = bh % d_.hq;
    const int64_t kv = b * d_.hkv + h / d_.group();
    attend_(q + w * d_.d, ck + kv * d_.capacity * d_.d, cv + kv * d_.capacity * d_.dv, past + i + 1, d_.d, d_.dv, d_.scale, p, acc,
              y + w * d_.dv);
  }

  ops::CachedAttentionDims d_;
  ThreadPool& pool_;
  AttendRowFn attend_ = attendRowForTier();
};

}  // namespace

std::unique_ptr<Kernel> makeCachedAttentionKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  std::vector<const Shape*> shapes;
  for (int t : node.inputs) shapes.push_back(&g.tensors[size_t(t)].shape);
  auto d = ops::cachedAttentionDims(shapes, node.attrs.get<AttentionAttrs>().scale);
  if (!d.ok()) return nullptr;
  return std::make_unique<CachedAttentionKernel>(*d, pool);
}

}  // namespace gkrt::cpu
