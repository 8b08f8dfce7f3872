// matmul_integer_to_float_fusion: the dequantization chain onnxruntime's quantize_dynamic
// writes, DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(Mul(x_scale, w_scale)) ->
// Add(bias) [-> ReLU | GeLU], becomes one MatMulIntegerToFloat[Relu|Gelu]; near misses
// are left alone; `disable_pass` keeps the chain; the outputs equal the unfused graph's
// within 1e-5 relative + 1e-5 absolute on every backend (the same int32 sums and the
// same float32 rounding of each step; oneDNN's GeLU erf and the vectorised erf differ
// from libm's by < 1e-6).
#include <gtest/gtest.h>

#include <random>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

constexpr int64_t kK = 48, kN = 40;

struct Spec {
  const char* act = "";        // "", "ReLU" or "GeLU"
  bool bias = true;
  bool per_column = true;      // w_scale and w_zero_point per column
  bool scale_product = true;   // S = Mul(x_scale, w_scale); else S a constant (x_scale folded in)
  bool cast_read = false;      // near miss: the Cast's output is also a graph output
  bool full_bias = false;      // near miss: the "bias" has the product's full shape
  bool runtime_w = false;      // near miss: the weights are a graph input
  DType w_type = DType::kInt8;
};

ir::Graph chainGraph(const Spec& s) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 7, kK});
  std::vector<Value> q = b.op("DynamicQuantizeLinear", {x}, {}, 3);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> w8(s.w_type == DType::kInt8 ? -127 : 0, s.w_type == DType::kInt8 ? 127 : 255);
  std::uniform_real_distribution<float> u(0.002f, 0.01f);
  std::vector<uint8_t> w(kK * kN);
  for (auto& v : w) v = static_cast<uint8_t>(w8(rng));
  const int64_t params = s.per_column ? kN : 1;
  std::vector<float> ws(params), bias(s.full_bias ? 2 * 7 * kN : kN);
  for (auto& v : ws) v = u(rng);
  for (auto& v : bias) v = 50.0f * (u(rng) - 0.006f);
  std::vector<uint8_t> wzp(params, s.w_type == DType::kInt8 ? 0 : 128);
  if (!s.per_column && s.w_type == DType::kInt8) wzp[0] = 3;
  Value wv = s.runtime_w ? b.input("w", s.w_type, {kK, kN}) : b.constant("w", s.w_type, {kK, kN}, w.data());
  Value acc = b.op1("MatMulInteger", {q[0], wv, q[2], b.constant("wzp", s.w_type, {params}, wzp.data())});
  Value f = b.op1("Cast", {acc}, CastAttrs{DType::kFloat32});
  if (s.cast_read) b.output(f, "cast");
  Value scale = s.scale_product ? b.mul(q[1], b.constant("ws", DType::kFloat32, {params}, ws.data()))
                                : b.constant("ws", DType::kFloat32, {params}, ws.data());
  Value y = b.mul(f, scale);
  if (s.bias) {
    y = b.add(b.constant("bias", DType::kFloat32, s.full_bias ? Shape{2, 7, kN} : Shape{kN}, bias.data()), y);
  }
  if (std::string(s.act) == "ReLU") y = b.op1("ReLU", {y});
  if (std::string(s.act) == "GeLU") y = b.op1("GeLU", {y}, GeluAttrs{GeluApprox::kNone});
  b.output(y, "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

StatusOr<ir::Graph> compiled(const ir::Graph& g, const std::string& flags) {
  SessionOptions opts;
  opts.backend = "cpu";
  ASSIGN_OR_RETURN(opts.fusion, parseFusionFlags(flags));
  ASSIGN_OR_RETURN(auto session, Session::create(g, opts));
  return session->compiledGraph();
}

int fusedOps(const ir::Graph& g) {
  return testing::countOps(g, "MatMulIntegerToFloat") + testing::countOps(g, "MatMulIntegerToFloatRelu") +
         testing::countOps(g, "MatMulIntegerToFloatGelu");
}

void expectSameOutputs(const ir::Graph& g, const std::string& flags) {
  std::vector<HostTensor> in;
  uint32_t seed = 21;
  for (int t : g.inputs) {
    const ir::Tensor& x = g.tensors[t];
    if (x.dtype == DType::kFloat32) {
      in.push_back(testing::randomTensor(x.shape, seed++));
      continue;
    }
    HostTensor h(x.dtype, x.shape);
    std::mt19937 rng(seed++);
    for (int64_t i = 0; i < h.size(); ++i) static_cast<uint8_t*>(h.data())[i] = static_cast<uint8_t>(rng() % 200);
    in.push_back(h);
  }
  auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const std::string& backend : availableBackends()) {
    auto got = testing::runGraph(g, in, backend, *parseFusionFlags(flags));
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t k = 0; k < want->size(); ++k) {
      EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 1e-5, 1e-5), "") << backend << " output " << k;
    }
  }
}

TEST(MatMulIntegerToFloatFusion, TheDequantizationChainBecomesOneOp) {
  for (const char* act : {"", "ReLU", "GeLU"}) {
    for (bool per_column : {true, false}) {
      for (DType wt : {DType::kInt8, DType::kUInt8}) {
        Spec s;
        s.act = act;
        s.per_column = per_column;
        s.w_type = wt;
        const ir::Graph g = chainGraph(s);
        auto f = compiled(g, "");
        ASSERT_TRUE(f.ok()) << f.status().message();
        const std::string op = std::string("MatMulIntegerToFloat") + (std::string(act) == "ReLU" ? "Relu" : "") +
                               (std::string(act) == "GeLU" ? "Gelu" : "");
        EXPECT_EQ(testing::countOps(*f, op), 1) << act << " per column " << per_column;
        // DynamicQuantizeLinear and the fused op: no Cast, Mul, Add or activation left
        EXPECT_EQ(f->nodes.size(), 2u) << act << " per column " << per_column;
        expectSameOutputs(g, "");
      }
    }
  }
  Spec plain;  // no bias, S a constant: x_scale becomes a constant 1
  plain.bias = false;
  plain.scale_product = false;
  const ir::Graph g = chainGraph(plain);
  auto f = compiled(g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(*f, "MatMulIntegerToFloat"), 1);
  expectSameOutputs(g, "");
}

TEST(MatMulIntegerToFloatFusion, NearMissesAreLeftAlone) {
  Spec cast_read;
  cast_read.cast_read = true;
  Spec runtime_w;
  runtime_w.runtime_w = true;
  for (const Spec& s : {cast_read, runtime_w}) {
    const ir::Graph g = chainGraph(s);
    auto f = compiled(g, "");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(fusedOps(*f), 0);
    EXPECT_EQ(testing::countOps(*f, "MatMulInteger"), 1);
    expectSameOutputs(g, "");
  }
  Spec full_bias;  // the Mul fuses; the full-size Add stays a separate op
  full_bias.full_bias = true;
  const ir::Graph g = chainGraph(full_bias);
  auto f = compiled(g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(*f, "MatMulIntegerToFloat"), 1);
  EXPECT_GE(f->nodes.size(), 3u);
  expectSameOutputs(g, "");
}

TEST(MatMulIntegerToFloatFusion, DisablePassKeepsTheChainAndTheCpuRunsItOnOneDnnOrTheOwnGemm) {
  Spec s;
  s.act = "GeLU";
  const ir::Graph g = chainGraph(s);
  auto off = compiled(g, "--disable_pass=matmul_integer_to_float_fusion");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(fusedOps(*off), 0);
  EXPECT_EQ(testing::countOps(*off, "MatMulInteger"), 1);
  expectSameOutputs(g, "--disable_pass=matmul_integer_to_float_fusion");
  SessionOptions opts;
  opts.backend = "cpu";
  auto session = Session::create(g, opts);
  ASSERT_TRUE(session.ok()) << session.status().message();
  bool fast = false;
  for (const auto& k : (*session)->kernelInfos()) {
    fast = fast || k.detail.find("oneDNN") != std::string::npos || k.detail.find("own int8 GEMM") != std::string::npos;
  }
  EXPECT_TRUE(fast) << "MatMulIntegerToFloatGelu ran on the reference kernel";
}

// A model file carrying the op directly (it is registered like any other) with operands
// that do not fit gets a clear error naming the operand, not a crash.
TEST(MatMulIntegerToFloatFusion, MisfitOperandsAreClearErrors) {
  const auto build = [](int64_t bias_len, DType bias_type, int64_t scale_len) {
    GraphBuilder b;
    Value a = b.input("a", DType::kUInt8, {3, 8});
    std::vector<uint8_t> w(8 * 5, 1);
    std::vector<float> ws(static_cast<size_t>(scale_len), 0.1f), bias(static_cast<size_t>(bias_len), 0.5f);
    const float as = 0.2f;
    b.output(b.op1("MatMulIntegerToFloat", {a, b.constant("w", DType::kInt8, {8, 5}, w.data()),
                                            b.constant("as", DType::kFloat32, {}, &as),
                                            b.constant("ws", DType::kFloat32, {scale_len}, ws.data()), Value(), Value(),
                                            b.constant("bias", bias_type, {bias_len}, bias.data())}), "y");
    return b.finish();
  };
  EXPECT_TRUE(build(5, DType::kFloat32, 5).ok());
  auto bias = build(4, DType::kFloat32, 5);
  ASSERT_FALSE(bias.ok());
  EXPECT_NE(bias.status().message().find("bias has 4 elements"), std::string::npos) << bias.status().message();
  auto type = build(5, DType::kInt32, 5);
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("must be float32"), std::string::npos) << type.status().message();
  auto scale = build(5, DType::kFloat32, 3);
  ASSERT_FALSE(scale.ok());
  EXPECT_NE(scale.status().message().find("b scale"), std::string::npos) << scale.status().message();
}

}  // namespace
}  // namespace gkrt
