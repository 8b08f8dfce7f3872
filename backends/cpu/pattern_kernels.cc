#include "backends/cpu/pattern_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/onednn_kernels.h"
#include "backends/cpu/vector_math.h"
#include "backends/reference/reference_backend.h"
#include "runtime/communicator.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/attention_layout.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

bool is(const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; }

// The hot loops below vectorise; AVX-512 and FMA clones are picked by CPU features at load.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GKRT_PATTERN_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define GKRT_PATTERN_CLONES
#endif

// s[0:n] = sum_d q[d] * kt[d * ldk + 0:n]: one query row against a block of keys stored
// transposed, as axpys over contiguous rows.
GKRT_PATTERN_CLONES void scoreRow(float* s, const float* q, const float* kt, int64_t D, int64_t ldk, int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] = 0.0f;
  for (int64_t d = 0; d < D; ++d) {
    const float qd = q[d];
    const float* k = kt + d * ldk;
    for (int64_t j = 0; j < n; ++j) s[j] += qd * k[j];
  }
}

// o[0:dv] = o * correction + sum_j p[j] * v[j * dv + 0:dv].
GKRT_PATTERN_CLONES void accumulateRow(float* o, const float* p, const float* v, int64_t n, int64_t dv, float correction) {
  if (correction != 1.0f) for (int64_t d = 0; d < dv; ++d) o[d] *= correction;
  for (int64_t j = 0; j < n; ++j) {
    const float pj = p[j];
    const float* vj = v + j * dv;
    for (int64_t d = 0; d < dv; ++d) o[d] += pj * vj[d];
  }
}

// The sum of a row and x1 + x2 -> s; returns sum(s).
GKRT_PATTERN_CLONES float addRow(float* s, const float* a, const float* b, int64_t n) {
  float total = 0.0f;
  for (int64_t k = 0; k < n; ++k) {
    s[k] = a[k] + b[k];
    total += s[k];
  }
  return total;
}
GKRT_PATTERN_CLONES float squaredDeviation(const float* s, float mean, int64_t n) {
  float sq = 0.0f;
  for (int64_t k = 0; k < n; ++k) sq += (s[k] - mean) * (s[k] - mean);
  return sq;
}
GKRT_PATTERN_CLONES void normaliseRow(float* o, const float* s, float mean, float rstd, const float* gamma,
                                      const float* beta, int64_t n) {
  if (gamma && beta) {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd * gamma[k] + beta[k];
  } else if (gamma) {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd * gamma[k];
  } else {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd + (beta ? beta[k] : 0.0f);
  }
}

// ---- AddLayerNorm / AddRmsNorm: each row read once; the sum written as it is made, then
// normalised from cache ---------------------------------------------------------------
class AddNormKernel final : public Kernel {
 public:
  AddNormKernel(const ir::Graph& g, const ir::Node& n, ThreadPool& pool, bool rms) : pool_(pool), rms_(rms) {
    const Shape& s = g.tensors[n.inputs[0]].shape;
    const int64_t axis = *normalizeAxis(n.attrs.get<NormAttrs>().axis, static_cast<int64_t>(s.size()));
    rows_ = cols_ = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? rows_ : cols_) *= s[d];
    eps_ = n.attrs.get<NormAttrs>().epsilon;
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float *x1 = in[0].as<float>(), *x2 = in[1].as<float>();
    const float* gamma = in.size() > 2 ? in[2].as<float>() : nullptr;
    const float* beta = in.size() > 3 ? in[3].as<float>() : nullptr;
    float *y = static_cast<float*>(out[0].data), *sum = static_cast<float*>(out[1].data);
    const int64_t C = cols_;
    pool_.parallelFor(rows_, 1, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* srow = sum + r * C;
        const float total = addRow(srow, x1 + r * C, x2 + r * C, C);
        const float mean = rms_ ? 0.0f : total / static_cast<float>(C);
        const float rstd = 1.0f / std::sqrt(squaredDeviation(srow, mean, C) / static_cast<float>(C) + eps_);
        normaliseRow(y + r * C, srow, mean, rstd, gamma, beta, C);
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  bool rms_;
  int64_t rows_, cols_;
  float eps_;
};

// ---- SwiGLU: silu(a) * b over the two halves, exp through the vector math -------------
class SwiGLUKernel final : public Kernel {
 public:
  SwiGLUKernel(const ir::Graph& g, const ir::Node& n, ThreadPool& pool) : pool_(pool) {
    const Shape& s = g.tensors[n.inputs[0]].shape;
    const auto split = ops::splitAtAxis(s, *normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(s.size())));
    outer_ = split.outer;
    half_ = split.extent / 2 * split.inner;
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* x = in[0].as<float>();
    float* y = static_cast<float*>(out[0].data);
    constexpr int64_t kChunk = 512;
    const int64_t chunks = (half_ + kChunk - 1) / kChunk;
    pool_.parallelFor(outer_ * chunks, 1, std::max<int64_t>(1, 16), [&](int, int64_t begin, int64_t end) {
      float e[kChunk];
      for (int64_t w = begin; w < end; ++w) {
        const int64_t o = w / chunks, c0 = (w % chunks) * kChunk, n = std::min(kChunk, half_ - c0);
        const float *a = x + o * 2 * half_ + c0, *b = a + half_;
        float* dst = y + o * half_ + c0;
        for (int64_t k = 0; k < n; ++k) e[k] = -a[k];
        vecMath(VecFn::kExp, e, e, n);
        for (int64_t k = 0; k < n; ++k) dst[k] = a[k] / (1.0f + e[k]) * b[k];
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  int64_t outer_, half_;
};

// ---- FlashAttention: per (batch, head, block of queries), key blocks stream through an
// online softmax (running max and sum, the accumulator rescaled when the max grows), so
// only one kBlockQ x kBlockK tile of scores ever exists. The loops are axpys over
// contiguous packed rows, which the compiler vectorises without reassociating sums.
class FlashAttentionKernel final : public Kernel {
 public:
  static constexpr int64_t kBlockQ = 32, kBlockK = 64;

  FlashAttentionKernel(const ir::Graph& g, const ir::Node& n, ThreadPool& pool) : pool_(pool) {
    a_ = n.attrs.get<AttentionAttrs>();
    (void)attentionDims(a_, g.tensors[n.inputs[0]].shape, false, &q_);
    (void)attentionDims(a_, g.tensors[n.inputs[1]].shape, a_.key_transposed, &k_);
    (void)attentionDims(a_, g.tensors[n.inputs[2]].shape, false, &v_);
    (void)attentionDims(a_, g.tensors[n.outputs[0]].shape, false, &o_);
    if (n.inputs.size() > 3 && n.inputs[3] >= 0) {
      mask_strides_ = ops::broadcastStrides(g.tensors[n.inputs[3]].shape, Shape{q_.b, q_.n, q_.s, k_.s});
    }
    per_thread_ = kBlockQ * q_.d + q_.d * kBlockK + kBlockK * v_.d + kBlockQ * kBlockK + kBlockQ * v_.d + 2 * kBlockQ;
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(pool_.size() * per_thread_) * sizeof(float); }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float *q = in[0].as<float>(), *k = in[1].as<float>(), *v = in[2].as<float>();
    const float* mask = in.size() > 3 && in[3].present() ? in[3].as<float>() : nullptr;
    float* y = static_cast<float*>(out[0].data);
    const int64_t qblocks = (q_.s + kBlockQ - 1) / kBlockQ;
    const int64_t items = q_.b * q_.n * qblocks;
    pool_.parallelFor(items, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* scratch = static_cast<float*>(ws) + thread * per_thread_;
      for (int64_t w = begin; w < end; ++w) block(q, k, v, mask, y, w / (q_.n * qblocks), (w / qblocks) % q_.n,
                                                  (w % qblocks) * kBlockQ, scratch);
    });
    return Status::Ok();
  }

 private:
  void block(const float* q, const float* k, const float* v, const float* mask, float* y, int64_t b, int64_t h,
             int64_t q0, float* scratch) const {
    const int64_t D = q_.d, Dv = v_.d, rows = std::min(kBlockQ, q_.s - q0);
    float* qb = scratch;
    float* kt = qb + kBlockQ * D;
    float* vb = kt + D * kBlockK;
    float* s = vb + kBlockK * Dv;
    float* o = s + kBlockQ * kBlockK;
    float* m = o + kBlockQ * Dv;
    float* l = m + kBlockQ;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t d = 0; d < D; ++d) qb[i * D + d] = q[q_.at(b, h, q0 + i, d)];
      m[i] = -std::numeric_limits<float>::infinity();
      l[i] = 0.0f;
      std::fill(o + i * Dv, o + (i + 1) * Dv, 0.0f);
    }
    for (int64_t k0 = 0; k0 < k_.s; k0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, k_.s - k0);
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t d = 0; d < D; ++d) kt[d * kBlockK + j] = k[k_.at(b, h, k0 + j, d)];
        for (int64_t d = 0; d < Dv; ++d) vb[j * Dv + d] = v[v_.at(b, h, k0 + j, d)];
      }
      for (int64_t i = 0; i < rows; ++i) {
        float* si = s + i * kBlockK;
        scoreRow(si, qb + i * D, kt, D, kBlockK, cols);
        float mx = m[i];
        if (mask) {
          const float* mrow = mask + b * mask_strides_[0] + h * mask_strides_[1] + (q0 + i) * mask_strides_[2];
          const int64_t ms = mask_strides_[3];
          for (int64_t j = 0; j < cols; ++j) si[j] = si[j] * a_.scale + mrow[(k0 + j) * ms];
        } else {
          for (int64_t j = 0; j < cols; ++j) si[j] *= a_.scale;
        }
        for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, si[j]);
        if (mx == -std::numeric_limits<float>::infinity()) continue;  // every score masked out so far
        const float correction = std::exp(m[i] - mx);
        for (int64_t j = 0; j < cols; ++j) si[j] -= mx;
        vecMath(VecFn::kExp, si, si, cols);
        float rowsum = 0.0f;
        for (int64_t j = 0; j < cols; ++j) rowsum += si[j];
        l[i] = l[i] * correction + rowsum;
        m[i] = mx;
        accumulateRow(o + i * Dv, si, vb, cols, Dv, correction);
      }
    }
    for (int64_t i = 0; i < rows; ++i) {
      const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
      for (int64_t d = 0; d < Dv; ++d) y[o_.at(b, h, q0 + i, d)] = o[i * Dv + d] * inv;
    }
  }

  ThreadPool& pool_;
  AttentionAttrs a_;
  AttentionDims q_, k_, v_, o_;
  std::vector<int64_t> mask_strides_;
  int64_t per_thread_ = 0;
};

// ---- AllReduce: the sum over the ranks of the backend's communicator ------------------
class AllReduceKernel final : public Kernel {
 public:
  explicit AllReduceKernel(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  int inPlaceInput() const override { return 0; }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const size_t n = static_cast<size_t>(in[0].size());
    if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, n * sizeof(float));
    return comm_ ? comm_->allReduceSum(static_cast<float*>(out[0].data), n) : Status::Ok();
  }

 private:
  std::shared_ptr<Communicator> comm_;
};

}  // namespace

// The matmul family runs on oneDNN through the planner of GEMM epilogue clusters
// (onednn_kernels.cc): see pattern_matmul_kernels.cc.
bool canRunPatternMatMul(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compilePatternMatMul(const ir::Graph& g, const ir::Node& node,
                                                       const BackendOptions& options);

bool canRunPatternQuant(const ir::Graph& g, const ir::Node& node);  // pattern_quant_kernels.cc
StatusOr<std::unique_ptr<Kernel>> compilePatternQuant(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

bool canRunPattern(const ir::Graph& g, const ir::Node& node) {
  if (canRunPatternQuant(g, node)) return true;
  static const char* kOps[] = {"AddLayerNorm", "AddRmsNorm", "SwiGLU", "FlashAttention", "AllReduce"};
  bool known = false;
  for (const char* op : kOps) known = known || is(node, op);
  if (!known) return canRunPatternMatMul(g, node);
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  for (int t : node.outputs) if (g.tensors[t].dtype != DType::kFloat32 || !isStatic(g.tensors[t].shape)) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compilePattern(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                 const BackendOptions& options) {
  if (canRunPatternQuant(g, node)) return compilePatternQuant(g, node, pool);
  if (is(node, "AddLayerNorm")) return std::unique_ptr<Kernel>(new AddNormKernel(g, node, pool, false));
  if (is(node, "AddRmsNorm")) return std::unique_ptr<Kernel>(new AddNormKernel(g, node, pool, true));
  if (is(node, "SwiGLU")) return std::unique_ptr<Kernel>(new SwiGLUKernel(g, node, pool));
  if (is(node, "FlashAttention")) return std::unique_ptr<Kernel>(new FlashAttentionKernel(g, node, pool));
  if (is(node, "AllReduce")) return std::unique_ptr<Kernel>(new AllReduceKernel(options.communicator));
  return compilePatternMatMul(g, node, options);
}

}  // namespace gkrt::cpu
