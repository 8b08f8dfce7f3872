#include "backends/cpu/nn/pattern_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/row_math.h"
#include "backends/cpu/isa/vector_math.h"
#include "backends/cpu/nn/cached_attention_kernel.h"
#include "backends/cpu/nn/flash_attention_kernel.h"
#include "backends/cpu/nn/rotary_kernel.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/reference/reference_backend.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

bool is(const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; }

// The hot loops below vectorise; AVX-512 and FMA builds are picked by cpuTier() (GKRT_TIERED).

// The sum of a row and x1 + x2 -> s; returns sum(s). Both sums run in 16 lanes
// (row_math.h): MiniLM's 12 AddLayerNorms took 1.0 ms a run with one accumulator, 0.21.
GKRT_INLINE_BODY float addRowBody(float* s, const float* a, const float* b, int64_t n) {
  return laneSumOf(n, [&](int64_t k) { return s[k] = a[k] + b[k]; });
}
GKRT_TIERED(float, addRow, (float* s, const float* a, const float* b, int64_t n), (s, a, b, n), "avx512f", "fma")
GKRT_INLINE_BODY float squaredDeviationBody(const float* s, float mean, int64_t n) {
  return laneSumOf(n, [&](int64_t k) { return (s[k] - mean) * (s[k] - mean); });
}
GKRT_TIERED(float, squaredDeviation, (const float* s, float mean, int64_t n), (s, mean, n), "avx512f", "fma")
GKRT_INLINE_BODY void normaliseRowBody(float* o, const float* s, float mean, float rstd, const float* gamma,
                                       const float* beta, int64_t n) {
  if (gamma && beta) {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd * gamma[k] + beta[k];
  } else if (gamma) {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd * gamma[k];
  } else {
    for (int64_t k = 0; k < n; ++k) o[k] = (s[k] - mean) * rstd + (beta ? beta[k] : 0.0f);
  }
}
GKRT_TIERED(void, normaliseRow,
            (float* o, const float* s, float mean, float rstd, const float* gamma, const float* beta, int64_t n),
            (o, s, mean, rstd, gamma, beta, n), "avx512f", "fma")

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
                                                       const BackendOptions& options, ThreadPool& pool);

bool canRunPatternQuant(const ir::Graph& g, const ir::Node& node);  // pattern_quant_kernels.cc
StatusOr<std::unique_ptr<Kernel>> compilePatternQuant(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

bool canRunPattern(const ir::Graph& g, const ir::Node& node) {
  if (canRunPatternQuant(g, node)) return true;
  static const char* kOps[] = {"AddLayerNorm", "AddRmsNorm", "SwiGLU", "FlashAttention", "AllReduce", "CachedAttention", "Rotary"};
  bool known = false;
  for (const char* op : kOps) known = known || is(node, op);
  if (!known) return canRunPatternMatMul(g, node);
  const size_t floats = is(node, "CachedAttention") ? 5 : node.inputs.size();  // its past length is an integer
  for (size_t k = 0; k < floats; ++k) if (node.inputs[k] >= 0 && g.tensors[node.inputs[k]].dtype != DType::kFloat32) return false;
  for (int t : node.outputs) if (g.tensors[t].dtype != DType::kFloat32 || !isStatic(g.tensors[t].shape)) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compilePattern(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                 const BackendOptions& options) {
  if (canRunPatternQuant(g, node)) return compilePatternQuant(g, node, pool);
  if (is(node, "AddLayerNorm")) return std::unique_ptr<Kernel>(new AddNormKernel(g, node, pool, false));
  if (is(node, "AddRmsNorm")) return std::unique_ptr<Kernel>(new AddNormKernel(g, node, pool, true));
  if (is(node, "SwiGLU")) return std::unique_ptr<Kernel>(new SwiGLUKernel(g, node, pool));
  if (is(node, "FlashAttention")) return makeFlashAttentionKernel(g, node, pool);
  if (is(node, "Rotary")) {
    auto k = makeRotaryKernel(g, node, pool);
    if (!k) return makeError(StatusCode::kInvalidArgument, "cpu: Rotary '", node.name, "' has inconsistent shapes");
    return k;
  }
  if (is(node, "CachedAttention")) {
    auto k = makeCachedAttentionKernel(g, node, pool);
    if (!k) return makeError(StatusCode::kInvalidArgument, "cpu: CachedAttention '", node.name, "' has inconsistent shapes");
    return k;
  }
  if (is(node, "AllReduce")) return std::unique_ptr<Kernel>(new AllReduceKernel(options.communicator));
  return compilePatternMatMul(g, node, options, pool);
}

}  // namespace gkrt::cpu
