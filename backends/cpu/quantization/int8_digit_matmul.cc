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

// One row of A as three digit rows (int8_digit_matmul.h): x = a * inv, x = d1 - 128 +
// d2 / 256 + d3 / 65536 to within 0.5 / 65536. Returns the multiplier back to a's units
// (1 / inv), 0 for a row of zeros, NaN for a row holding an Inf or a NaN (its digits are
// then left as they were). Built per tier (cpu_tier.h), its loops vectorised.
GKRT_INLINE_BODY double splitRowBody(const float* __restrict a, int64_t k, uint8_t* __restrict d1,
                                     uint8_t* __restrict d2, uint8_t* __restrict d3) {
  float lane_max[16] = {0}, lane_nan[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    for (int j = 0; j < 16; ++j) {
      const float v = std::fabs(a[i + j]);
      lane_max[j] = lane_max[j] < v ? v : lane_max[j];
      lane_nan[j] += a[i + j] * 0.0f;  // NaN from an Inf or a NaN
    }
  }
  float r = 0, bad = 0;
  for (int j = 0; j < 16; ++j) {
    r = std::max(r, lane_max[j]);
    bad += lane_nan[j];
  }
  for (; i < k; ++i) {
    r = std::max(r, std::fabs(a[i]));
    bad += a[i] * 0.0f;
  }
  if (!(bad == 0.0f)) return std::nan("");
  const float inv = r > 0 ? 127.0f / r : 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    const float x = a[j] * inv;  // |x| <= 127 (1 + 2^-23)
    const float f1 = std::floor(x);
    const float t = (x - f1) * 256.0f;
    const float f2 = std::floor(t);
    const float f3 = std::min(std::nearbyint((t - f2) * 256.0f), 255.0f);
    d1[j] = static_cast<uint8_t>(static_cast<int>(f1) + 128);
    d2[j] = static_cast<uint8_t>(static_cast<int>(f2));
    d3[j] = static_cast<uint8_t>(static_cast<int>(f3));
  }
  return r > 0 ? 1.0 / double(inv) : 0.0;
}
GKRT_TIERED(double, splitRow, (const float* a, int64_t k, uint8_t* d1, uint8_t* d2, uint8_t* d3), (a, k, d1, d2, d3),
            "avx512f,avx512bw,avx512dq,avx512vl", "avx2,fma")

// y[n] = mul * scale[n] * (p1[n] - offset[n] + p2[n] / 256 + p3[n] / 65536) + bias[n]
// (bias may be null), the digit sums combined in double (exact: under 2^47).
GKRT_INLINE_BODY void combineRowBody(const int32_t* __restrict p1, const int32_t* __restrict p2,
                                     const int32_t* __restrict p3, const int32_t* __restrict offset,
                                     const double* __restrict scale, double mul, const float* __restrict bias,
                                     float* __restrict y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const double v = double(p1[j] - offset[j]) + double(p2[j]) * (1.0 / 256) + double(p3[j]) * (1.0 / 65536);
    const double b = bias ? double(bias[j]) : 0.0;
    y[j] = static_cast<float>(v * (mul * scale[j]) + b);
  }
}
GKRT_TIERED(void, combineRow,
            (const int32_t* p1, const int32_t* p2, const int32_t* p3, const int32_t* offset, const double* scale,
             double mul, const float* bias, float* y, int64_t n),
            (p1, p2, p3, offset, scale, mul, bias, y, n), "avx512f,avx512bw,avx512dq,avx512vl", "avx2,fma")

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

  // False where oneDNN has no AMX int8 matmul for the digit products.
  bool build(const MatMulPlan& p, const std::vector<int8_t>& q, std::vector<double> scale) {
    w_ = static_cast<const float*>(p.sb.constant);
    tb_ = p.tb;
    alpha_ = p.alpha;
    scale_ = std::move(scale);
    for (double& s : scale_) s *= double(p.alpha);
    offset_.assign(size_t(n_), 0);
    for (int64_t k = 0; k < k_; ++k) {
      for (int64_t n = 0; n < n_; ++n) offset_[size_t(n)] += 128 * int32_t(q[size_t(k * n_ + n)]);
    }
    dnnl::engine& eng = oneDnnEngine();
    const dnnl::memory::desc src({rows_, k_}, dt::u8, tag::ab), dst({rows_, n_}, dt::s32, tag::ab);
    const dnnl::memory::desc w_any({k_, n_}, dt::s8, tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w_any, dst), eng);
    impl_ = pd.impl_info_str();
    if (impl_.find("amx") == std::string::npos) return false;
    stream_ = dnnl::stream(eng);
    dnnl::memory plain({{k_, n_}, dt::s8, tag::ab}, eng, const_cast<int8_t*>(q.data()));
    w_mem_ = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(plain, w_mem_).execute(stream_, plain, w_mem_);
    stream_.wait();
    prim_ = dnnl::matmul(pd);
    src_mem_ = dnnl::memory(src, eng, DNNL_MEMORY_NONE);
    dst_mem_ = dnnl::memory(dst, eng, DNNL_MEMORY_NONE);
    return true;
  }

  Source a, bias, residual;
  bool has_bias = false, has_residual = false, gelu_tail = false;
  std::vector<Step> steps;

  size_t workspaceBytes() const override { return digitBytes() * 3 + productBytes() * 3 + 64; }
  std::string detail() const override { return "oneDNN " + impl_ + ", float32 activations as three int8 digits"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float* x = static_cast<const float*>(a.at(in));
    float* y = static_cast<float*>(out[0].data);
    uint8_t* digits = static_cast<uint8_t*>(ws);
    int32_t* products = reinterpret_cast<int32_t*>(digits + 3 * digitBytes());
    row_mul_.resize(size_t(rows_));
    const int64_t plane = digitBytes();
    pool_->parallelFor(rows_, 1, 4, [&](int, int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        uint8_t* d = digits + m * k_;
        row_mul_[size_t(m)] = splitRow(x + m * k_, k_, d, d + plane, d + 2 * plane);
      }
    });
    for (int p = 0; p < 3; ++p) {
      src_mem_.set_data_handle(digits + p * plane);
      dst_mem_.set_data_handle(products + p * rows_ * n_);
      args_.set(DNNL_ARG_SRC, src_mem_);
      args_.set(DNNL_ARG_WEIGHTS, w_mem_);
      args_.set(DNNL_ARG_DST, dst_mem_);
      args_.execute(prim_, stream_);
    }
    stream_.wait();
    const float* b = has_bias ? static_cast<const float*>(bias.at(in)) : nullptr;
    const float* res = !has_residual ? nullptr : static_cast<const float*>(residual.at(in));
    pool_->parallelFor(rows_, 1, 4, [&](int, int64_t lo, int64_t hi) {
      for (int64_t m = lo; m < hi; ++m) {
        float* row = y + m * n_;
        const double mul = row_mul_[size_t(m)];
        if (std::isnan(mul)) {
          floatRow(x + m * k_, b, row);
        } else {
          const int32_t* p1 = products + m * n_;
          combineRow(p1, p1 + rows_ * n_, p1 + 2 * rows_ * n_, offset_.data(), scale_.data(), mul, b, row, n_);
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
  int64_t productBytes() const { return (rows_ * n_ * 4 + 63) / 64 * 64; }

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
  std::vector<double> scale_;    // per column, times the product's alpha
  std::vector<int32_t> offset_;  // 128 * the column's sum of q: d1 carries 128 on every value
  std::vector<double> row_mul_;
  std::string impl_;
  dnnl::stream stream_;
  dnnl::matmul prim_;
  dnnl::memory w_mem_, src_mem_, dst_mem_;
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
    if (!kernel->build(p, q, std::move(scale))) return nullptr;
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
