// Weight-only int8 models (int8 weights dequantized in the graph): gather_before_dequantize
// looks an embedding table's rows up in 8 bits (the values exactly as before), and
// int8_weight_dynamic_quant (on request) runs their matmuls as BlockQuantMatMul with int8
// activations (the error that allows, against the float product, bounded below).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "fusion/pass_manager.h"
#include "runtime/builder.h"
#include "runtime/ir/graph.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::optLevel;
using testing::randomTensor;
using testing::runGraph;

std::vector<int8_t> randomInt8(int64_t n, uint32_t seed, int lo = -127, int hi = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int8_t> v(static_cast<size_t>(n), 0);
  for (int8_t& x : v) x = int8_t(u(rng));
  return v;
}

std::vector<float> positiveScales(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.002f, 0.02f);
  std::vector<float> v(static_cast<size_t>(n), 0.0f);
  for (float& x : v) x = u(rng);
  return v;
}

// The first node of `op` in g (fused subgraphs not searched), or null.
const ir::Node* firstOp(const ir::Graph& g, const char* op) {
  for (const ir::Node& n : g.nodes) if (n.op && std::string(n.op->name) == op) return &n;
  return nullptr;
}

// Weights as an exporter writes them: Mul(Cast<float>(q int8), s [1, N]), or
// DequantizeLinear(q uint8, s [N], zp [N], axis 1).
Value dequantizedWeights(GraphBuilder& b, bool dequantize_linear, int64_t rows, int64_t cols, uint32_t seed) {
  const std::vector<float> s = positiveScales(cols, seed + 1);
  if (!dequantize_linear) {
    const std::vector<int8_t> q = randomInt8(rows * cols, seed);
    Value w = b.op1("Cast", {b.constant("q", DType::kInt8, {rows, cols}, q.data())}, CastAttrs{DType::kFloat32});
    return b.op1("Mul", {w, b.constant("s", DType::kFloat32, {1, cols}, s.data())});
  }
  std::vector<int8_t> raw = randomInt8(rows * cols, seed, -128, 127), zraw = randomInt8(cols, seed + 2, -20, 20);
  std::vector<uint8_t> q(raw.size()), zp(zraw.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = uint8_t(int(raw[i]) + 128);
  for (size_t i = 0; i < zp.size(); ++i) zp[i] = uint8_t(int(zraw[i]) + 128);
  QuantAttrs a;
  a.axis = 1;
  a.to = DType::kFloat32;
  return b.op1("DequantizeLinear", {b.constant("q", DType::kUInt8, {rows, cols}, q.data()),
                                    b.constant("s", DType::kFloat32, {cols}, s.data()),
                                    b.constant("zp", DType::kUInt8, {cols}, zp.data())},
               a);
}

// Gather(dequantized table, ids): the pass gathers the int8 rows, then dequantizes them;
// the outputs equal the unfused graph's bit for bit (ids negative and positive), on the
// reference and cpu backends; switched off, the Gather reads the float table.
TEST(Int8WeightPasses, EmbeddingRowsAreGatheredBeforeTheyAreDequantized) {
  const int64_t V = 50, D = 24;
  for (bool dql : {false, true}) {
    GraphBuilder b;
    Value ids = b.input("ids", DType::kInt64, {2, 7});
    b.output(b.op1("Gather", {dequantizedWeights(b, dql, V, D, 11), ids}, AxisAttrs{0, false}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    for (const char* flags : {"--opt_level=2", "--opt_level=2 --disable_pass=gather_before_dequantize"}) {
      ir::Graph fused = *g;
      ASSERT_TRUE(ir::inferShapes(fused).ok());
      ASSERT_TRUE(runFusionPipeline(fused, *parseFusionFlags(flags), FusionColumn::kCpu).ok());
      const ir::Node* gather = firstOp(fused, "Gather");
      ASSERT_NE(gather, nullptr) << flags;
      const bool on = std::string(flags).find("disable") == std::string::npos;
      EXPECT_EQ(fused.tensors[size_t(gather->inputs[0])].dtype, on ? (dql ? DType::kUInt8 : DType::kInt8) : DType::kFloat32)
          << flags << (dql ? " DequantizeLinear" : " Cast, Mul");
    }
    HostTensor in(DType::kInt64, {2, 7});
    for (int64_t i = 0; i < 14; ++i) in.as<int64_t>()[i] = i % 3 == 0 ? -1 - i : (i * 7) % V;
    auto want = runGraph(*g, {in}, "reference", optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (const char* backend : {"reference", "cpu"}) {
      auto got = runGraph(*g, {in}, backend, optLevel(2));
      ASSERT_TRUE(got.ok()) << got.status().toString();
      EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 0, 0), "") << backend << (dql ? " DequantizeLinear" : " Cast, Mul");
    }
  }
}

// MatMul(x, dequantized int8 weights): with --enable_pass=int8_weight_dynamic_quant one
// BlockQuantMatMul (int8 activations) takes it; by default the float product stays. K is
// not a multiple of the 32-value block. Rows 3 (the streamed kernels) and 80 (the prompt
// GEMMs): the cpu backend agrees with the reference kernel of the rewritten graph (the
// prompt-sized product without avx512_vnni: with the float product), and the
// int8-activation result stays within 1% (relative rms) of the float product.
TEST(Int8WeightPasses, WeightOnlyInt8MatMulsQuantizeActivationsOnRequest) {
  const int64_t K = 100, N = 40;
  for (bool dql : {false, true}) {
    for (int64_t M : {3, 80}) {
      GraphBuilder b;
      Value x = b.input("x", DType::kFloat32, {1, M, K});
      b.output(b.op1("BatchMatMul", {x, dequantizedWeights(b, dql, K, N, 21)}, MatMulAttrs{}), "y");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().toString();
      const std::string what = std::string(dql ? "DequantizeLinear" : "Cast, Mul") + ", M " + std::to_string(M);
      const FusionOptions on = *parseFusionFlags("--opt_level=2 --enable_pass=int8_weight_dynamic_quant");
      ir::Graph fused = *g, plain = *g;
      ASSERT_TRUE(ir::inferShapes(fused).ok() && ir::inferShapes(plain).ok());
      ASSERT_TRUE(runFusionPipeline(fused, on, FusionColumn::kCpu).ok());
      ASSERT_TRUE(runFusionPipeline(plain, optLevel(2), FusionColumn::kCpu).ok());
      EXPECT_EQ(testing::countOpsDeep(fused, "BlockQuantMatMul"), 1) << what;
      EXPECT_EQ(testing::countOpsDeep(fused, "BatchMatMul"), 0) << what;
      EXPECT_EQ(testing::countOpsDeep(plain, "BlockQuantMatMul"), 0) << what;
      const HostTensor in = randomTensor({1, M, K}, 31);
      auto exact = runGraph(*g, {in}, "reference", optLevel(0));
      auto ref = runGraph(*g, {in}, "reference", on);
      auto cpu = runGraph(*g, {in}, "cpu", on);
      ASSERT_TRUE(exact.ok() && ref.ok() && cpu.ok()) << what;
      // The prompt-sized product computes the int8 precision as it is with avx512_vnni;
      // elsewhere it widens the weights and computes in float32 (the exact product).
      const bool float_gemm = M > 12 && !cpu::cpuTier().has(cpu::CpuIsa::kAvx512Vnni);
      EXPECT_EQ(compareTensors((*cpu)[0], float_gemm ? (*exact)[0] : (*ref)[0], 1e-4, 1e-4), "") << what;
      double err = 0, norm = 0;
      const float* e = (*exact)[0].as<float>();
      const float* q = (*ref)[0].as<float>();
      for (int64_t i = 0; i < M * N; ++i) {
        err += (q[i] - e[i]) * double(q[i] - e[i]);
        norm += double(e[i]) * e[i];
      }
      EXPECT_LT(std::sqrt(err / norm), 0.01) << what;
      EXPECT_GT(err, 0.0) << what << ": the activations were not quantized";
    }
  }
}

// ConstantFolding: weights dequantized in the graph fold whatever their size (an op that
// makes no more values than its largest input has: 1536 x 1024 int8 -> float32), while an
// op that expands a small constant past 2^20 values (BroadcastTo) stays for run time.
TEST(Int8WeightPasses, LargeDequantizedWeightsFoldButExpansionsStaySmall) {
  const int64_t K = 1536, N = 1024;  // 1.5 M values, over the 2^20 cap for expansions
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, K});
  Value y = b.op1("MatMul", {x, dequantizedWeights(b, false, K, N, 41)}, MatMulAttrs{});
  const float one = 1.0f;
  Value wide = b.op1("BroadcastTo", {b.constant("one", DType::kFloat32, {1}, &one)}, ShapeAttrs{{K, N}});
  b.output(y, "y");
  b.output(b.op1("MatMul", {x, wide}, MatMulAttrs{}), "z");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ir::Graph fused = *g;
  ASSERT_TRUE(ir::inferShapes(fused).ok());
  ASSERT_TRUE(runFusionPipeline(fused, optLevel(2), FusionColumn::kCpu).ok());
  EXPECT_EQ(testing::countOpsDeep(fused, "Cast"), 0);
  EXPECT_EQ(testing::countOpsDeep(fused, "BroadcastTo"), 1);
  const HostTensor in = randomTensor({2, K}, 43);
  auto want = runGraph(*g, {in}, "reference", optLevel(0));
  auto got = runGraph(*g, {in}, "cpu", optLevel(2));
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-5, 1e-4), "");
  EXPECT_EQ(compareTensors((*got)[1], (*want)[1], 1e-5, 1e-4), "");
}

}  // namespace
}  // namespace gkrt
