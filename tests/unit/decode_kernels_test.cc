// The cpu kernels and passes decoder LLMs meet (docs/llm.md): the GEMV of one to four
// rows (MatMul, MatMulAdd with its residual and bias, the MatMulSplit of merged Q/K/V)
// and its few-row path (a Gemm with transposed weights and a bias, as a recogniser's
// per-frame classifier),
// Slice/StridedSlice copies, reshape/cast clusters, the rotary fusion of both exported
// forms, sibling matmuls merged, RmsNorm recognised; each against the reference backend
// unfused. And the generator's errors on a model that is no decoder.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/math/gemv_kernel.h"
#include "fusion/kv_cache.h"
#include "fusion/pass_manager.h"
#include "runtime/builder.h"
#include "runtime/generator.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;
using testing::runGraph;

// Runs `g` on cpu at opt_level 2 and on the reference unfused; returns the cpu session's
// ops (compiled graph) for the caller's checks.
std::vector<std::string> expectCpuMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& in, const std::string& what,
                                                   double tol = 2e-5) {
  FusionOptions off, on;
  off.opt_level = 0;
  on.opt_level = 2;
  auto want = runGraph(g, in, "reference", off);
  EXPECT_TRUE(want.ok()) << what << ": " << want.status().message();
  SessionOptions so;
  so.backend = "cpu";
  so.fusion = on;
  auto s = Session::create(g, so);
  EXPECT_TRUE(s.ok()) << what << ": " << s.status().message();
  if (!want.ok() || !s.ok()) return {};
  for (size_t k = 0; k < in.size(); ++k) EXPECT_TRUE((*s)->setInput((*s)->inputs()[k].name, in[k]).ok());
  EXPECT_TRUE((*s)->run().ok()) << what;
  for (size_t o = 0; o < want->size(); ++o) {
    auto got = (*s)->output((*s)->outputs()[o].name);
    EXPECT_TRUE(got.ok());
    if (got.ok()) {
      EXPECT_EQ(compareTensors(*got, (*want)[o], tol, tol), "") << what << " output " << o;
    }
  }
  std::vector<std::string> ops;
  for (const ir::Node& n : (*s)->compiledGraph().nodes) ops.push_back(n.op->name);
  for (const auto& k : (*s)->kernelInfos()) ops.push_back("{" + k.detail + "}");
  return ops;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(DecodeKernels, GemvRowsResidualBiasAndSplitMatchReference) {
  for (int64_t rows : {1, 3, 4}) {
    for (int64_t n : {64, 70, 200}) {
      GraphBuilder b;
      auto x = b.input("x", DType::kFloat32, {1, rows, 48});
      const HostTensor wq = randomTensor({48, n}, 1), wk = randomTensor({48, n / 2}, 2), bias = randomTensor({n}, 3);
      auto q = b.add(b.op1("BatchMatMul", {x, b.constant("wq", DType::kFloat32, {48, n}, wq.data())}, MatMulAttrs{}),
                     b.constant("bq", DType::kFloat32, {n}, bias.data()));
      auto k = b.op1("BatchMatMul", {x, b.constant("wk", DType::kFloat32, {48, n / 2}, wk.data())}, MatMulAttrs{});
      auto r = b.input("r", DType::kFloat32, {1, rows, n});
      b.output(b.add(q, r), "y");  // MatMulAdd with its bias
      b.output(k, "k");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().message();
      const auto ops = expectCpuMatchesReference(*g, {randomTensor({1, rows, 48}, 4), randomTensor({1, rows, n}, 5)},
                                                 "rows " + std::to_string(rows) + " n " + std::to_string(n));
      EXPECT_TRUE(has(ops, "{gkrt gemv}")) << "rows " << rows;
    }
  }
}

// The few-row path: 5 to kFewRowsMax rows against weights of kFewRowsMinBytes or more on
// the AVX-512 tier (elsewhere oneDNN's), with K not a multiple of its chunk and N not of
// the panel: Gemm with transposed weights and a bias, MatMul with weights as they are;
// and one row of each on the GEMV.
TEST(DecodeKernels, FewRowGemmOfTransposedAndPlainWeightsMatchesReference) {
  // 4.2-4.3 MiB of weights; 16 panels of 64 columns, or 15 (on two threads: 30 of 32).
  const int64_t K = 1200;
  const bool own = cpu::cpuTier().has(cpu::CpuIsa::kAvx512);
  for (int64_t N : {int64_t(1000), int64_t(900)}) {
    ASSERT_GE(K * N * int64_t(sizeof(float)), cpu::kFewRowsMinBytes);
    for (int64_t rows : {int64_t(1), int64_t(5), int64_t(7), int64_t(20), cpu::kFewRowsMax}) {
      for (bool gemm : {true, false}) {
        GraphBuilder b;
        auto x = b.input("x", DType::kFloat32, {rows, K});
        Value y;
        if (gemm) {
          const HostTensor w = randomTensor({N, K}, 1), bias = randomTensor({N}, 2);
          GemmAttrs a;
          a.transpose_b = true;
          y = b.op1("Gemm", {x, b.constant("w", DType::kFloat32, {N, K}, w.data()), b.constant("b", DType::kFloat32, {N}, bias.data())},
                    a);
        } else {
          const HostTensor w = randomTensor({K, N}, 3);
          y = b.op1("MatMul", {x, b.constant("w", DType::kFloat32, {K, N}, w.data())}, MatMulAttrs{});
        }
        b.output(y, "y");
        auto g = b.finish();
        ASSERT_TRUE(g.ok()) << g.status().message();
        const std::string what = std::string(gemm ? "Gemm" : "MatMul") + " rows " + std::to_string(rows) + " N " + std::to_string(N);
        const auto ops = expectCpuMatchesReference(*g, {randomTensor({rows, K}, 4)}, what, 1e-4);
        EXPECT_EQ(has(ops, "{gkrt few-row gemm}"), own && rows > cpu::kGemvMaxRows) << what;
        if (rows <= cpu::kGemvMaxRows) {  // one row: the GEMV, on every tier
          EXPECT_TRUE(has(ops, "{gkrt gemv}")) << what;
        }
      }
    }
  }
}

// CachedAttention's cpu kernel (its head-dim-64 build and the generic one) against the
// reference: 6 query heads over 2 KV heads, 1 and 3 new positions after 5 cached.
TEST(DecodeKernels, CachedAttentionMatchesReferenceAtHeadDims64And40) {
  for (int64_t D : {64, 40}) {
    for (int64_t S : {1, 3}) {
      const int64_t C = 16;
      GraphBuilder b;
      auto q = b.input("q", DType::kFloat32, {1, 6, S, D});
      auto k = b.input("k", DType::kFloat32, {1, 2, S, D});
      auto v = b.input("v", DType::kFloat32, {1, 2, S, D});
      auto ck = b.input("ck", DType::kFloat32, {1, 2, C, D});
      auto cv = b.input("cv", DType::kFloat32, {1, 2, C, D});
      auto past = b.input("past", DType::kInt64, {1});
      AttentionAttrs a;
      a.scale = 1.0f / std::sqrt(float(D));
      b.output(b.op1("CachedAttention", {q, k, v, ck, cv, past}, a), "y");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().message();
      HostTensor p(DType::kInt64, {1});
      p.as<int64_t>()[0] = 5;
      const auto ops = expectCpuMatchesReference(
          *g, {randomTensor({1, 6, S, D}, 1), randomTensor({1, 2, S, D}, 2), randomTensor({1, 2, S, D}, 3),
               randomTensor({1, 2, C, D}, 4), randomTensor({1, 2, C, D}, 5), p},
          "D " + std::to_string(D) + " S " + std::to_string(S));
      EXPECT_TRUE(has(ops, "{gkrt cached attention}")) << D;
    }
  }
}

TEST(DecodeKernels, SiblingMatMulsMergeIntoMatMulSplitAndSwiGLU) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 1, 32});
  auto w = [&](const char* name, int64_t n, uint32_t seed) {
    const HostTensor t = randomTensor({32, n}, seed);
    return b.constant(name, DType::kFloat32, {32, n}, t.data());
  };
  auto q = b.op1("BatchMatMul", {x, w("wq", 32, 1)}, MatMulAttrs{});
  auto k = b.op1("BatchMatMul", {x, w("wk", 16, 2)}, MatMulAttrs{});
  auto v = b.op1("BatchMatMul", {x, w("wv", 16, 3)}, MatMulAttrs{});
  b.output(b.add(q, b.op1("ReduceSum", {b.add(k, v)}, AxesAttrs{{-1}, true})), "qkv");
  auto gate = b.op1("BatchMatMul", {q, w("wg", 64, 4)}, MatMulAttrs{});
  auto up = b.op1("BatchMatMul", {q, w("wu", 64, 5)}, MatMulAttrs{});
  b.output(b.mul(b.mul(gate, b.op1("Sigmoid", {gate})), up), "mlp");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const auto ops = expectCpuMatchesReference(*g, {randomTensor({1, 1, 32}, 6)}, "siblings");
  EXPECT_TRUE(has(ops, "MatMulSplit"));
  EXPECT_TRUE(has(ops, "SwiGLU"));
}

// A packed projection read by slices of its last axis (onnxruntime-genai's QKV): slices
// that tile it end to end become its Split, then MatMulSplit; a gap between slices, or a
// step, leaves them slices. Each against the reference.
TEST(DecodeKernels, PackedProjectionSlicesBecomeAMatMulSplit) {
  for (int variant : {0, 1, 2}) {  // tiled (out of order), a gap, a step of 2
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 1, 32});
    const HostTensor w = randomTensor({32, 48}, 1);
    auto p = b.op1("BatchMatMul", {x, b.constant("w", DType::kFloat32, {32, 48}, w.data())}, MatMulAttrs{});
    const int64_t step = variant == 2 ? 2 : 1, mid = variant == 1 ? 20 : 16;
    auto k = b.op1("StridedSlice", {p}, StridedSliceAttrs{{mid}, {32}, {-1}, {1}});
    auto q = b.op1("StridedSlice", {p}, StridedSliceAttrs{{0}, {16}, {2}, {step}});
    auto v = b.op1("StridedSlice", {p}, StridedSliceAttrs{{32}, {48}, {-1}, {1}});
    auto sum = [&](Value t) { return b.op1("ReduceSum", {t}, AxesAttrs{{-1}, true}); };
    b.output(b.add(v, b.add(sum(q), sum(k))), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    const auto ops = expectCpuMatchesReference(*g, {randomTensor({1, 1, 32}, 2)}, "variant " + std::to_string(variant));
    EXPECT_EQ(has(ops, "MatMulSplit"), variant == 0) << variant;
    EXPECT_EQ(has(ops, "StridedSlice"), variant != 0) << variant;
  }
}

// Two plans of one model (a generator's prefill and decode) merge the same siblings: the
// merged weights are one copy while both live; other weights get their own.
TEST(DecodeKernels, PlansShareTheMergedWeightsOfTheSameSiblings) {
  auto model = [](uint32_t seed) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 1, 128});
    const HostTensor wq = randomTensor({128, 128}, seed), wk = randomTensor({128, 128}, seed + 1);
    auto q = b.op1("BatchMatMul", {x, b.constant("wq", DType::kFloat32, {128, 128}, wq.data())}, MatMulAttrs{});
    auto k = b.op1("BatchMatMul", {x, b.constant("wk", DType::kFloat32, {128, 128}, wk.data())}, MatMulAttrs{});
    b.output(b.add(q, k), "y");
    return *b.finish();
  };
  auto merged = [](ir::Graph g) {
    auto o = parseFusionFlags("--opt_level=2");
    EXPECT_TRUE(o.ok() && runFusionPipeline(g, *o, FusionColumn::kCpu).ok());
    std::shared_ptr<const ir::ConstData> w;
    for (const ir::Tensor& t : g.tensors) if (t.isConstant() && t.shape == Shape{128, 256}) w = t.constant;
    EXPECT_TRUE(w) << "no merged [128, 256] weights";
    return w;
  };
  const ir::Graph a = model(1);
  auto first = merged(a), second = merged(a), other = merged(model(7));
  ASSERT_TRUE(first && second && other);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_NE(first.get(), other.get());
}

// x [1, 1, heads, 8] rotated with angles [1, 1, 1, 8] in the optimum form, or [1, 1, 1, 4]
// in the halves form gkrt's converter writes.
ir::Graph rotaryGraph(bool halves) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 2, 3, 8});
  auto c = b.input("cos", DType::kFloat32, {1, 2, 1, halves ? 4 : 8});
  auto s = b.input("sin", DType::kFloat32, {1, 2, 1, halves ? 4 : 8});
  auto half = [&](int64_t begin, int64_t end) { return b.op1("StridedSlice", {x}, StridedSliceAttrs{{begin}, {end}, {3}, {1}}); };
  auto x1 = half(0, 4), x2 = half(4, 8);
  if (halves) {
    b.output(b.op1("Concat", {b.sub(b.mul(c, x1), b.mul(s, x2)), b.add(b.mul(s, x1), b.mul(c, x2))}, AxisAttrs{3, false}), "y");
  } else {
    auto rot = b.op1("Concat", {b.op1("Neg", {x2}), x1}, AxisAttrs{-1, false});
    b.output(b.add(b.mul(x, c), b.mul(rot, s)), "y");
  }
  return *b.finish();
}

TEST(DecodeKernels, RotaryOfBothExportedFormsIsOneNode) {
  for (bool halves : {false, true}) {
    const ir::Graph g = rotaryGraph(halves);
    const int64_t a = halves ? 4 : 8;
    const auto ops = expectCpuMatchesReference(g, {randomTensor({1, 2, 3, 8}, 1), randomTensor({1, 2, 1, a}, 2),
                                                   randomTensor({1, 2, 1, a}, 3)}, halves ? "halves" : "optimum");
    EXPECT_TRUE(has(ops, "Rotary")) << (halves ? "halves" : "optimum");
    EXPECT_FALSE(has(ops, "StridedSlice")) << (halves ? "halves" : "optimum");
  }
}

TEST(DecodeKernels, RmsNormAsExportersWriteItIsRecognised) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 16});
  const HostTensor gamma = randomTensor({16}, 1);
  auto ms = b.op1("ReduceMean", {b.pow(x, 2.0f)}, AxesAttrs{{-1}, true});
  auto n = b.mul(x, b.op1("Reciprocal", {b.op1("Sqrt", {b.add(ms, 1e-5f)})}));
  b.output(b.mul(b.constant("gamma", DType::kFloat32, {16}, gamma.data()), n), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(has(expectCpuMatchesReference(*g, {randomTensor({2, 3, 16}, 2)}, "rms"), "RmsNorm"));
}

TEST(DecodeKernels, SlicesAndReshapeCastClustersMatchReference) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 5, 6, 7});
  b.output(b.op1("StridedSlice", {x}, StridedSliceAttrs{{1, 0, 2}, {5, 6, 7}, {1, 2, 3}, {2, 1, 1}}), "a");
  b.output(b.op1("StridedSlice", {x}, StridedSliceAttrs{{1}, {2}, {0}, {1}}), "b");
  // innermost steps of 2 (YOLOX's Focus: x[..., ::2, 1::2]) and 3, and on 8-byte values
  b.output(b.op1("StridedSlice", {x}, StridedSliceAttrs{{0, 1}, {6, 7}, {2, 3}, {2, 2}}), "d");
  b.output(b.op1("StridedSlice", {x}, StridedSliceAttrs{{1}, {7}, {3}, {3}}), "e");
  auto ids = b.input("ids", DType::kInt64, {1, 3});
  b.output(b.op1("StridedSlice", {ids}, StridedSliceAttrs{{0}, {3}, {1}, {2}}), "f");
  b.output(b.op1("Reshape", {b.op1("Cast", {ids}, CastAttrs{DType::kFloat32})}, ShapeAttrs{{3, 1}}), "c");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor i(DType::kInt64, {1, 3});
  for (int k = 0; k < 3; ++k) static_cast<int64_t*>(i.data())[k] = 1000 + 7 * k;
  const auto ops = expectCpuMatchesReference(*g, {randomTensor({2, 5, 6, 7}, 1), i}, "slices", 0);
  EXPECT_TRUE(has(ops, "{gkrt slice copy}"));
  EXPECT_TRUE(has(ops, "{gkrt strided slice copy}"));
}

TEST(DecodeKernels, TheGeneratorNamesWhatIsMissing) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 4});
  b.output(b.mul(x, 2.0f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto gen = Generator::create(*g, {});
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.status().message().find("no KV cache in this model"), std::string::npos) << gen.status().message();
  GeneratorOptions zero;
  zero.max_context = 0;
  auto z = Generator::create(*g, zero);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("capacity must be positive"), std::string::npos) << z.status().message();
}

}  // namespace
}  // namespace gkrt
