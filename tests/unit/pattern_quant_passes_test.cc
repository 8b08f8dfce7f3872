// The quantised RmsNorm pattern passes of Appendix 3: rms_norm_quant_fusion and
// add_rms_norm_quant_fusion turn RmsNorm (+ beta) -> QuantizeLinear and
// Add -> RmsNorm -> QuantizeLinear into RmsNormQuant / AddRmsNormQuant; near misses are
// left alone; `disable_pass` keeps the unfused ops; the int8 outputs equal the unfused
// graph's exactly on reference and cpu (they compute the row in double in one order) and
// within one step on opencl and cuda (their rendered kernels, codegen/pattern_kernels.h,
// work in float32: a value within rounding of a .5 edge may land one step away; the ops
// run on the device there, checked below). inference_qbmm_add_fusion
// turns the QDQ form of QuantBatchMatmul + Add into QuantBatchMatMul (opencl and cuda run
// it with a rendered int32-sum GEMM), and BlockQuantMatMul (MatMulNBits) + Add into
// BlockQuantMatMul with its bias input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

struct QuantNormSpec {
  bool residual = false;      // Add(x1, x2) before the RmsNorm
  bool beta = false;          // Add(y, beta) after it
  bool sum_output = false;    // the residual sum is also a graph output
  bool y_output = false;      // RmsNorm's y is also a graph output (a second reader)
  bool per_axis = false;      // per-channel scale: not MindSpore's QuantV2, no fusion
  DType q = DType::kInt8;
};

ir::Graph quantNormGraph(const QuantNormSpec& s) {
  GraphBuilder b;
  constexpr int64_t kRows = 6, kCols = 40;
  Value x = b.input("x", DType::kFloat32, {kRows, kCols});
  if (s.residual) x = b.add(x, b.input("x2", DType::kFloat32, {kRows, kCols}));
  std::vector<float> gamma(kCols), beta(kCols), scales(kCols, 0.02f);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (float& v : gamma) v = u(rng);
  for (float& v : beta) v = 0.3f * u(rng);
  NormAttrs na;
  na.axis = -1;
  na.epsilon = 1e-5f;
  Value y = b.op("RmsNorm", {x, b.constant("gamma", DType::kFloat32, {kCols}, gamma.data())}, na, 2)[0];
  if (s.y_output) b.output(y, "y");
  if (s.beta) y = b.add(y, b.constant("beta", DType::kFloat32, {kCols}, beta.data()));
  const float scale = 0.015f;
  const int8_t zp8 = 3;
  const uint8_t zpu = 128;
  QuantAttrs qa{1, 0, true, s.q, DType::kFloat32};  // per axis: axis 1, the columns
  Value sc = s.per_axis ? b.constant("scale", DType::kFloat32, {kCols}, scales.data())
                        : b.constant("scale", DType::kFloat32, {}, &scale);
  std::vector<uint8_t> zps(kCols, s.q == DType::kInt8 ? static_cast<uint8_t>(zp8) : zpu);
  Value zp = s.per_axis ? b.constant("zp", s.q, {kCols}, zps.data()) : b.constant("zp", s.q, {}, zps.data());
  b.output(b.op1("QuantizeLinear", {y, sc, zp}, qa), "q");
  if (s.residual && s.sum_output) b.output(x, "sum");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}


StatusOr<ir::Graph> compiled(const ir::Graph& g, const std::string& flags, const std::string& backend = "cpu") {
  SessionOptions opts;
  opts.backend = backend;
  ASSIGN_OR_RETURN(opts.fusion, parseFusionFlags(flags));
  ASSIGN_OR_RETURN(auto session, Session::create(g, opts));
  return session->compiledGraph();
}

std::vector<HostTensor> inputsFor(const ir::Graph& g) {
  std::vector<HostTensor> in;
  uint32_t seed = 11;
  for (int t : g.inputs) in.push_back(testing::randomTensor(g.tensors[t].shape, seed++));
  return in;
}

// The outputs of the fused graph against the unfused graph's (reference, fusion off): the
// int8 output exactly, float outputs (the sum, a read RmsNorm y) within 1e-5 relative —
// except where the cpu backend runs an unfused RmsNorm in float32 (a near miss), whose
// 1-ulp differences may move a value across a rounding tie: one step there; the GPU
// backends' float32 kernels: one step.
void expectExact(const ir::Graph& g, const std::string& flags, int q_steps = 0) {
  const auto in = inputsFor(g);
  auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const std::string& backend : availableBackends()) {
    auto got = testing::runGraph(g, in, backend, *parseFusionFlags(flags));
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t k = 0; k < want->size(); ++k) {
      const HostTensor &a = (*got)[k], &b = (*want)[k];
      if (b.dtype() != DType::kInt8 && b.dtype() != DType::kUInt8) {
        EXPECT_EQ(testing::compareTensors(a, b, 1e-5, 1e-6), "") << backend << " output " << k;
        continue;
      }
      ASSERT_EQ(a.dtype(), b.dtype());
      ASSERT_EQ(a.shape(), b.shape());
      const std::vector<float> x = a.toFloats(), y = b.toFloats();
      float worst = 0.0f;
      for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
      const bool device = backend == "opencl" || backend == "cuda";
      EXPECT_LE(worst, backend == "reference" ? 0 : device ? std::max(q_steps, 1) : q_steps) << backend << " output " << k;
    }
  }
}

TEST(PatternQuantNorm, RmsNormWithBetaThenQuantizeBecomesRmsNormQuant) {
  for (DType q : {DType::kInt8, DType::kUInt8}) {
    for (bool beta : {true, false}) {  // MindSpore's form has beta; gkrt also takes RmsNorm -> Quantize
      QuantNormSpec s;
      s.beta = beta;
      s.q = q;
      const ir::Graph g = quantNormGraph(s);
      auto f = compiled(g, "--fusion_profile=ascend");
      ASSERT_TRUE(f.ok()) << f.status().message();
      EXPECT_EQ(testing::countOps(*f, "RmsNormQuant"), 1) << "beta " << beta;
      EXPECT_EQ(testing::countOps(*f, "QuantizeLinear") + testing::countOps(*f, "RmsNorm"), 0);
      EXPECT_EQ(f->nodes.size(), 1u);
      expectExact(g, "--fusion_profile=ascend");
    }
  }
}

// opencl runs RmsNormQuant, AddRmsNormQuant and QuantBatchMatMul itself (the rendered
// kernels), not on the host fallback.
ir::Graph qbmmAddGraph(bool int32_bias, bool per_column = true);
TEST(PatternQuantNorm, OpenClRunsThemOnTheDevice) {
  const std::vector<std::string> backends = availableBackends();
  if (std::find(backends.begin(), backends.end(), "opencl") == backends.end()) GTEST_SKIP() << "no OpenCL platform";
  QuantNormSpec plain, add;
  add.residual = true;
  const std::vector<std::pair<ir::Graph, const char*>> cases = {
      {quantNormGraph(plain), "RmsNormQuant"}, {quantNormGraph(add), "AddRmsNormQuant"}, {qbmmAddGraph(true), "QuantBatchMatMul"}};
  for (const auto& [g, op] : cases) {
    auto on = testing::backendsRunning(g, op, "opencl", "--fusion_profile=ascend");
    ASSERT_TRUE(on.ok()) << on.status().message();
    EXPECT_EQ(*on, std::vector<std::string>{"opencl"}) << op;
  }
}

TEST(PatternQuantNorm, AddRmsNormThenQuantizeBecomesAddRmsNormQuant) {
  for (bool sum_output : {false, true}) {
    QuantNormSpec s;
    s.residual = true;
    s.sum_output = sum_output;  // the pattern op outputs the sum for its other readers
    const ir::Graph g = quantNormGraph(s);
    auto f = compiled(g, "--fusion_profile=ascend");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(*f, "AddRmsNormQuant"), 1);
    EXPECT_EQ(f->nodes.size(), 1u);
    expectExact(g, "--fusion_profile=ascend");
  }
}

TEST(PatternQuantNorm, NearMissesAreLeftAlone) {
  QuantNormSpec per_axis;  // per-channel scale: MindSpore's QuantV2 here is per tensor
  per_axis.per_axis = true;
  QuantNormSpec y_read;  // RmsNorm's y has a second reader
  y_read.y_output = true;
  QuantNormSpec y_read_residual = y_read;
  y_read_residual.residual = true;
  for (const QuantNormSpec& s : {per_axis, y_read, y_read_residual}) {
    const ir::Graph g = quantNormGraph(s);
    auto f = compiled(g, "--fusion_profile=ascend");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(*f, "RmsNormQuant") + testing::countOps(*f, "AddRmsNormQuant"), 0);
    EXPECT_EQ(testing::countOps(*f, "QuantizeLinear"), 1);
    expectExact(g, "--fusion_profile=ascend", 1);
  }
}

TEST(PatternQuantNorm, DisablePassKeepsTheUnfusedOpsAndCpuRunsThemByDefault) {
  QuantNormSpec s;
  s.residual = true;
  const ir::Graph g = quantNormGraph(s);
  for (const char* name : {"add_rms_norm_quant_fusion", "fusion_group_9_add_rms_norm_quant_fusion"}) {
    // Without it, rms_norm_quant_fusion takes RmsNorm -> Quantize and the Add stays apart.
    auto f = compiled(g, std::string("--fusion_profile=ascend --disable_pass=") + name);
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(*f, "AddRmsNormQuant"), 0) << name;
    EXPECT_EQ(testing::countOps(*f, "RmsNormQuant"), 1) << name;
    expectExact(g, std::string("--fusion_profile=ascend --disable_pass=") + name);
  }
  auto both = compiled(g, "--fusion_profile=ascend --disable_pass=add_rms_norm_quant_fusion,rms_norm_quant_fusion");
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(testing::countOps(*both, "QuantizeLinear"), 1);
  EXPECT_EQ(testing::countOps(*both, "RmsNormQuant") + testing::countOps(*both, "AddRmsNormQuant"), 0);
  // On by default under the cpu profile (measured faster: docs/fusion-and-flags.md, Pattern passes).
  auto f = compiled(g, "--opt_level=2");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(*f, "AddRmsNormQuant"), 1);
  expectExact(g, "--opt_level=2");
}

}  // namespace
}  // namespace gkrt

namespace gkrt {
namespace {

// Add(MatMul(DQ(a), DQ(w)), b): the QDQ form of MindSpore's QuantBatchMatmul + Add.
ir::Graph qbmmAddGraph(bool int32_bias, bool per_column) {
  GraphBuilder b;
  constexpr int64_t M = 5, K = 24, N = 12;
  Value a = b.input("a", DType::kUInt8, {M, K});
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> w8(-127, 127);
  std::uniform_real_distribution<float> u(0.004f, 0.02f);
  std::vector<int8_t> w(K * N);
  for (auto& v : w) v = static_cast<int8_t>(w8(rng));
  std::vector<float> ws(per_column ? N : 1), bias(N);
  for (auto& v : ws) v = u(rng);
  for (auto& v : bias) v = 40.0f * (u(rng) - 0.012f);
  const float as = 0.03f;
  const uint8_t azp = 120;
  std::vector<int8_t> wzp(ws.size(), 0);
  QuantAttrs per_tensor{1, 0, true, DType::kFloat32, DType::kFloat32};
  QuantAttrs per_col{1, 0, true, DType::kFloat32, DType::kFloat32};  // axis 1: w's columns
  Value af = b.op1("DequantizeLinear", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("azp", DType::kUInt8, {}, &azp)},
                   per_tensor);
  Value wf = b.op1("DequantizeLinear", {b.constant("w", DType::kInt8, {K, N}, w.data()),
                                        b.constant("ws", DType::kFloat32, {static_cast<int64_t>(ws.size())}, ws.data()),
                                        b.constant("wzp", DType::kInt8, {static_cast<int64_t>(ws.size())}, wzp.data())},
                   per_column ? per_col : per_tensor);
  Value p = b.op1("MatMul", {af, wf}, MatMulAttrs{});
  Value bv;
  if (int32_bias) {  // DQ(int32) at exactly as * ws, as onnxruntime's quantizer writes a Gemm bias
    std::vector<int32_t> bq(N);
    std::vector<float> bs(N);
    for (int64_t j = 0; j < N; ++j) {
      bs[j] = as * ws[per_column ? j : 0];
      bq[j] = static_cast<int32_t>(std::nearbyint(bias[j] / bs[j]));
    }
    bv = b.op1("DequantizeLinear", {b.constant("bq", DType::kInt32, {N}, bq.data()), b.constant("bs", DType::kFloat32, {N}, bs.data())},
               QuantAttrs{0, 0, true, DType::kFloat32, DType::kFloat32});
  } else {
    bv = b.constant("bias", DType::kFloat32, {N}, bias.data());
  }
  b.output(b.add(p, bv), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

HostTensor randomUInt8(const Shape& s, uint32_t seed) {
  HostTensor t(DType::kUInt8, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 255);
  for (int64_t i = 0; i < t.size(); ++i) static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(u(rng));
  return t;
}

TEST(PatternQbmmAdd, QuantisedMatMulPlusBiasBecomesQuantBatchMatMul) {
  for (bool int32_bias : {false, true}) {
    for (bool per_column : {true, false}) {
      const ir::Graph g = qbmmAddGraph(int32_bias, per_column);
      for (const char* flags : {"--fusion_profile=ascend", "--opt_level=2 --enable_pass=inference_qbmm_add_fusion"}) {
        auto f = compiled(g, flags);
        ASSERT_TRUE(f.ok()) << f.status().message();
        EXPECT_EQ(testing::countOps(*f, "QuantBatchMatMul"), 1) << flags;
        EXPECT_EQ(testing::countOps(*f, "MatMul") + testing::countOps(*f, "MatMulBiasAdd") + testing::countOps(*f, "DequantizeLinear"), 0) << flags;
        const HostTensor a = randomUInt8({5, 24}, 9);
        auto want = testing::runGraph(g, {a}, "reference", testing::optLevel(0));
        ASSERT_TRUE(want.ok()) << want.status().message();
        for (const std::string& backend : availableBackends()) {
          auto got = testing::runGraph(g, {a}, backend, *parseFusionFlags(flags));
          ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
          // int32 sums against float sums; a float bias rounded to int32 at as*ws moves by at
          // most half of that step (0.5 * 0.03 * 0.02 = 3e-4); an int32 bias is exact.
          EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-5, int32_bias ? 1e-5 : 3.1e-4), "")
              << backend << " " << flags << " int32 bias " << int32_bias << " per column " << per_column;
        }
      }
    }
  }
}

TEST(PatternQbmmAdd, OnUnderCpuAndSwitchable) {
  const ir::Graph g = qbmmAddGraph(false);
  auto cpu = compiled(g, "--opt_level=2");  // on under cpu: oneDNN's int8 matmul with the bias
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(testing::countOps(*cpu, "QuantBatchMatMul"), 1);
  for (const char* name : {"inference_qbmm_add_fusion", "fusion_group_19_inference_qbmm_add_fusion"}) {
    for (const char* profile : {"--fusion_profile=ascend", "--opt_level=2"}) {
      auto f = compiled(g, std::string(profile) + " --disable_pass=" + name);
      ASSERT_TRUE(f.ok()) << f.status().message();
      EXPECT_EQ(testing::countOps(*f, "QuantBatchMatMul"), 0) << name << " " << profile;
      EXPECT_EQ(testing::countOps(*f, "MatMulBiasAdd"), 1) << name << " " << profile;  // matmul_elem_biasadd_fusion takes it
    }
  }
}

TEST(PatternQbmmAdd, NearMissesAreLeftAlone) {
  // A product with a second reader, and a bias the shape of the whole product, do not fuse.
  GraphBuilder b;
  Value a = b.input("a", DType::kUInt8, {2, 4});
  const int8_t w[4 * 3] = {1, -2, 3, 4, -5, 6, 7, 8, -9, 10, 11, 12};
  const float as = 0.1f, ws = 0.05f, full[2 * 3] = {1, 2, 3, 4, 5, 6};
  const uint8_t azp = 0;
  const int8_t wzp = 0;
  QuantAttrs qa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value af = b.op1("DequantizeLinear", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("azp", DType::kUInt8, {}, &azp)}, qa);
  Value wf = b.op1("DequantizeLinear", {b.constant("w", DType::kInt8, {4, 3}, w), b.constant("ws", DType::kFloat32, {}, &ws),
                                        b.constant("wzp", DType::kInt8, {}, &wzp)}, qa);
  Value p = b.op1("MatMul", {af, wf}, MatMulAttrs{});
  b.output(b.add(p, b.constant("full", DType::kFloat32, {2, 3}, full)), "y");
  Value p2 = b.op1("MatMul", {af, wf}, MatMulAttrs{});
  const float bias[3] = {1, 2, 3};
  b.output(b.add(p2, b.constant("bias", DType::kFloat32, {3}, bias)), "z");
  b.output(p2, "p2");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto f = compiled(*g, "--fusion_profile=ascend --disable_pass=CommonSubexpressionElimination");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(*f, "QuantBatchMatMul"), 0);
}

// BlockQuantMatMul(x [1, 20, 64], 4-bit w, scales, offsets) + b: `bias_shape` [16] fuses;
// a second reader of the product or a bias of the product's shape do not.
ir::Graph blockQuantAddGraph(const Shape& bias_shape, bool product_output) {
  constexpr int64_t M = 20, K = 64, N = 16, B = 32;
  std::mt19937 rng(5);
  std::vector<uint8_t> w(size_t(N * (K / B) * (B / 2)));
  for (uint8_t& v : w) v = static_cast<uint8_t>(rng());
  std::vector<float> s(size_t(N * K / B), 0.02f), o(s.size(), -0.16f);
  GraphBuilder b;
  const Value x = b.input("x", DType::kFloat32, {1, M, K});
  QuantAttrs a;
  a.block_size = B;
  a.to = DType::kUInt4;
  const Value p = b.op1("BlockQuantMatMul", {x, b.constant("w", DType::kUInt8, {N, K / B, B / 2}, w.data()),
                                             b.constant("s", DType::kFloat32, {N, K / B}, s.data()),
                                             b.constant("o", DType::kFloat32, {N, K / B}, o.data())}, a);
  const HostTensor bias = testing::randomTensor(bias_shape, 6);
  b.output(b.add(p, b.constant("bias", DType::kFloat32, bias_shape, bias.data())), "y");
  if (product_output) b.output(p, "p");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(PatternQbmmAdd, BlockQuantMatMulTakesItsBiasAddAndEqualsTheUnfusedGraph) {
  const ir::Graph g = blockQuantAddGraph({16}, false);
  const HostTensor x = testing::randomTensor({1, 20, 64}, 7);
  auto want = testing::runGraph(g, {x}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const char* flags : {"--opt_level=2", "--fusion_profile=ascend"}) {
    auto f = compiled(g, flags);
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(*f, "BlockQuantMatMul"), 1) << flags;
    EXPECT_EQ(testing::countOps(*f, "Add"), 0) << flags;
    for (const std::string& backend : availableBackends()) {
      auto got = testing::runGraph(g, {x}, backend, *parseFusionFlags(flags));
      ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
      EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-5, 1e-4), "") << backend << " " << flags;
    }
  }
  auto off = compiled(g, "--opt_level=2 --disable_pass=inference_qbmm_add_fusion");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(testing::countOps(*off, "Add"), 1);
  for (const ir::Graph& near : {blockQuantAddGraph({16}, true), blockQuantAddGraph({20, 16}, false)}) {
    auto f = compiled(near, "--opt_level=2");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(*f, "Add"), 1);
  }
}

}  // namespace
}  // namespace gkrt
