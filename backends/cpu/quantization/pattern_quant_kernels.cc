// The cpu backend's kernels for the quantised norm pattern ops
// (runtime/ir/ops/pattern_quant_ops.cc): RmsNormQuant and AddRmsNormQuant in one pass over
// each row, float32 x; the row statistics and products in double in the reference's order,
// so the int8 result is the reference's bit for bit, rows spread over the threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/nn/pattern_kernels.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

bool is(const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; }

// Built for AVX2 too (no FMA: nothing here may contract), picked by cpuTier().
// q[k] = saturate(round_half_even(float(row[k] * rstd * gamma[k]) + beta[k]) / scale) + zp):
// the product in double rounded once to float32 (as RmsNorm stores y), the beta add and
// the division in float32 (the Add, QuantizeLinear); NaN quantises to the zero point.
template <typename Q>
GKRT_INLINE_BODY void quantRowBody(Q* q, const float* row, double rstd, const float* gamma, const float* beta,
                                   float scale, float zp, float lo, float hi, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    float v = static_cast<float>(row[k] * rstd * gamma[k]);
    if (beta) v += beta[k];
    const float t = v / scale;
    const float r = t == t ? std::nearbyint(t) : 0.0f;  // the default rounding mode: half to even
    q[k] = static_cast<Q>(std::min(std::max(r + zp, lo), hi));
  }
}
#ifdef GKRT_X86_TIERS
template <typename Q>
__attribute__((target("avx2"), flatten)) void quantRowOnAvx2(Q* q, const float* row, double rstd, const float* gamma,
                                                             const float* beta, float scale, float zp, float lo,
                                                             float hi, int64_t n) {
  quantRowBody(q, row, rstd, gamma, beta, scale, zp, lo, hi, n);
}
#endif
template <typename Q>
void quantRow(Q* q, const float* row, double rstd, const float* gamma, const float* beta, float scale, float zp,
              float lo, float hi, int64_t n) {
#ifdef GKRT_X86_TIERS
  static const bool avx2 = cpuTier().has(CpuIsa::kAvx2);
  if (avx2) return quantRowOnAvx2(q, row, rstd, gamma, beta, scale, zp, lo, hi, n);
#endif
  quantRowBody(q, row, rstd, gamma, beta, scale, zp, lo, hi, n);
}

class NormQuantKernel final : public Kernel {
 public:
  NormQuantKernel(const ir::Graph& g, const ir::Node& n, ThreadPool& pool) : pool_(pool), add_(is(n, "AddRmsNormQuant")) {
    const Shape& s = g.tensors[n.inputs[0]].shape;
    const int64_t axis = *normalizeAxis(n.attrs.get<NormAttrs>().axis, static_cast<int64_t>(s.size()));
    rows_ = cols_ = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? rows_ : cols_) *= s[d];
    eps_ = n.attrs.get<NormAttrs>().epsilon;
    unsigned_ = g.tensors[n.outputs[0]].dtype == DType::kUInt8;
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const int gi = add_ ? 2 : 1, si = add_ ? 3 : 2, bi = add_ ? -1 : 4;
    const float* x = in[0].as<float>();
    const float* x2 = add_ ? in[1].as<float>() : nullptr;
    const float* gamma = in[gi].as<float>();
    const float* beta = bi >= 0 && static_cast<int>(in.size()) > bi && in[bi].present() ? in[bi].as<float>() : nullptr;
    const float scale = in[si].as<float>()[0];
    const float zp = unsigned_ ? in[si + 1].as<uint8_t>()[0] : in[si + 1].as<int8_t>()[0];
    const float lo = unsigned_ ? 0.0f : -128.0f, hi = unsigned_ ? 255.0f : 127.0f;
    float* sum = add_ ? static_cast<float*>(out[1].data) : nullptr;
    auto* q = static_cast<uint8_t*>(out[0].data);
    const int64_t C = cols_;
    pool_.parallelFor(rows_, 1, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* row = x + r * C;
        if (add_) {
          float* s = sum + r * C;
          for (int64_t k = 0; k < C; ++k) s[k] = row[k] + x2[r * C + k];
          row = s;
        }
        double ms = 0.0;
        for (int64_t k = 0; k < C; ++k) ms += static_cast<double>(row[k]) * row[k];
        const double rstd = 1.0 / std::sqrt(ms / static_cast<double>(C) + eps_);
        if (unsigned_) quantRow(q + r * C, row, rstd, gamma, beta, scale, zp, lo, hi, C);
        else quantRow(reinterpret_cast<int8_t*>(q) + r * C, row, rstd, gamma, beta, scale, zp, lo, hi, C);
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  bool add_, unsigned_ = false;
  int64_t rows_ = 1, cols_ = 1;
  float eps_ = 0.0f;
};

}  // namespace

bool canRunPatternQuant(const ir::Graph& g, const ir::Node& node) {
  if (!is(node, "RmsNormQuant") && !is(node, "AddRmsNormQuant")) return false;
  const bool add = is(node, "AddRmsNormQuant");
  // x (x1, x2), gamma, scale and beta float32 (beta may be absent); the zero point int8/uint8.
  const int zp = add ? 4 : 3;
  for (int k = 0; k < static_cast<int>(node.inputs.size()); ++k) {
    const int t = node.inputs[k];
    if (k == zp) continue;
    if (t < 0 || g.tensors[t].dtype != DType::kFloat32) return false;
  }
  for (int t : node.outputs) if (t < 0 || !isStatic(g.tensors[t].shape)) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compilePatternQuant(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::unique_ptr<Kernel>(new NormQuantKernel(g, node, pool));
}

}  // namespace gkrt::cpu
