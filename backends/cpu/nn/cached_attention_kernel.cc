#include "backends/cpu/nn/cached_attention_kernel.h"

#include <algorithm>

#include "backends/cpu/isa/row_math.h"
#include "runtime/ir/ops/cached_attention.h"

namespace gkrt::cpu {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GKRT_ATTENTION_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define GKRT_ATTENTION_CLONES
#endif

// One query row against `keys` cached positions: scores, softmax, the weighted values.
GKRT_ATTENTION_CLONES void attendRow(const float* qr, const float* kb, const float* vb, int64_t keys, int64_t D, int64_t Dv,
                                     float scale, float* p, float* acc, float* yr) {
  float m = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    const float* kr = kb + j * D;
    const float s = laneSumOf(D, [&](int64_t e) { return qr[e] * kr[e]; }) * scale;
    p[j] = s;
    m = std::max(m, s);
  }
  float sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    p[j] = expNonPositive(p[j] - m);
    sum += p[j];
  }
  std::fill(acc, acc + Dv, 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float pj = p[j];
    const float* vr = vb + j * Dv;
    for (int64_t e = 0; e < Dv; ++e) acc[e] += pj * vr[e];
  }
  const float inv = 1.0f / sum;
  for (int64_t e = 0; e < Dv; ++e) yr[e] = acc[e] * inv;
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
    attendRow(q + w * d_.d, ck + kv * d_.capacity * d_.d, cv + kv * d_.capacity * d_.dv, past + i + 1, d_.d, d_.dv, d_.scale, p, acc,
              y + w * d_.dv);
  }

  ops::CachedAttentionDims d_;
  ThreadPool& pool_;
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
