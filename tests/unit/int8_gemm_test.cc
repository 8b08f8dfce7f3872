// The cpu backend's own int8 GEMM (backends/cpu/quantization/int8_gemm.h), the integer matmuls'
// kernel on boards and where oneDNN declines: bit-identical to the reference kernels for
// MatMulInteger, QLinearMatMul and QuantBatchMatMul, with uint8 and int8 activations,
// per-tensor and per-column weight zero points and scales, a run-time activation zero
// point, odd sizes (K and N not multiples of the 16-column panels, M not of 4) and batch
// dims folded into the rows; on aarch64 both its SDOT path (symmetric weights) and the
// portable one (run under qemu -cpu cortex-a53 for a core without SDOT).
#include <gtest/gtest.h>

#include <random>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/quantization/int8_gemm.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

template <typename T> std::vector<T> randomInts(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

HostTensor intTensor(DType t, const Shape& s, uint32_t seed) {
  HostTensor h(t, s);
  const auto v = randomInts<int>(static_cast<size_t>(h.size()), t == DType::kInt8 ? -128 : 0, t == DType::kInt8 ? 127 : 255, seed);
  for (int64_t i = 0; i < h.size(); ++i) {
    if (t == DType::kInt8) h.as<int8_t>()[i] = static_cast<int8_t>(v[i]);
    else h.as<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
  }
  return h;
}

struct Case {
  const char* op;
  DType a_type;
  bool per_column;
  bool runtime_azp;  // MatMulInteger only: the zero point as a graph input
  bool zero_wzp = false;  // symmetric weights: every b - bzp fits int8 (the aarch64 SDOT path)
};

// a [2, 5, K] @ constant b [K, N] with the op's parameters.
ir::Graph caseGraph(const Case& c, int64_t K, int64_t N) {
  GraphBuilder b;
  Value a = b.input("a", c.a_type, {2, 5, K});
  const auto w = randomInts<int8_t>(static_cast<size_t>(K * N), -128, 127, 3);
  const int64_t params = c.per_column ? N : 1;
  const auto wzp = randomInts<int8_t>(static_cast<size_t>(params), c.zero_wzp ? 0 : -4, c.zero_wzp ? 0 : 4, 4);
  std::vector<float> ws(static_cast<size_t>(params));
  for (int64_t j = 0; j < params; ++j) ws[j] = 0.001f + 0.0007f * static_cast<float>(j % 7);
  const uint8_t azp_u = 121;
  const int8_t azp_s = -3;
  const void* azp_p = c.a_type == DType::kUInt8 ? static_cast<const void*>(&azp_u) : &azp_s;
  Value azp = c.runtime_azp ? b.input("azp", c.a_type, {}) : b.constant("azp", c.a_type, {}, azp_p);
  Value wv = b.constant("w", DType::kInt8, {K, N}, w.data());
  Value wzpv = b.constant("wzp", DType::kInt8, {params}, wzp.data());
  const float as = 0.02f, ys = 0.3f;
  const uint8_t yzp = 128;
  Value y;
  if (std::string(c.op) == "MatMulInteger") {
    y = b.op1("MatMulInteger", {a, wv, azp, wzpv});
  } else if (std::string(c.op) == "QLinearMatMul") {
    y = b.op1("QLinearMatMul", {a, b.constant("as", DType::kFloat32, {}, &as), azp, wv,
                                b.constant("ws", DType::kFloat32, {params}, ws.data()), wzpv,
                                b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yzp", DType::kUInt8, {}, &yzp)});
  } else if (std::string(c.op).rfind("MatMulIntegerToFloat", 0) == 0) {
    std::vector<float> bias(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) bias[j] = 0.37f * static_cast<float>(j % 5) - 0.6f;
    y = b.op1(c.op, {a, wv, b.constant("as", DType::kFloat32, {}, &as), b.constant("ws", DType::kFloat32, {params}, ws.data()),
                     azp, wzpv, b.constant("bias", DType::kFloat32, {N}, bias.data())},
              std::string(c.op) == "MatMulIntegerToFloatGelu" ? Attrs(GeluAttrs{GeluApprox::kNone}) : Attrs{});
  } else {
    const auto bias = randomInts<int32_t>(static_cast<size_t>(N), -5000, 5000, 6);
    y = b.op1("QuantBatchMatMul", {a, b.constant("as", DType::kFloat32, {}, &as), azp, wv,
                                   b.constant("ws", DType::kFloat32, {params}, ws.data()), wzpv,
                                   b.constant("bias", DType::kInt32, {N}, bias.data())});
  }
  b.output(y, "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(Int8Gemm, EqualsTheReferenceKernels) {
  const Case cases[] = {
      {"MatMulInteger", DType::kUInt8, true, false}, {"MatMulInteger", DType::kInt8, false, true},
      {"MatMulInteger", DType::kUInt8, false, true}, {"QLinearMatMul", DType::kUInt8, true, false},
      {"QLinearMatMul", DType::kInt8, false, false}, {"QuantBatchMatMul", DType::kUInt8, true, false},
      {"QuantBatchMatMul", DType::kInt8, false, false}, {"MatMulInteger", DType::kUInt8, true, true, true},
      {"QLinearMatMul", DType::kUInt8, true, false, true}, {"QLinearMatMul", DType::kInt8, false, false, true},
      {"MatMulIntegerToFloat", DType::kUInt8, true, true}, {"MatMulIntegerToFloatRelu", DType::kInt8, false, false},
      {"MatMulIntegerToFloatGelu", DType::kUInt8, false, true, true},
  };
  cpu::ThreadPool pool(2);
  for (const Case& c : cases) {
    for (auto [K, N] : {std::pair<int64_t, int64_t>{37, 19}, {16, 16}, {3, 40}, {200, 1}}) {
      const ir::Graph g = caseGraph(c, K, N);
      const ir::Node& node = g.nodes.back();
      ASSERT_TRUE(cpu::canRunInt8Gemm(g, node)) << c.op;
      auto kernel = cpu::compileInt8Gemm(g, node, pool);
      ASSERT_TRUE(kernel.ok()) << kernel.status().message();
      std::vector<HostTensor> inputs = {intTensor(c.a_type, {2, 5, K}, 11)};
      if (c.runtime_azp) inputs.push_back(intTensor(c.a_type, {}, 12));
      auto want = testing::runGraph(g, inputs, "reference", testing::optLevel(0));
      ASSERT_TRUE(want.ok()) << want.status().message();
      // The node's inputs as the kernel sees them: graph inputs by name, constants from the graph.
      std::vector<TensorView> views;
      for (int t : node.inputs) {
        const ir::Tensor& tensor = g.tensors[t];
        const void* data = tensor.isConstant() ? static_cast<const void*>(tensor.constant->data) : nullptr;
        for (size_t k = 0; k < g.inputs.size(); ++k) if (g.inputs[k] == t) data = inputs[k].data();
        views.push_back({tensor.dtype, tensor.shape, data});
      }
      HostTensor got((*want)[0].dtype(), (*want)[0].shape());
      ASSERT_TRUE((*kernel)->launch(views, {{got.dtype(), got.shape(), got.data()}}, nullptr).ok());
      // MatMulIntegerToFloat: float(acc) * scale + bias may contract into one fused
      // multiply-add, and GeLU's erf is the vectorised one (4.5e-7 from libm's).
      const bool to_float = std::string(c.op).rfind("MatMulIntegerToFloat", 0) == 0;
      EXPECT_EQ(testing::compareTensors(got, (*want)[0], to_float ? 1e-5 : 0.0, to_float ? 1e-5 : 0.0), "")
          << c.op << " a " << dtypeName(c.a_type) << " per column " << c.per_column << " K " << K << " N " << N;
    }
  }
}

// Where the build has oneDNN, QuantBatchMatMul runs its int8 matmul (VNNI brgemm; the
// float path for per-column weight zero points) with the scales and bias as post-ops,
// within float32 rounding of the reference; elsewhere this own GEMM.
TEST(Int8Gemm, TheCpuBackendRunsQuantBatchMatMul) {
  for (bool symmetric : {true, false}) {
    const ir::Graph g = caseGraph({"QuantBatchMatMul", DType::kUInt8, true, false, symmetric}, 37, 19);
    SessionOptions opts;
    opts.backend = "cpu";
    auto s = Session::create(g, opts);
    ASSERT_TRUE(s.ok()) << s.status().message();
    bool found = false;
#ifdef GKRT_HAVE_DNNL
    // The AVX2 tier without VNNI runs exact int8 matmuls on the own GEMM's int16 pairs
    // first (oneDNN's exact path multiplies in float32 there); other tiers on oneDNN.
    const cpu::CpuTier& tier = cpu::cpuTier();
    const bool own_first = tier.has(cpu::CpuIsa::kAvx2) && !tier.has(cpu::CpuIsa::kAvx512) && !tier.avx_vnni;
    const std::string path = own_first ? "own int8 GEMM (avx2 pairs)" : "oneDNN";
#else
    // aarch64 cores with the dot-product instructions (qemu's default cpu has them) take SDOT.
    const std::string path = cpu::cpuHasDotProd() && symmetric ? "own int8 GEMM (sdot)" : "own int8 GEMM";
#endif
    for (const auto& k : (*s)->kernelInfos()) found = found || k.detail.find(path) != std::string::npos;
    EXPECT_TRUE(found) << path;
    const std::vector<HostTensor> in = {intTensor(DType::kUInt8, {2, 5, 37}, 11)};
    auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
    auto got = testing::runGraph(g, in, "cpu", testing::optLevel(0));
    ASSERT_TRUE(want.ok() && got.ok());
    // (acc + B) * s as acc * s + B * s: two float32 roundings instead of one.
    EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-5, 1e-5), "") << "symmetric " << symmetric;
  }
}

}  // namespace
}  // namespace gkrt
