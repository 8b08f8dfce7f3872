// Subnormal float32 weights read as zero (runtime/ir/subnormal_weights.h): the cpu
// backend gets GEMM, convolution and recurrent weights with their values below 2^-126
// zeroed (x86 cores take ~100 cycles a multiply on them); a constant that anything other
// than such an input reads keeps its values; BackendOptions::cpu_zero_subnormal_weights
// off keeps them all; the reference backend keeps them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "runtime/builder.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/subnormal_weights.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

bool isSubnormal(float v) { return v != 0.0f && std::fpclassify(v) == FP_SUBNORMAL; }

std::vector<float> tensorValues(const ir::Graph& g, int t) {
  const ir::ConstData& c = *g.tensors[size_t(t)].constant;
  std::vector<float> v(c.size / 4);
  std::memcpy(v.data(), c.data, c.size);
  return v;
}

// The graph rule: product inputs only, the rest as it was (signs of zeros kept, NaN and
// Inf untouched); a constant shared with an Add, and a constant graph output, keep theirs.
TEST(SubnormalWeights, OnlyConstantsThatOnlyProductInputsReadAreZeroed) {
  const float tiny = 1e-40f, nan = std::nanf(""), inf = INFINITY;
  const std::vector<float> w = {1.0f, tiny, -tiny, 0.5f, nan, inf, -3e-39f, 2e-38f, 0.0f, -0.0f, 1e-45f, 7.0f};
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 3});
  Value wc = b.constant("w", DType::kFloat32, {3, 4}, w.data());
  Value shared = b.constant("shared", DType::kFloat32, {3, 4}, w.data());
  Value alone = b.constant("alone", DType::kFloat32, {2, 4}, w.data());
  Value y0 = b.op1("MatMul", {x, wc}, MatMulAttrs{});
  Value y1 = b.op1("MatMul", {x, shared}, MatMulAttrs{});
  b.output(b.op1("Add", {y0, alone}), "y0");
  b.output(y1, "y1");
  b.output(b.op1("Neg", {shared}), "y2");
  auto built = b.finish();
  ASSERT_TRUE(built.ok()) << built.status().toString();
  ir::Graph g = *built;
  auto idOf = [&](const std::string& name) {
    for (size_t t = 0; t < g.tensors.size(); ++t) if (g.tensors[t].name == name) return int(t);
    return -1;
  };
  const auto before_shared = g.tensors[size_t(idOf("shared"))].constant;
  const auto before_alone = g.tensors[size_t(idOf("alone"))].constant;
  EXPECT_EQ(ir::zeroSubnormalWeights(g), 4);  // tiny, -tiny, -3e-39, 1e-45
  const std::vector<float> got = tensorValues(g, idOf("w"));
  for (size_t i = 0; i < w.size(); ++i) {
    if (isSubnormal(w[i])) {
      EXPECT_EQ(got[i], 0.0f) << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(w[i])) << i;
    } else if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(std::memcmp(&got[i], &w[i], 4), 0) << i << ": " << got[i];
    }
  }
  EXPECT_EQ(g.tensors[size_t(idOf("shared"))].constant, before_shared);
  EXPECT_EQ(g.tensors[size_t(idOf("alone"))].constant, before_alone);
  EXPECT_EQ(ir::zeroSubnormalWeights(g), 0);  // nothing left to zero
}

// A 1x1 convolution in a fused cluster (Conv2D + Relu) whose output channel 3 has only
// subnormal weights and bias (a dead channel, as trained squeeze-excitation layers hold),
// and a MatMul with a dead column. The reference gives those outputs tiny nonzero values;
// the cpu backend gives exact zeros and the rest within float32 rounding of the
// reference; with the option off the cpu backend gives the tiny values too.
TEST(SubnormalWeights, TheCpuBackendReadsThemAsZeroUnlessAskedToKeepThem) {
  const int64_t C = 16, O = 8, H = 5, W = 7, N = 6;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.5f, 1.5f), s(-1.0f, 1.0f);
  std::vector<float> cw(size_t(O * C)), cb(static_cast<size_t>(O)), mw(size_t(C * N));
  for (float& v : cw) v = s(rng) * 0.2f;
  for (float& v : cb) v = s(rng) * 0.1f;
  for (float& v : mw) v = s(rng) * 0.2f;
  for (int64_t c = 0; c < C; ++c) {
    cw[size_t(3 * C + c)] = 1e-40f * float(1 + c % 5);        // channel 3: every weight subnormal
    if (c % 2) cw[size_t(5 * C + c)] = -2e-39f;                // channel 5: half of them
    mw[size_t(c * N + 2)] = 3e-41f * float(1 + c % 3);         // column 2 of the MatMul
  }
  cb[3] = 5e-41f;
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, C, H, W});
  Value y = b.op1("Conv2D", {x, b.constant("cw", DType::kFloat32, {O, C, 1, 1}, cw.data()),
                             b.constant("cb", DType::kFloat32, {O}, cb.data())}, Conv2DAttrs{});
  b.output(b.op1("Relu", {y}), "conv");
  Value rows = b.input("rows", DType::kFloat32, {9, C});
  b.output(b.op1("MatMul", {rows, b.constant("mw", DType::kFloat32, {C, N}, mw.data())}, MatMulAttrs{}), "mm");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor xin(DType::kFloat32, {1, C, H, W}), rin(DType::kFloat32, {9, C});
  for (int64_t i = 0; i < xin.size(); ++i) xin.as<float>()[i] = u(rng);
  for (int64_t i = 0; i < rin.size(); ++i) rin.as<float>()[i] = u(rng);

  auto want = testing::runGraph(*g, {xin, rin}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  const float* wc = (*want)[0].as<float>();
  const float* wm = (*want)[1].as<float>();
  for (int64_t p = 0; p < H * W; ++p) ASSERT_GT(wc[3 * H * W + p], 0.0f) << "the reference keeps the subnormals";
  for (int64_t r = 0; r < 9; ++r) ASSERT_GT(wm[r * N + 2], 0.0f);

  for (bool zero : {true, false}) {
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = 2;
    o.backend_options.cpu_zero_subnormal_weights = zero;
    auto got = testing::runWithKernels(*g, {xin, rin}, o);
    ASSERT_TRUE(got.ok()) << got.status().toString();
    EXPECT_EQ(testing::compareTensors(got->outputs[0], (*want)[0], 1e-5, 1e-6), "") << zero;
    EXPECT_EQ(testing::compareTensors(got->outputs[1], (*want)[1], 1e-5, 1e-6), "") << zero;
    const float* gc = got->outputs[0].as<float>();
    const float* gm = got->outputs[1].as<float>();
    for (int64_t p = 0; p < H * W; ++p) {
      if (zero) {
        EXPECT_EQ(gc[3 * H * W + p], 0.0f) << p << ": the dead channel reads zero weights";
      } else {
        EXPECT_GT(gc[3 * H * W + p], 0.0f) << p << ": kept, the weights give a tiny positive value";
      }
    }
    for (int64_t r = 0; r < 9; ++r) {
      if (zero) EXPECT_EQ(gm[r * N + 2], 0.0f) << r;
      else EXPECT_GT(gm[r * N + 2], 0.0f) << r;
    }
  }
}

}  // namespace
}  // namespace gkrt
