#include "backends/cpu/quantization/int8_digit_matmul.h"

#ifdef GKRT_HAVE_DNNL
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/vector_math.h"

namespace gkrt::cpu {
namespace {

// One row of A as three digit rows (int8_digit_matmul.h): x = a * inv, x = d1 + d2 / 256
// + d3 / 65536 to within 0.5 / 65536 (d1 in [-128, 127], d2 and d3 in [0, 255]).
// Returns the multiplier back to a's units (1 / inv), 0 for a row of zeros, NaN for a
// row holding an Inf or a NaN, or only values under 2^-100 (its digits are then left as
// they were: the caller computes it in float32). Built per tier
// (cpu_tier.h), its loops vectorised.
GKRT_INLINE_BODY double splitRowBody(const float* __restrict a, int64_t k, int8_t* __restrict d1,
                                     uint8_t* __restrict d2, uint8_t* __restrict d3) {
  // The largest |a| as bits (a non-negative float's bits order as its value; an Inf's or
  // a NaN's are 0x7f800000 and above): an integer max, which the compiler vectorises.
  uint32_t bits = 0;
  for (int64_t i = 0; i < k; ++i) {
    uint32_t u;
    std::memcpy(&u, a + i, sizeof u);
    u &= 0x7fffffffu;
    bits = bits > u ? bits : u;
  }
  float r;
  std::memcpy(&r, &bits, sizeof r);
  // An Inf or a NaN; or values so small that 127 / r would overflow: the float32 row.
  if (bits >= 0x7f800000u || (bits != 0 && r < 0x1p-100f)) return std::nan("");
  const float inv = r > 0 ? 127.0f / r : 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    const float x = a[j] * inv;  // |x| <= 127 (1 + 2^-23)
    const float f1 = std::floor(x);
    const float t = (x - f1) * 256.0f;
    const float f2 = std::floor(t);
    const float f3 = std::min(std::nearbyint((t - f2) * 256.0f), 255.0f);
    d1[j] = static_cast<int8_t>(static_cast<int>(f1));
    d2[j] = static_cast<uint8_t>(static_cast<int>(f2));
    d3[j] = static_cast<uint8_t>(static_cast<int>(f3));
  }
  return r > 0 ? 1.0 / double(inv) : 0.0;
}
GKRT_TIERED(double, splitRow, (const float* a, int64_t k, int8_t* d1, uint8_t* d2, uint8_t* d3), (a, k, d1, d2, d3),
            "avx512f,avx512bw,avx512dq,avx512vl", "avx2,fma")

// y[n] = y[n] * mul + bias[n] (bias may be null): the digit products, already summed
// and scaled per column by oneDNN, back to the row's units.
GKRT_INLINE_BODY void scaleRowBody(float* __restrict y, float mul, const float* __restrict bias, int64_t n) {
  if (bias) {
    for (int64_t j = 0; j < n; ++j) y[j] = y[j] * mul + bias[j];
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] *= mul;
  }
}
GKRT_TIERED(void, scaleRow, (float* y, float mul, const float* bias, int64_t n), (y, mul, bias, n),
            "avx512f,avx512bw,avx512dq,avx512vl", "avx2,fma")

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int64_t kMinRows = 16;                // one AMX tile's rows
constexpr int64_t kMinMacs = int64_t(1) << 21;  // smaller products: three launches cost more than they save
constexpr int64_t kMaxK = 65536;                // 255 * 127 * K < 2^31: the int32 sums stay exact

// w / s as a whole number q in [-127, 127] with |q s - w| <= 2^-20 |q s| (w == 0 for q == 0).
bool wholeMultiple(float w, double s, int8_t* q) {
  const double v = double(w) / s, r = std::nearbyint(v);
  if (!(std::fabs(r) <= 127.0) || !(std::fabs(v - r) <= std::fabs(r) * 0x1p-20)) return false;
  *q = static_cast<int8_t>(r);
  return true;
}

// W [K, N] (stored [N, K] when `tb`) as q [K, N] times one scale per column: the column's
// largest magnitude / j for the first j from 127 down that makes every entry a whole
// multiple (symmetric int8 per column: j = 127; one scale for the tensor: the column's
// largest |q|). False as soon as a column has none (float weights: at their first entries).
bool integerColumns(const float* w, int64_t K, int64_t N, bool tb, std::vector<int8_t>* q, std::vector<double>* scale) {
  auto at = [&](int64_t k, int64_t n) { return tb ? w[n * K + k] : w[k * N + n]; };
  std::vector<float> col_max(size_t(N), 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < N; ++n) {
      const float v = std::fabs(at(k, n));
      if (!(v <= 3.0e38f)) return false;  // Inf, NaN
      col_max[size_t(n)] = std::max(col_max[size_t(n)], v);
    }
  }
  q->assign(size_t(K * N), 0);
  scale->assign(size_t(N), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    const float m = col_max[size_t(n)];
    if (m == 0) continue;  // a column of zeros: q 0
    if (m < 1e-30f) return false;
    bool ok = false;
    for (int j = 127; j >= 1 && !ok; --j) {
      const double s = double(m) / j;
      ok = true;
      for (int64_t k = 0; k < K && ok; ++k) ok = wholeMultiple(at(k, n), s, &(*q)[size_t(k * N + n)]);
      if (ok) (*scale)[size_t(n)] = s;
    }
    if (!ok) return false;
  }
  return true;
}

enum class Step { kRelu, kResidual };

class Int8DigitMatMul final : public Kernel {
 public:
  Int8DigitMatMul(int64_t rows, int64_t k, int64_t n, ThreadPool* pool) : rows_(rows), k_(k), n_(n), pool_(pool) {}

  // False where oneDNN has no AMX int8 matmul for the digit products. Three primitives:
  // the last digit's product times scale / 65536 into y, then the middle one's times
  // scale / 256 added to it (a sum post-op), then the first digit's (s8) times scale.
  bool build(const MatMulPlan& p, const std::vector<int8_t>& q, const std::vector<double>& scale) {
    w_ = static_cast<const float*>(p.sb.constant);
    tb_ = p.tb;
    alpha_ = p.alpha;
    dnnl::engine& eng = oneDnnEngine();
    stream_ = dnnl::stream(eng);
    const dnnl::memory::desc dst({rows_, n_}, dt::f32, tag::ab), w_any({k_, n_}, dt::s8, tag::any);
    dnnl::memory plain({{k_, n_}, dt::s8, tag::ab}, eng, const_cast<int8_t*>(q.data()));
    const double weight[3] = {1.0, 1.0 / 256, 1.0 / 65536};
    for (int d = 2; d >= 0; --d) {
      const dnnl::memory::desc src({rows_, k_}, d == 0 ? dt::s8 : dt::u8, tag::ab);
      std::vector<float> scales(static_cast<size_t>(n_));
      for (int64_t n = 0; n < n_; ++n) scales[size_t(n)] = float(scale[size_t(n)] * double(p.alpha) * weight[d]);
      dnnl::primitive_attr attr;
      attr.set_output_scales(2, scales);
      if (d < 2) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w_any, dst), attr, eng);
      const std::string impl = pd.impl_info_str();
      if (impl.find("amx") == std::string::npos) return false;
      if (d == 2) impl_ = impl;
      // The reordered weights, once per layout oneDNN asks for (s8 and u8 sources alike on AMX).
      size_t at = 0;
      while (at < w_mems_.size() && w_mems_[at].get_desc() != pd.weights_desc()) ++at;
      if (at == w_mems_.size()) {
        w_mems_.emplace_back(pd.weights_desc(), eng);
        dnnl::reorder(plain, w_mems_.back()).execute(stream_, plain, w_mems_.back());
        stream_.wait();
      }
      weights_of_[d] = at;
      prims_[d] = dnnl::matmul(pd);
      src_mems_[d] = dnnl::memory(src, eng, DNNL_MEMORY_NONE);
    }
    dst_mem_ = dnnl::memory(dst, eng, DNNL_MEMORY_NONE);
    return true;
  }

  Source a, bias, residual;
  bool has_bias = false, has_residual = false, gelu_tail = false;
  std::vector<Step> steps;

  size_t workspaceBytes() const override { return digitBytes() * 3 + 64; }
  std::string detail() const override { return "oneDNN " + impl_ + ", float32 activations as three int8 digits"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float* x = static_cast<const float*>(a.at(in));
    float* y = static_cast<float*>(out[0].data);
    uint8_t* digits = static_cast<uint8_t*>(ws);
    row_mul_.resize(size_t(rows_));
    const int64_t plane = digitBytes();
    pool_->parallelFor(rows_, 1, 4, [&](int, int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        uint8_t* d = digits + m * k_;
        row_mul_[size_t(m)] = splitRow(x + m * k_, k_, reinterpret_cast<int8_t*>(d), d + plane, d + 2 * plane);
      }
    });
    dst_mem_.set_data_handle(y);
    for (int d = 2; d >= 0; --d) {
      src_mems_[d].set_data_handle(digits + d * plane);
      args_.set(DNNL_ARG_SRC, src_mems_[d]);
      args_.set(DNNL_ARG_WEIGHTS, w_mems_[weights_of_[d]]);
      args_.set(DNNL_ARG_DST, dst_mem_);
      args_.execute(prims_[d], stream_);
    }
    stream_.wait();
    const float* b = has_bias ? static_cast<const float*>(bias.at(in)) : nullptr;
    const float* res = !has_residual ? nullptr : static_cast<const float*>(residual.at(in));
    pool_->parallelFor(rows_, 1, 4, [&](int, int64_t lo, int64_t hi) {
      for (int64_t m = lo; m < hi; ++m) {
        float* row = y + m * n_;
        const double mul = row_mul_[size_t(m)];
        if (std::isnan(mul)) {  // an Inf, a NaN, or only tiny values
          floatRow(x + m * k_, b, row);
        } else {
          scaleRow(row, static_cast<float>(mul), b, n_);
        }
        for (Step s : steps) {
          if (s == Step::kRelu) {
            for (int64_t j = 0; j < n_; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
          } else {
            const float* r = res + m * n_;
            for (int64_t j = 0; j < n_; ++j) row[j] += r[j];
          }
        }
      }
    });
    if (gelu_tail) {
      pool_->parallelFor(rows_ * n_, 1024, 16384,
                         [&](int, int64_t lo, int64_t hi) { geluErfInPlace(y + lo, hi - lo); });
    }
    return Status::Ok();
  }

 private:
  int64_t digitBytes() const { return (rows_ * k_ + 63) / 64 * 64; }

  // A row holding an Inf or a NaN, from the float32 weights as the product is defined
  // (Inf * 0 is NaN).
  void floatRow(const float* x, const float* b, float* row) const {
    std::vector<double> acc(size_t(n_), 0.0);
    for (int64_t k = 0; k < k_; ++k) {
      for (int64_t n = 0; n < n_; ++n) acc[size_t(n)] += double(x[k]) * double(tb_ ? w_[n * k_ + k] : w_[k * n_ + n]);
    }
    for (int64_t n = 0; n < n_; ++n) row[n] = static_cast<float>(alpha_ * acc[size_t(n)]) + (b ? b[n] : 0.0f);
  }

  int64_t rows_, k_, n_;
  ThreadPool* pool_;
  const float* w_ = nullptr;  // the float32 weights (the model's constant), for rows with an Inf or a NaN
  bool tb_ = false;
  float alpha_ = 1.0f;
  std::vector<double> row_mul_;
  std::string impl_;
  dnnl::stream stream_;
  dnnl::matmul prims_[3];  // per digit
  dnnl::memory src_mems_[3], dst_mem_;
  std::vector<dnnl::memory> w_mems_;  // the weights in each layout the primitives take
  size_t weights_of_[3] = {0, 0, 0};
  OneDnnArgs args_;
};

}  // namespace

std::unique_ptr<Kernel> makeInt8DigitMatMul(const MatMulPlan& p, ThreadPool* pool) {
  if (!pool || !p.sb.constant || p.ta || !cpuTier().has(CpuIsa::kAvx512Amx)) return nullptr;
  const Shape& as = p.a->shape;
  const Shape& bs = p.b->shape;
  if (as.size() < 2 || bs.size() < 2) return nullptr;
  for (size_t i = 0; i + 2 < bs.size(); ++i) {
    if (bs[i] != 1) return nullptr;  // one weight matrix
  }
  const int64_t k = as.back(), n = p.y.back();
  if (bs[bs.size() - (p.tb ? 1 : 2)] != k || bs[bs.size() - (p.tb ? 2 : 1)] != n) return nullptr;
  const int64_t rows = numElements(as) / k;
  if (numElements(p.y) != rows * n || rows < kMinRows || k > kMaxK || rows * k * n < kMinMacs) return nullptr;
  // The chain: a bias row first, then ReLU and residual adds, an erf GeLU last.
  std::vector<PostOp> posts = p.posts;
  bool has_bias = false, gelu = false;
  Source bias, residual;
  if (!posts.empty() && rowBias(posts.front(), p.y)) {
    bias = posts.front().src;
    has_bias = true;
    posts.erase(posts.begin());
  }
  if (!posts.empty() && !posts.back().binary && posts.back().alg == dnnl::algorithm::eltwise_gelu_erf) {
    gelu = true;
    posts.pop_back();
  }
  std::vector<Step> steps;
  int residuals = 0;
  for (const PostOp& po : posts) {
    if (!po.binary && po.alg == dnnl::algorithm::eltwise_relu && po.alpha == 0.0f) {
      steps.push_back(Step::kRelu);
    } else if (po.binary && po.alg == dnnl::algorithm::binary_add && po.layout == tag::undef && po.t &&
               po.t->dtype == DType::kFloat32 && po.t->shape == p.y && residuals++ == 0) {
      steps.push_back(Step::kResidual);
      residual = po.src;
    } else {
      return nullptr;
    }
  }
  std::vector<int8_t> q;
  std::vector<double> scale;
  if (!integerColumns(static_cast<const float*>(p.sb.constant), k, n, p.tb, &q, &scale)) return nullptr;
  auto kernel = std::make_unique<Int8DigitMatMul>(rows, k, n, pool);
  try {
    if (!kernel->build(p, q, scale)) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  kernel->a = p.sa;
  kernel->bias = bias;
  kernel->has_bias = has_bias;
  kernel->residual = residual;
  kernel->has_residual = residuals > 0;
  kernel->gelu_tail = gelu;
  kernel->steps = std::move(steps);
  return kernel;
}

}  // namespace gkrt::cpu
#endif
