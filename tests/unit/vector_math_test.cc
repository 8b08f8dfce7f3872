// The cpu backend's vector math against double-precision libm, on sweeps that cross
// every vector width's tail, with NaN, infinities and values past the clamps.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/isa/vector_math.h"

namespace gkrt {
namespace {

double maxAbsError(cpu::VecFn fn, double (*ref)(double), const std::vector<float>& x) {
  std::vector<float> y(x.size());
  cpu::vecMath(fn, y.data(), x.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref(x[i])));
  return worst;
}

TEST(VectorMath, ErfWithinHalfAMicroOfLibm) {
  std::vector<float> x;
  for (int k = -600000; k <= 600000; ++k) x.push_back(k * 1e-5f);  // [-6, 6]
  for (float t = 1e-30f; t < 1e-2f; t *= 1.5f) { x.push_back(t); x.push_back(-t); }
  for (float big : {7.0f, 1e10f, -1e30f, std::numeric_limits<float>::infinity()}) x.push_back(big);
  x.push_back(-std::numeric_limits<float>::infinity());
  x.resize(x.size() + 5, 0.5f);  // a tail shorter than any vector
  EXPECT_LT(maxAbsError(cpu::VecFn::kErf, std::erf, x), 5e-7);
  // relative error near 0, where erf(x) ~ 1.128 x
  std::vector<float> tiny = {1e-20f, -3e-12f, 2e-7f};
  std::vector<float> y(tiny.size());
  cpu::vecMath(cpu::VecFn::kErf, y.data(), tiny.data(), 3);
  for (size_t i = 0; i < tiny.size(); ++i) EXPECT_NEAR(y[i] / std::erf(double(tiny[i])), 1.0, 1e-6) << tiny[i];
  std::vector<float> nan = {std::nanf(""), 1.0f, std::nanf("")};
  cpu::vecMath(cpu::VecFn::kErf, nan.data(), nan.data(), 3);  // in place
  EXPECT_TRUE(std::isnan(nan[0]) && std::isnan(nan[2]));
  EXPECT_NEAR(nan[1], std::erf(1.0), 5e-7);
}

TEST(VectorMath, ExpLogTanhSinCosWithinTwoUlpOfLibm) {
  std::vector<float> x;
  for (int k = -8000; k <= 8000; ++k) x.push_back(k * 1e-3f);  // [-8, 8]
  const double scale = 2 * std::numeric_limits<float>::epsilon();
  auto rel = [&](cpu::VecFn fn, double (*ref)(double), const std::vector<float>& in) {
    std::vector<float> y(in.size());
    cpu::vecMath(fn, y.data(), in.data(), static_cast<int64_t>(in.size()));
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double r = ref(in[i]);
      worst = std::max(worst, std::fabs(y[i] - r) / std::max(std::fabs(r), 1e-3));
    }
    return worst;
  };
  EXPECT_LT(rel(cpu::VecFn::kExp, std::exp, x), scale);
  EXPECT_LT(rel(cpu::VecFn::kTanh, std::tanh, x), scale);
  EXPECT_LT(rel(cpu::VecFn::kSin, std::sin, x), scale);
  EXPECT_LT(rel(cpu::VecFn::kCos, std::cos, x), scale);
  // tanh: relative error near 0 (tanh(x) ~ x), around its switch at |x| = 0.9, NaN, +-1 far out
  std::vector<float> t = {1e-30f, -3e-12f, 2e-7f, -1e-4f, 0.0123f, 0.8999f, -0.9f, 0.9001f, 20.0f, -1e30f};
  for (float v = 0.85f; v < 0.95f; v += 1e-5f) t.push_back(v);
  std::vector<float> ty(t.size());
  cpu::vecMath(cpu::VecFn::kTanh, ty.data(), t.data(), static_cast<int64_t>(t.size()));
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(ty[i] / std::tanh(double(t[i])), 1.0, scale) << t[i];
  std::vector<float> odd = {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  cpu::vecMath(cpu::VecFn::kTanh, odd.data(), odd.data(), 3);  // in place
  EXPECT_TRUE(std::isnan(odd[0]));
  EXPECT_EQ(odd[1], 1.0f);
  EXPECT_EQ(odd[2], -1.0f);
  std::vector<float> pos;
  for (int k = 1; k <= 16000; ++k) pos.push_back(k * 1e-2f);
  EXPECT_LT(rel(cpu::VecFn::kLog, std::log, pos), scale);
}

}  // namespace
}  // namespace gkrt
