// BlockQuantMatMul (runtime/ir/ops/block_quant_matmul.h) on the cpu backend against its
// reference kernel: 4-bit unsigned with offsets, 4-bit signed, 8-bit; float and int8
// activations; 1 to 4 rows (the streaming kernels, AVX2 or portable by the CPU tier),
// 7 rows (int8 activations streamed 4 a pass, as short prompts are; float ones on the
// packed panels) and 20 rows (the prefill GEMM: with
// int8 activations on an AVX-512 VNNI CPU the int8 GEMM, held to the int8 reference; else
// the float32 one, which computes in float32 whatever the precision and is held to the
// float reference; oneDNN's product for 64 rows and more where the build has it and the
// widened weights fit 4 MB); K a multiple of 64, an odd number of 32s, and a last
// partial block; block sizes 16, 32 and 64; with and without bias.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "runtime/builder.h"
#include "runtime/base/huge_page_arena.h"
#include "runtime/session.h"
#include "runtime/streamed_weights.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;
using testing::runGraph;

struct Case {
  DType to;
  bool offsets;
  int64_t M, K, N, block;
  bool bias;
};

std::string name(const Case& c, DType precision) {
  return std::string(dtypeName(c.to)) + (c.offsets ? "+offsets" : "") + " " + dtypeName(precision) + " M" + std::to_string(c.M) +
         " K" + std::to_string(c.K) + " N" + std::to_string(c.N) + " B" + std::to_string(c.block) + (c.bias ? " bias" : "");
}

ir::Graph graphOf(const Case& c, DType precision, uint32_t seed) {
  const int64_t blocks = (c.K + c.block - 1) / c.block, blob = c.to == DType::kInt8 ? c.block : c.block / 2;
  std::mt19937 rng(seed);
  HostTensor w(c.to == DType::kInt8 ? DType::kInt8 : DType::kUInt8, {c.N, blocks, blob});
  for (int64_t i = 0; i < numElements(w.shape()); ++i) static_cast<uint8_t*>(w.data())[i] = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(0.001f, 0.05f);
  std::vector<float> s(size_t(c.N * blocks)), o(s.size());
  for (float& v : s) v = u(rng);
  for (float& v : o) v = -8.0f * u(rng);
  GraphBuilder b;
  const Value x = b.input("x", DType::kFloat32, {1, c.M, c.K});
  QuantAttrs a;
  a.block_size = c.block;
  a.to = c.to;
  a.precision = precision;
  const HostTensor bias = randomTensor({c.N}, seed + 1);
  const Value y = b.op1("BlockQuantMatMul",
                        {x, b.constant("w", w.dtype(), w.shape(), w.data()), b.constant("s", DType::kFloat32, {c.N, blocks}, s.data()),
                         c.offsets ? b.constant("o", DType::kFloat32, {c.N, blocks}, o.data()) : Value{},
                         c.bias ? b.constant("b", DType::kFloat32, {c.N}, bias.data()) : Value{}},
                        a);
  b.output(y, "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : ir::Graph{};
}

TEST(BlockQuantMatMul, CpuMatchesReferenceOnEveryLayoutRowCountAndPrecision) {
  const std::vector<Case> cases = {
      {DType::kInt4, false, 1, 576, 40, 32, false},  {DType::kInt4, false, 3, 576, 41, 32, true},
      {DType::kUInt4, true, 1, 96, 37, 32, true},    {DType::kUInt4, true, 2, 100, 9, 32, false},
      {DType::kUInt4, true, 4, 256, 23, 64, true},   {DType::kInt4, false, 1, 128, 12, 16, false},
      {DType::kInt8, false, 1, 576, 33, 32, true},   {DType::kInt8, true, 4, 160, 8, 32, false},
      {DType::kInt4, false, 7, 576, 70, 32, true},   {DType::kUInt4, true, 7, 100, 20, 64, false},
      {DType::kInt8, true, 7, 96, 17, 32, true},
      {DType::kInt4, false, 20, 576, 70, 32, true},  {DType::kUInt4, true, 20, 100, 20, 64, false},
      {DType::kInt8, true, 20, 96, 17, 32, true},    {DType::kInt8, false, 23, 576, 40, 32, true},
      {DType::kUInt4, true, 14, 576, 33, 32, false},
      // 64 rows: oneDNN's product where the build has it (the widened weights under 4 MB);
      // over 4 MB: the packed panels.
      {DType::kUInt4, true, 64, 576, 70, 32, true},  {DType::kInt4, false, 64, 576, 2000, 32, false},
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    for (DType precision : {DType::kFloat32, DType::kInt8}) {
      const std::string what = name(c, precision);
      const ir::Graph g = graphOf(c, precision, seed);
      // The prefill GEMM runs in float32 (held to the float32 reference of the same
      // weights), except the AVX-512 VNNI one, which computes the int8 precision as it is.
      const bool float_gemm = c.M > 12 && !cpu::cpuTier().has(cpu::CpuIsa::kAvx512Vnni);
      const ir::Graph want_g = float_gemm ? graphOf(c, DType::kFloat32, seed) : graphOf(c, precision, seed);
      ++seed;
      const std::vector<HostTensor> in = {randomTensor({1, c.M, c.K}, seed)};
      FusionOptions fo;
      fo.opt_level = 2;
      auto want = runGraph(want_g, in, "reference", fo);
      auto got = runGraph(g, in, "cpu", fo);
      ASSERT_TRUE(want.ok() && got.ok()) << what;
      // Sums of K products of |x| < 2 with values up to 0.05 * 127: float32 accumulation
      // in another order than the reference's float64.
      EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-4, 1e-3), "") << what;
    }
  }
}

// The cpu backend streams the block weights as they are: a session copies them once into
// huge-page memory (same bytes, marked), leaves the input x alone, and a backend that does
// not stream them (the reference) gets nothing copied.
TEST(BlockQuantMatMul, StreamedWeightsAreCopiedForTheBackendThatStreamsThem) {
  if (!transparentHugePages()) GTEST_SKIP() << "no transparent huge pages on this machine";
  const Case c{DType::kUInt4, true, 1, 576, 64, 32, false};
  ir::Graph g = graphOf(c, DType::kInt8, 7);
  const ir::Graph original = ir::cloneGraph(g);
  auto cpu = createBackend("cpu", {});
  auto ref = createBackend("reference", {});
  ASSERT_TRUE(cpu.ok() && ref.ok());
  ir::Graph for_ref = ir::cloneGraph(g);
  EXPECT_EQ(placeStreamedWeights(for_ref, **ref), 0u);
  const size_t copied = placeStreamedWeights(g, **cpu);
  const ir::Node& n = g.nodes.back();
  size_t want = 0;
  for (size_t k = 1; k <= 3; ++k) {
    const ir::Tensor& t = g.tensors[size_t(n.inputs[k])];
    const ir::Tensor& o = original.tensors[size_t(n.inputs[k])];
    ASSERT_TRUE(t.constant && o.constant) << k;
    want += o.constant->size;
    EXPECT_TRUE(t.constant->huge_pages) << k;
    EXPECT_NE(t.constant->data, o.constant->data) << k;
    ASSERT_EQ(t.constant->size, o.constant->size) << k;
    EXPECT_EQ(std::memcmp(t.constant->data, o.constant->data, t.constant->size), 0) << k;
  }
  EXPECT_EQ(copied, want);
  EXPECT_FALSE(g.tensors[size_t(n.inputs[0])].constant);  // x is an input
}

TEST(BlockQuantMatMul, Int8ActivationsAreCloseToFloatAndNamedInTheProfile) {
  const Case c{DType::kInt4, false, 1, 576, 64, 32, false};
  const std::vector<HostTensor> in = {randomTensor({1, 1, 576}, 5)};
  FusionOptions fo;
  auto exact = runGraph(graphOf(c, DType::kFloat32, 3), in, "reference", fo);
  auto quant = runGraph(graphOf(c, DType::kInt8, 3), in, "cpu", fo);
  ASSERT_TRUE(exact.ok() && quant.ok());
  // int8 activations per block of 32: within 1% of the float32 result's scale, not equal.
  const std::vector<float> e = (*exact)[0].toFloats(), q = (*quant)[0].toFloats();
  double worst = 0, scale = 0, differ = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    worst = std::max(worst, double(std::fabs(e[i] - q[i])));
    scale = std::max(scale, double(std::fabs(e[i])));
    differ += e[i] != q[i];
  }
  EXPECT_LT(worst, 0.01 * scale);
  EXPECT_GT(differ, 0);
  SessionOptions so;
  so.backend = "cpu";
  auto s = Session::create(graphOf(c, DType::kInt8, 3), so);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->kernelInfos().size(), 1u);
  const std::string detail = (*s)->kernelInfos()[0].detail;
  EXPECT_NE(detail.find("block-quant gemv 4-bit, int8 activations"), std::string::npos) << detail;
  // The loop per tier: SDOT on Arm cores that have it (the cases above ran it there).
  const auto& tier = cpu::cpuTier();
  const char* loop = tier.has(cpu::CpuIsa::kAvx512Vnni) ? ", avx512_vnni" : tier.has(cpu::CpuIsa::kAvx2) ? ", avx2"
                     : tier.has(cpu::CpuIsa::kDotProd)  ? ", dotprod"
                                                        : ", portable";
  EXPECT_NE(detail.find(loop), std::string::npos) << detail;
  // Float activations: the AVX2 loop, or NEON's on Arm.
  auto f = Session::create(graphOf(c, DType::kFloat32, 3), so);
  ASSERT_TRUE(f.ok());
  const std::string float_detail = (*f)->kernelInfos()[0].detail;
  const char* float_loop = tier.has(cpu::CpuIsa::kAvx2) ? ", avx2" : tier.has(cpu::CpuIsa::kNeon) ? ", neon" : ", portable";
  EXPECT_NE(float_detail.find(std::string("float activations") + float_loop), std::string::npos) << float_detail;
}

TEST(BlockQuantMatMul, ShapesThatDisagreeAreNamed) {
  GraphBuilder b;
  const Value x = b.input("x", DType::kFloat32, {2, 64});
  QuantAttrs a;
  a.block_size = 32;
  a.to = DType::kInt4;
  std::vector<uint8_t> w(8 * 3 * 16);
  std::vector<float> s(8 * 3);
  b.output(b.op1("BlockQuantMatMul", {x, b.constant("w", DType::kUInt8, {8, 3, 16}, w.data()), b.constant("s", DType::kFloat32, {8, 3}, s.data())},
                 a),
           "y");
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("must be [N, ceil(K / B), B / 2] = [N, 2, 16]"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace gkrt
