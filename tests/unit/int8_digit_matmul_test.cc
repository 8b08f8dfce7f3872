// The int8-digit matmul (backends/cpu/quantization/int8_digit_matmul.h): float32
// activations times weights that are int8 integers times column scales, as three exact
// int8 products on AMX. Where the CPU tier has AMX the kernel takes such products and
// their results are within 2^-22 of the row's scale times the column's weight mass of the
// exact (double) product: closer than a float32 GEMM is bound to be; rows with an Inf or
// a NaN give IEEE's results. Float weights, and tiers without AMX, keep the float32 kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/builder.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

const char kDigits[] = "three int8 digits";

#ifdef GKRT_HAVE_DNNL
bool digitsExpected() { return cpu::cpuTier().has(cpu::CpuIsa::kAvx512Amx); }
#else
bool digitsExpected() { return false; }  // a build without oneDNN (the Arm cross builds)
#endif

std::vector<int8_t> randomQ(int64_t n, int limit, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-limit, limit);
  std::vector<int8_t> q(static_cast<size_t>(n));
  for (int8_t& v : q) v = int8_t(u(rng));
  return q;
}

std::vector<float> randomScales(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.001f, 0.02f);
  std::vector<float> s(static_cast<size_t>(n));
  for (float& v : s) v = u(rng);
  return s;
}

// Activations [rows, k]: row r normal(0, 1) times 10^(r % 7 - 3), every 9th value of
// every 5th row 50 times larger (transformer-style outliers).
std::vector<float> activations(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    const float mag = std::pow(10.0f, float(r % 7 - 3));
    for (int64_t i = 0; i < k; ++i) x[size_t(r * k + i)] = nd(rng) * mag * (r % 5 == 0 && i % 9 == 0 ? 50.0f : 1.0f);
  }
  return x;
}

// Whether y is within the digit path's bound of the exact product `exact` of row x and
// column w: 2^-22 * max|x| * sum|w| (the digits' and the combination's rounding) plus
// 2^-23 |exact| + `more`.
bool withinBound(double y, double exact, double row_max, double weight_mass, double more) {
  return std::fabs(y - exact) <= 0x1p-22 * row_max * weight_mass + 0x1p-23 * std::fabs(exact) + more;
}

#ifdef GKRT_HAVE_DNNL
// One BatchMatMul with constant weights compiled alone: per-column int8 scales (weights
// [K, N]), one scale for the tensor with |q| <= 100 (weights stored [N, K], transposed),
// and float weights. Rows: zeros, an Inf, a NaN, then magnitudes from 1e-3 to 1e3 (row 4
// times 1e-38: down to subnormals).
TEST(Int8DigitMatMul, IntegerWeightsTakeTheDigitProductsWithinFloat32Accuracy) {
  const int64_t M = 64, K = 300, N = 130;
  struct Case {
    bool tb, per_tensor, float_weights;
  };
  for (const Case& c : std::vector<Case>{{false, false, false}, {true, true, false}, {false, false, true}}) {
    const std::string what = std::string(c.tb ? "transposed" : "plain") +
                             (c.per_tensor ? ", one scale" : ", column scales") +
                             (c.float_weights ? ", float weights" : "");
    const std::vector<int8_t> q = randomQ(K * N, c.per_tensor ? 100 : 127, 5);
    const std::vector<float> s = randomScales(N, 6);
    std::vector<float> wt(size_t(K * N));  // w[k][n] as the graph folds it: float(q s)
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) {
        const float w =
            c.float_weights ? nd(rng) * 0.01f : float(q[size_t(k * N + n)]) * (c.per_tensor ? s[0] : s[size_t(n)]);
        wt[size_t(c.tb ? n * K + k : k * N + n)] = w;
      }
    }
    auto w = [&](int64_t k, int64_t n) { return double(wt[size_t(c.tb ? n * K + k : k * N + n)]); };
    GraphBuilder b;
    Value a = b.input("a", DType::kFloat32, {1, M, K});
    const Shape ws = c.tb ? Shape{N, K} : Shape{K, N};
    b.output(b.op1("BatchMatMul", {a, b.constant("w", DType::kFloat32, ws, wt.data())}, MatMulAttrs{false, c.tb}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    cpu::ThreadPool pool(2);
    auto kernel = cpu::compileOneDnn(*g, g->nodes[0], false, &pool);
    ASSERT_TRUE(kernel.ok()) << kernel.status().toString();
    const std::string detail = (*kernel)->detail();
    EXPECT_EQ(detail.find(kDigits) != std::string::npos, digitsExpected() && !c.float_weights)
        << what << ": " << detail;

    std::vector<float> x = activations(M, K, 8);
    for (int64_t i = 0; i < K; ++i) x[size_t(i)] = 0.0f;
    x[size_t(K + 5)] = std::numeric_limits<float>::infinity();
    x[size_t(2 * K + 7)] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < K; ++i) x[size_t(4 * K + i)] *= 1e-38f;  // subnormal and tiny: the float32 row
    HostTensor y(DType::kFloat32, {1, M, N});
    std::vector<char> scratch((*kernel)->workspaceBytes() + 64);
    ASSERT_TRUE((*kernel)
                    ->launch({TensorView{DType::kFloat32, {1, M, K}, x.data()}},
                             {MutableTensorView{DType::kFloat32, y.shape(), y.data()}}, scratch.data())
                    .ok());
    const float* got = y.as<float>();
    int bad = 0;
    for (int64_t m = 0; m < M; ++m) {
      double row_max = 0;
      for (int64_t k = 0; k < K; ++k) row_max = std::max(row_max, std::fabs(double(x[size_t(m * K + k)])));
      for (int64_t n = 0; n < N && bad < 5; ++n) {
        const float v = got[m * N + n];
        if (m == 1) {  // Inf * w: +-Inf by w's sign, NaN where w is 0
          const double w5 = w(5, n);
          const bool ok = w5 == 0 ? std::isnan(v) : std::isinf(v) && (v > 0) == (w5 > 0);
          if (!ok) ++bad, ADD_FAILURE() << what << ": Inf row, column " << n << ": " << v << " (w " << w5 << ")";
          continue;
        }
        if (m == 2) {
          if (!std::isnan(v)) ++bad, ADD_FAILURE() << what << ": NaN row, column " << n << ": " << v;
          continue;
        }
        double exact = 0, mass = 0;
        for (int64_t k = 0; k < K; ++k) {
          exact += double(x[size_t(m * K + k)]) * w(k, n);
          mass += std::fabs(w(k, n));
        }
        // Float weights run as float32 GEMMs: their bound is the GEMM's (K roundings).
        const double more = c.float_weights ? 1e-6 * row_max * mass : 0.0;
        if (!withinBound(v, exact, row_max, mass, more)) {
          ++bad;
          ADD_FAILURE() << what << ": row " << m << ", column " << n << ": " << v << " against " << exact << " (error "
                        << std::fabs(v - exact) / (row_max * mass) << " of max|x| sum|w|)";
        }
      }
    }
  }
}

#endif  // GKRT_HAVE_DNNL

double gelu(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

// Through a session, the weights as an exporter writes them (Cast, then Mul by the
// scales: folded at compile): GeLU(x1 W1 + b) and ReLU(x2 W2) + r, each one kernel on
// the digit products where the tier has AMX, each within the bound of the exact result
// (GeLU's: plus its erf's 4.5e-7).
TEST(Int8DigitMatMul, BiasGeluAndReluResidualChainsRunOnTheDigitProducts) {
  const int64_t M = 64, K = 256, N = 160;
  const std::vector<int8_t> q1 = randomQ(K * N, 127, 11), q2 = randomQ(K * N, 90, 12);
  const std::vector<float> s1 = randomScales(N, 13), s2 = randomScales(1, 14);
  std::vector<float> bias(static_cast<size_t>(N));
  std::mt19937 rng(15);
  std::normal_distribution<float> nd;
  for (float& v : bias) v = nd(rng);
  GraphBuilder b;
  Value x1 = b.input("x1", DType::kFloat32, {1, M, K}), x2 = b.input("x2", DType::kFloat32, {1, M, K});
  Value r = b.input("r", DType::kFloat32, {1, M, N});
  auto weights = [&](const char* name, const std::vector<int8_t>& q, const std::vector<float>& s) {
    Value wq = b.op1("Cast", {b.constant(std::string(name) + "_q", DType::kInt8, {K, N}, q.data())},
                     CastAttrs{DType::kFloat32});
    const int64_t cols = int64_t(s.size());
    return b.op1("Mul", {wq, b.constant(std::string(name) + "_s", DType::kFloat32, {1, cols}, s.data())});
  };
  Value p1 = b.op1("BatchMatMul", {x1, weights("w1", q1, s1)}, MatMulAttrs{});
  Value y1 = b.op1("GeLU", {b.op1("Add", {p1, b.constant("bias", DType::kFloat32, {N}, bias.data())})},
                   GeluAttrs{GeluApprox::kNone});
  Value p2 = b.op1("BatchMatMul", {x2, weights("w2", q2, s2)}, MatMulAttrs{});
  Value y2 = b.op1("Add", {b.op1("ReLU", {p2}), r});
  b.output(y1, "y1");
  b.output(y2, "y2");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const std::vector<float> a1 = activations(M, K, 16), a2 = activations(M, K, 17);
  const HostTensor rt = testing::randomTensor({1, M, N}, 18);
  HostTensor t1(DType::kFloat32, {1, M, K}), t2(DType::kFloat32, {1, M, K});
  std::copy(a1.begin(), a1.end(), t1.as<float>());
  std::copy(a2.begin(), a2.end(), t2.as<float>());
  SessionOptions opts;
  opts.backend = "cpu";
  opts.fusion = testing::optLevel(2);
  auto run = testing::runWithKernels(*g, {t1, t2, rt}, opts);
  ASSERT_TRUE(run.ok()) << run.status().toString();
  EXPECT_EQ(run->countDetail(kDigits), digitsExpected() ? 2 : 0) << run->details;
  int bad = 0;
  for (int out = 0; out < 2; ++out) {
    const std::vector<float>& a = out == 0 ? a1 : a2;
    const std::vector<int8_t>& q = out == 0 ? q1 : q2;
    const float* got = run->outputs[size_t(out)].as<float>();
    for (int64_t m = 0; m < M; ++m) {
      double row_max = 0;
      for (int64_t k = 0; k < K; ++k) row_max = std::max(row_max, std::fabs(double(a[size_t(m * K + k)])));
      for (int64_t n = 0; n < N && bad < 5; ++n) {
        const double s = out == 0 ? s1[size_t(n)] : s2[0];
        double exact = 0, mass = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double w = double(float(q[size_t(k * N + n)]) * float(s));
          exact += double(a[size_t(m * K + k)]) * w;
          mass += std::fabs(w);
        }
        double want, more;
        if (out == 0) {
          want = gelu(exact + bias[size_t(n)]);
          more = 4.5e-7 * std::fabs(exact + bias[size_t(n)]) + 0x1p-23 * std::fabs(bias[size_t(n)]);
        } else {
          const double res = rt.as<float>()[m * N + n];
          want = std::max(exact, 0.0) + res;
          more = 0x1p-23 * std::fabs(res);
        }
        if (!withinBound(got[m * N + n], want, row_max, mass, more)) {
          ++bad;
          ADD_FAILURE() << "y" << out + 1 << " row " << m << ", column " << n << ": " << got[m * N + n] << " against "
                        << want;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gkrt
