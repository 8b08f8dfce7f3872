// The cpu backend's fast paths (fused-loop executor, packed GEMM), and the opencl
// backend's generated and hand-written kernels, against the reference backend, on shapes that exercise tile edges, every broadcast pattern,
// transposes, batch broadcasting, convolution geometries and 1 vs 2 threads.
#include <random>

#include "backends/cpu/nn/conv_kernel.h"
#include "backends/cpu/fused/fused_elementwise.h"
#include "backends/cpu/math/matmul_kernel.h"
#include "backends/cpu/onednn/onednn_conv.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::optLevel;
using testing::randomTensor;

// The backends under test: cpu, and opencl where this build has it.
std::vector<std::string> fastBackends() {
  std::vector<std::string> b = {"cpu"};
  for (const std::string& name : availableBackends()) if (name == "opencl") b.push_back(name);
  return b;
}

// g after shape inference and the opt-level-2 fusion pipeline of one column (every node
// on the backend); a failure of either is a test failure.
ir::Graph fusedFor(const ir::Graph& g, FusionColumn column) {
  ir::Graph fused = ir::cloneGraph(g);
  EXPECT_TRUE(ir::inferShapes(fused).ok());
  EXPECT_TRUE(runFusionPipeline(fused, optLevel(2), column, [](const ir::Node&) { return true; }).ok());
  return fused;
}

// cpu (fusion on and off, 1 and 2 threads) and opencl (fusion on and off) == reference
// (fusion off).
void expectCpuMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& inputs, double rtol) {
  auto want = testing::runGraph(g, inputs, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (const std::string& backend : fastBackends())
  for (int level : {0, 2}) {
    for (int threads : {1, 2}) {
      if (backend != "cpu" && threads == 2) continue;
      SessionOptions o;
      o.backend = backend;
      o.backend_options.num_threads = threads;
      o.fusion = optLevel(level);
      auto s = Session::create(g, o);
      ASSERT_TRUE(s.ok()) << s.status().toString();
      for (size_t k = 0; k < inputs.size(); ++k) ASSERT_TRUE((*s)->setInput((*s)->inputs()[k].name, inputs[k]).ok());
      ASSERT_TRUE((*s)->run().ok());
      for (size_t k = 0; k < want->size(); ++k) {
        auto got = (*s)->output((*s)->outputs()[k].name);
        ASSERT_TRUE(got.ok());
        EXPECT_EQ(testing::compareTensors(*got, (*want)[k], rtol, 1e-6), "")
            << backend << ", opt_level " << level << ", " << threads << " threads, output " << k;
      }
    }
  }
}

// A chain mixing every broadcast pattern into one cluster: x [A,B,C] with y [C],
// z [A,1,C], w [A,B,1], a scalar, unary math and a constant power.
TEST(CpuBackend, BroadcastChainsMatchReference) {
  for (const Shape& s : {Shape{3, 5, 7}, Shape{2, 33, 129}, Shape{4, 1, 1000}, Shape{1, 1, 1}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, s);
    Value y = b.input("y", DType::kFloat32, {s[2]});
    Value z = b.input("z", DType::kFloat32, {s[0], 1, s[2]});
    Value w = b.input("w", DType::kFloat32, {s[0], s[1], 1});
    Value t = b.mul(b.add(b.mul(x, 2.0f), y), z);
    t = b.sub(b.op1("Tanh", {t}), w);
    t = b.op1("Pow", {t, b.scalar(3.0f, t)});
    t = b.add(b.op1("Exp", {b.op1("Neg", {b.op1("Abs", {t})})}), b.op1("Maximum", {x, w}));
    // scalars on either side of non-commutative ops, and in Maximum/Minimum
    t = b.op1("Div", {b.scalar(1.5f, t), b.add(b.op1("Abs", {t}), 1.0f)});
    t = b.op1("Minimum", {b.sub(b.scalar(0.25f, t), t), b.scalar(0.5f, t)});
    b.output(t, "out");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectCpuMatchesReference(*g, {randomTensor(s, 1), randomTensor({s[2]}, 2), randomTensor({s[0], 1, s[2]}, 3),
                                   randomTensor({s[0], s[1], 1}, 4)}, 1e-5);
  }
}

// Per-channel operands of an NCHW tensor ([1, C, 1, 1]) on either side of non-commutative
// ops in one fused loop: on a tile inside one channel's plane the loop reads them as one
// value (TileRunner::tileConstant), on a tile across two planes through their gather
// buffers; planes shorter than, equal to and longer than a tile, and not a multiple of it.
TEST(CpuBackend, PerChannelOperandsOnEitherSideMatchReference) {
  for (int64_t plane : {300, 512, 700, 1920}) {
    const Shape xs{2, 5, 1, plane};
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, xs);
    Value sc = b.input("s", DType::kFloat32, {1, 5, 1, 1});
    Value of = b.input("o", DType::kFloat32, {1, 5, 1, 1});
    Value t = b.op1("Div", {sc, b.add(b.op1("Abs", {x}), 1.0f)});
    t = b.sub(of, b.sub(t, of));
    t = b.op1("Maximum", {b.op1("Minimum", {sc, t}), of});
    t = b.add(b.mul(x, t), b.op1("Div", {x, sc}));
    b.output(t, "out");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectCpuMatchesReference(*g, {randomTensor(xs, 11), randomTensor({1, 5, 1, 1}, 12), randomTensor({1, 5, 1, 1}, 13)},
                              1e-6);
  }
}

// A power by a constant exponent, as LRN writes it (x / (k + s)^0.75): the quarter powers
// through square roots, other exponents through the vector pow, in the fused loop, on
// positive values and on negative ones (NaN where pow gives NaN).
TEST(CpuBackend, ConstantPowersMatchReference) {
  for (float c : {0.25f, 0.75f, 1.5f, -0.5f, 0.3f, -1.7f, 2.0f}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {4, 1031});
    Value s = b.add(b.op1("Abs", {x}), 0.5f);  // positive
    b.output(b.op1("Div", {x, b.op1("Pow", {s, b.scalar(c, s)})}), "lrn");
    b.output(b.op1("Pow", {x, b.scalar(c, x)}), "signed");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const HostTensor in = randomTensor({4, 1031}, 7);
    auto want = testing::runGraph(*g, {in}, "reference", optLevel(0));
    auto got = testing::runGraph(*g, {in}, "cpu", optLevel(2));
    ASSERT_TRUE(want.ok() && got.ok()) << c;
    EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 2e-6, 1e-6), "") << "exponent " << c;
    const std::vector<float> w = (*want)[1].toFloats(), o = (*got)[1].toFloats();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(o[i])) << "exponent " << c << " at " << i;
      } else {
        EXPECT_NEAR(o[i], w[i], 2e-6 * std::max(1.0f, std::fabs(w[i]))) << "exponent " << c << " at " << i;
      }
      if (HasFailure()) break;
    }
  }
}

TEST(CpuBackend, SeedChainsRunAsOneTiledLoop) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1000, 17});
  Value y = b.input("y", DType::kFloat32, {1000, 17});
  Value cube = b.op1("Pow", {b.mul(x, 2.0f), b.scalar(3.0f, x)});
  b.output(b.mul(b.sub(cube, y), cube), "result");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  ir::Graph fused = ir::cloneGraph(*g);
  ASSERT_TRUE(ir::inferShapes(fused).ok());
  auto report = runFusionPipeline(fused, optLevel(2), FusionColumn::kCpu, [](const ir::Node&) { return true; });
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_TRUE(cpu::canRunElementwise(fused, fused.nodes[0]));
  expectCpuMatchesReference(*g, {randomTensor({1000, 17}, 5), randomTensor({1000, 17}, 6)}, 1e-5);
}

TEST(CpuBackend, GemmsMatchReference) {
  struct Case { Shape a, b; bool ta, tb; const char* op; };
  for (const Case& c : std::vector<Case>{{{5, 3}, {3, 17}, false, false, "MatMul"},
                                         {{3, 5}, {17, 3}, true, true, "MatMul"},
                                         {{64, 129}, {129, 70}, false, false, "MatMul"},
                                         {{2, 3, 9, 20}, {1, 3, 20, 33}, false, false, "BatchMatMul"},
                                         {{4, 9, 20}, {33, 20}, false, true, "BatchMatMul"}}) {
    GraphBuilder b;
    Value a = b.input("a", DType::kFloat32, c.a);
    Value w = b.input("w", DType::kFloat32, c.b);
    b.output(b.op1(c.op, {a, w}, MatMulAttrs{c.ta, c.tb}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_TRUE(cpu::canRunMatMul(*g, g->nodes[0]));
#ifdef GKRT_HAVE_DNNL  // oneDNN's matmul takes them where it is built
    EXPECT_TRUE(cpu::canRunOneDnn(*g, g->nodes[0]));
    { auto k = cpu::compileOneDnn(*g, g->nodes[0]); EXPECT_TRUE(k.ok()) << k.status().toString(); }
#endif
    expectCpuMatchesReference(*g, {randomTensor(c.a, 7), randomTensor(c.b, 8)}, 1e-4);
  }
  // Gemm with a constant (pre-packed) B, alpha, beta and a broadcast C.
  GraphBuilder b;
  Value a = b.input("a", DType::kFloat32, {7, 40});
  const HostTensor wt = randomTensor({19, 40}, 9), bias = randomTensor({19}, 10);
  Value w = b.constant("w", DType::kFloat32, {19, 40}, wt.data());
  Value cb = b.constant("c", DType::kFloat32, {19}, bias.data());
  b.output(b.op1("Gemm", {a, w, cb}, GemmAttrs{0.5f, 2.0f, false, true}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
#ifdef GKRT_HAVE_DNNL
  EXPECT_FALSE(cpu::canRunOneDnn(*g, g->nodes[0])) << "beta 2: our GEMM";
#endif
  expectCpuMatchesReference(*g, {randomTensor({7, 40}, 11)}, 1e-4);
  // Gemm with alpha and a [M, N] C (beta 1): oneDNN's output scale and binary-add post-op.
  GraphBuilder b2;
  Value a2 = b2.input("a", DType::kFloat32, {9, 33});
  const HostTensor w2 = randomTensor({33, 21}, 16), c2 = randomTensor({9, 21}, 17);
  Value w2v = b2.constant("w", DType::kFloat32, {33, 21}, w2.data());
  Value c2v = b2.input("c", DType::kFloat32, {9, 21});
  b2.output(b2.op1("Gemm", {a2, w2v, c2v}, GemmAttrs{0.75f, 1.0f, false, false}), "y");
  auto g2 = b2.finish();
  ASSERT_TRUE(g2.ok()) << g2.status().toString();
#ifdef GKRT_HAVE_DNNL
  EXPECT_TRUE(cpu::canRunOneDnn(*g2, g2->nodes[0]));
  EXPECT_TRUE(cpu::compileOneDnn(*g2, g2->nodes[0]).ok());
#endif
  expectCpuMatchesReference(*g2, {randomTensor({9, 33}, 18), c2}, 1e-4);
}

// With MatMul in the cluster set, a GEMM and its elementwise tail (bias, activation,
// scalar affine, residual add) are one cluster; oneDNN runs it as one matmul primitive
// with post-ops.
TEST(CpuBackend, GemmEpilogueClustersRunAsOnePrimitive) {
  struct Case { const char* act; bool tb; };
  // (the CPU column clusters Tanh, Exp, Maximum; GeLU and ReLU are not in it)
  for (const Case& c : std::vector<Case>{{"Maximum", true}, {"Tanh", false}, {"Exp", false}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {2, 24, 40});
    Value r = b.input("r", DType::kFloat32, {2, 24, 32});
    const HostTensor wt = randomTensor(c.tb ? Shape{32, 40} : Shape{40, 32}, 41), bias = randomTensor({32}, 42);
    Value w = b.constant("w", DType::kFloat32, wt.shape(), wt.data());
    Value h = b.add(b.op1("BatchMatMul", {x, w}, MatMulAttrs{false, c.tb}), b.constant("bias", DType::kFloat32, {32}, bias.data()));
    Value a = std::string(c.act) == "Maximum" ? b.op1("Maximum", {h, b.scalar(0.0f, h)}) : b.op1(c.act, {h});
    b.output(b.add(r, b.sub(b.mul(a, 1.5f), 0.25f)), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> inputs{randomTensor({2, 24, 40}, 43), randomTensor({2, 24, 32}, 44)};
    auto want = testing::runGraph(*g, inputs, "reference", optLevel(0));
    ASSERT_TRUE(want.ok());
    SessionOptions o;
    o.backend = "cpu";
    o.fusion = *parseFusionFlags("--enable_cluster_ops=BatchMatMul");
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    ASSERT_EQ((*s)->kernelCount(), 1u) << c.act;
#ifdef GKRT_HAVE_DNNL
    const ir::Node& fused = (*s)->compiledGraph().nodes[0];
    EXPECT_TRUE(cpu::canRunOneDnn((*s)->compiledGraph(), fused)) << c.act;
#endif
    for (size_t k = 0; k < inputs.size(); ++k) ASSERT_TRUE((*s)->setInput((*s)->inputs()[k].name, inputs[k]).ok());
    ASSERT_TRUE((*s)->run().ok());
    EXPECT_EQ(testing::compareTensors(*(*s)->output("y"), (*want)[0], 1e-4, 1e-5), "") << c.act;
  }
}

// A tail with two scalar affine steps around an Exp: oneDNN 2.6 would give the second
// linear post-op the first one's parameters, so such a cluster is not handed to it
// (and still computes the right thing).
TEST(CpuBackend, GemmEpilogueWithARepeatedPostOpKind) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 4, 8});
  const HostTensor wt = randomTensor({8, 6}, 45);
  Value h = b.op1("BatchMatMul", {x, b.constant("w", DType::kFloat32, {8, 6}, wt.data())}, MatMulAttrs{false, false});
  b.output(b.sub(b.op1("Exp", {b.mul(h, 0.5f)}), 0.25f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const HostTensor in = randomTensor({2, 4, 8}, 46);
  auto want = testing::runGraph(*g, {in}, "reference", optLevel(0));
  auto got = testing::runGraph(*g, {in}, "cpu", *parseFusionFlags("--enable_cluster_ops=BatchMatMul"));
  ASSERT_TRUE(want.ok() && got.ok()) << got.status().toString();
  EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-4, 1e-5), "");
#ifdef GKRT_HAVE_DNNL
  SessionOptions o;
  o.fusion = *parseFusionFlags("--enable_cluster_ops=BatchMatMul");
  auto s = Session::create(*g, o);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->kernelCount(), 1u);
  EXPECT_FALSE(cpu::canRunOneDnn((*s)->compiledGraph(), (*s)->compiledGraph().nodes[0]));
#endif
}

// Conv2D: plain, strided/dilated with asymmetric pads, grouped, depthwise (with a
// channel multiplier), 1x1; weights constant (packed at compile) or an input.
TEST(CpuBackend, ConvolutionsMatchReference) {
  struct Case { Shape x, w; Ints strides, pads, dilations; int64_t groups; bool const_w, bias; };
  for (const Case& c : std::vector<Case>{
           {{1, 3, 9, 11}, {5, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true, true},
           {{2, 4, 13, 10}, {6, 4, 3, 2}, {2, 3}, {0, 1, 2, 0}, {2, 1}, 1, false, false},
           {{1, 8, 7, 7}, {12, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4, true, true},
           {{2, 6, 10, 9}, {12, 1, 3, 3}, {2, 2}, {1, 0, 1, 2}, {1, 2}, 6, true, true},
           {{1, 5, 8, 12}, {5, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 5, false, true},
           {{1, 2, 3, 2}, {3, 2, 2, 2}, {1, 2}, {0, 1, 2, 1}, {1, 3}, 1, true, true},
           {{1, 16, 33, 5}, {20, 16, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true, false},
           // the own depthwise rows (weights as an input keep oneDNN out): 3x3 and 5x5,
           // stride 1 and 2, a channel multiplier, dilation
           {{1, 6, 11, 13}, {6, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6, false, true},
           {{1, 4, 12, 9}, {8, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 4, false, false},
           {{2, 3, 15, 14}, {3, 1, 5, 5}, {2, 2}, {4, 4, 4, 3}, {2, 2}, 3, false, true},
           // 1-D along H (maps one wide, tf2onnx's form): run along W, with stride, uneven
           // pads, dilation and groups on H
           {{1, 4, 40, 1}, {12, 4, 5, 1}, {2, 1}, {2, 0, 1, 0}, {3, 1}, 1, true, true},
           {{2, 8, 31, 1}, {8, 2, 3, 1}, {1, 1}, {1, 0, 1, 0}, {1, 1}, 4, true, false}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, c.x);
    const HostTensor wt = randomTensor(c.w, 21), bias = randomTensor({c.w[0]}, 22);
    Value w = c.const_w ? b.constant("w", DType::kFloat32, c.w, wt.data()) : b.input("w", DType::kFloat32, c.w);
    std::vector<Value> in{x, w};
    if (c.bias) in.push_back(b.constant("b", DType::kFloat32, {c.w[0]}, bias.data()));
    Conv2DAttrs a;
    a.strides = c.strides;
    a.pads = c.pads;
    a.dilations = c.dilations;
    a.groups = c.groups;
    b.output(b.op1("Conv2D", in, a), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_TRUE(cpu::canRunConvOrPool(*g, g->nodes[0]));
#ifdef GKRT_HAVE_DNNL  // constant weights: oneDNN's convolution
    EXPECT_EQ(cpu::canRunOneDnnConv(*g, g->nodes[0]), c.const_w);
    if (c.const_w) {
      auto k = cpu::compileOneDnnConv(*g, g->nodes[0], nullptr, /*allow_ref=*/true);
      EXPECT_TRUE(k.ok()) << k.status().toString();
    }
#endif
    std::vector<HostTensor> inputs{randomTensor(c.x, 23)};
    if (!c.const_w) inputs.push_back(wt);
    expectCpuMatchesReference(*g, inputs, 1e-4);
  }
}

#ifdef GKRT_HAVE_DNNL
// Constant weights whose rows lie a multiple of 4 KiB apart (1024 and 2048 columns, not
// 1040 or 1000): where oneDNN's matmul is its gemm:jit (AVX2 tiers) their rows are stored
// 64 bytes further apart; a brgemm (AVX-512 tiers) takes them as they are. Every product
// equals the reference, transposed weights and a batch of activations too.
TEST(CpuBackend, WeightRowsFourKibApartArePaddedForOneDnnsGemm) {
  struct Case { int64_t k, n; bool tb, padded; };
  for (const Case& c : std::vector<Case>{{64, 1024, false, true}, {32, 2048, false, true}, {64, 1040, false, false},
                                         {64, 1000, false, false}, {1024, 48, true, false}}) {
    GraphBuilder b;
    Value a = b.input("a", DType::kFloat32, {2, 9, c.k});
    const Shape ws = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
    const HostTensor wt = randomTensor(ws, 51);
    b.output(b.op1("BatchMatMul", {a, b.constant("w", DType::kFloat32, ws, wt.data())}, MatMulAttrs{false, c.tb}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    auto k = cpu::compileOneDnn(*g, g->nodes[0]);
    ASSERT_TRUE(k.ok()) << k.status().toString();
    const std::string detail = (*k)->detail();
    const bool gemm_jit = detail.find("gemm:jit") != std::string::npos;
    EXPECT_EQ(detail.find("weight rows padded") != std::string::npos, gemm_jit && c.padded)
        << c.k << "x" << c.n << ": " << detail;
    HostTensor y(DType::kFloat32, {2, 9, c.n}), x = randomTensor({2, 9, c.k}, 52);
    std::vector<char> scratch((*k)->workspaceBytes() + 64);
    ASSERT_TRUE((*k)->launch({TensorView{DType::kFloat32, x.shape(), x.data()}},
                             {MutableTensorView{DType::kFloat32, y.shape(), y.data()}}, scratch.data()).ok());
    auto want = testing::runGraph(*g, {x}, "reference", optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    const std::string diff = testing::compareTensors(y, (*want)[0], 1e-4, 1e-5);
    EXPECT_TRUE(diff.empty()) << c.k << "x" << c.n << ": " << diff;
  }
}

// A convolution along H of maps one wide runs as the same bytes along W (oneDNN's jit
// kernels vectorise along W; along H one ran 4.4x slower), its epilogue as post-ops; a
// full-size residual operand [N, C, L, 1] keeps it along H. Both equal the reference.
TEST(CpuBackend, OneDimensionalConvolutionAlongHeightRunsAlongWidth) {
  for (bool residual : {false, true}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 8, 50, 1});
    const HostTensor wt = randomTensor({48, 8, 5, 1}, 41), bias = randomTensor({48}, 42);
    Conv2DAttrs a;
    a.strides = {1, 1};
    a.pads = {2, 0, 2, 0};
    a.dilations = {1, 1};
    a.groups = 1;
    Value y = b.op1("Conv2D", {x, b.constant("w", DType::kFloat32, {48, 8, 5, 1}, wt.data()),
                               b.constant("b", DType::kFloat32, {48}, bias.data())}, a);
    if (residual) y = b.add(y, b.input("r", DType::kFloat32, {1, 48, 50, 1}));
    b.output(b.op1("ReLU", {y}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    auto k = cpu::compileOneDnnConv(*g, g->nodes[0], nullptr, /*allow_ref=*/false);
    ASSERT_TRUE(k.ok()) << k.status().toString();
    EXPECT_NE((*k)->detail().find("run along W"), std::string::npos) << (*k)->detail();
    std::vector<HostTensor> inputs{randomTensor({1, 8, 50, 1}, 43)};
    if (residual) inputs.push_back(randomTensor({1, 48, 50, 1}, 44));
    expectCpuMatchesReference(*g, inputs, 1e-4);
  }
}
#endif

// Comparisons of integer tensors inside one fused loop, read as float32 where that is
// exact: a one-hot (Equal of ids [1, S, 1] against a constant iota, then Cast) and Less
// of int64 ids against a constant; int32 against an int32 input, or against a constant of
// 2^24 or more, is not exact in float32 and stays off the loop (and still right).
TEST(CpuBackend, IntegerComparisonsRunInTheFusedLoop) {
  const int64_t S = 70, V = 37;
  std::vector<int32_t> iota(V), ids(S), big(V), other(S * V);
  for (int64_t v = 0; v < V; ++v) iota[v] = int32_t(v), big[v] = (1 << 24) + int32_t(v);
  for (int64_t s = 0; s < S; ++s) ids[s] = s % 3 == 0 ? (1 << 24) + 1 : int32_t(s % 45) - 4;  // out of range too
  for (size_t i = 0; i < other.size(); ++i) other[i] = int32_t(i % 41) - 2;
  HostTensor ids_t(DType::kInt32, {1, S, 1}), ids64(DType::kInt64, {1, S, V}), other_t(DType::kInt32, {1, S, V});
  for (int64_t s = 0; s < S; ++s) ids_t.as<int32_t>()[s] = ids[s];
  for (int64_t i = 0; i < S * V; ++i) ids64.as<int64_t>()[i] = other[i] * 1000003LL, other_t.as<int32_t>()[i] = other[i];
  std::vector<int64_t> limits(V);
  for (int64_t v = 0; v < V; ++v) limits[v] = v * 1000003LL % 16777213 - 8000000;  // below 2^24
  struct Case { const char* name; bool fused_loop; };
  for (const Case c : {Case{"one_hot", true}, Case{"less_int64", true}, Case{"input_vs_input", false},
                       Case{"big_constant", false}}) {
    GraphBuilder b;
    std::vector<HostTensor> inputs;
    Value e;
    const std::string name = c.name;
    if (name == "less_int64") {
      Value x = b.input("x", DType::kInt64, {1, S, V});
      e = b.op1("Less", {x, b.constant("c", DType::kInt64, {V}, limits.data())});
      inputs.push_back(ids64);
    } else {
      Value x = b.input("x", DType::kInt32, {1, S, 1});
      inputs.push_back(ids_t);
      if (name == "input_vs_input") {
        e = b.op1("Equal", {x, b.input("o", DType::kInt32, {1, S, V})});
        inputs.push_back(other_t);
      } else {
        e = b.op1("Equal", {x, b.constant("c", DType::kInt32, {V}, name == "one_hot" ? iota.data() : big.data())});
      }
    }
    CastAttrs to_float;
    b.output(b.mul(b.op1("Cast", {e}, to_float), 0.5f), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const ir::Graph fused = fusedFor(*g, FusionColumn::kCpu);
    ASSERT_EQ(fused.nodes.size(), 1u) << name;
    EXPECT_EQ(cpu::canRunElementwise(fused, fused.nodes[0]), c.fused_loop) << name;
    expectCpuMatchesReference(*g, inputs, 0.0);
  }
}

// int32 Add/Sub before a Cast to float32 (a ConvInteger's bias and dequantization, as
// onnxruntime's quantizer writes it) in one fused loop, exactly: the sums of values past
// 2^24 equal the integer ones (float32 operands would round them first); an int32 result
// read by anything but a Cast keeps its cluster off the loop.
TEST(CpuBackend, Int32ArithmeticBeforeACastRunsInTheFusedLoop) {
  const Shape xs{2, 6, 5, 7};
  HostTensor x(DType::kInt32, xs), bias(DType::kInt32, {1, 6, 1, 1});
  for (int64_t i = 0; i < numElements(xs); ++i) x.as<int32_t>()[i] = int32_t((i * 7919) % 2000001) * 50 - 50000001;
  for (int64_t c = 0; c < 6; ++c) bias.as<int32_t>()[c] = 50000000 - int32_t(c) * 16777217;
  std::vector<int32_t> offsets(7);
  for (int k = 0; k < 7; ++k) offsets[k] = 33554431 * (k - 3);
  for (const char* name : {"add_input", "sub_constant", "add_then_compare"}) {
    GraphBuilder b;
    Value xv = b.input("x", DType::kInt32, xs);
    std::vector<HostTensor> inputs{x};
    const std::string n = name;
    Value sum;
    if (n == "sub_constant") {
      sum = b.op1("Sub", {xv, b.constant("o", DType::kInt32, {7}, offsets.data())});
    } else {
      sum = b.add(xv, b.input("bias", DType::kInt32, {1, 6, 1, 1}));
      inputs.push_back(bias);
    }
    CastAttrs to_float;
    Value f = n == "add_then_compare" ? b.op1("Cast", {b.op1("Greater", {sum, xv})}, to_float) : b.op1("Cast", {sum}, to_float);
    b.output(b.mul(f, 0.5f), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const ir::Graph fused = fusedFor(*g, FusionColumn::kCpu);
    if (n != "add_then_compare") {  // (that one: fusion's clusters, whichever they are, must stay right)
      ASSERT_EQ(fused.nodes.size(), 1u) << name;
      EXPECT_TRUE(cpu::canRunElementwise(fused, fused.nodes[0])) << name;
    }
    for (const ir::Node& node : fused.nodes) {  // no loop reads an int32 step's value but a Cast
      if (n == "add_then_compare" && node.subgraph && node.subgraph->nodes.size() > 1 &&
          std::string(node.subgraph->nodes[1].op->name) == "Greater") {
        EXPECT_FALSE(cpu::canRunElementwise(fused, node));
      }
    }
    expectCpuMatchesReference(*g, inputs, 0.0);
  }
}

// A cluster with outputs of two shapes (an attention mask's Select, which later layers
// read too, and its Add to the scores: ONNX exports of BERT): the smaller output is
// computed once before the loop and copied out, the loop runs over the larger one; both
// equal to the reference.
TEST(CpuBackend, ClusterWithASmallerOutputRunsTheLoopOverTheLargerOne) {
  const Shape s{2, 3, 40, 33}, ms{1, 1, 40, 33};
  HostTensor scores = randomTensor(s, 72), mask(DType::kBool, ms);
  for (int64_t i = 0; i < numElements(ms); ++i) mask.as<uint8_t>()[i] = (i * 5) % 7 < 4;
  GraphBuilder b;
  Value x = b.input("scores", DType::kFloat32, s);
  Value m = b.input("mask", DType::kBool, ms);
  Value bias = b.op1("Select", {m, b.scalar(0.0f, x), b.scalar(-3.0e38f, x)});
  b.output(bias, "bias");
  b.output(b.add(x, bias), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const ir::Graph fused = fusedFor(*g, FusionColumn::kCpu);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_TRUE(cpu::canRunElementwise(fused, fused.nodes[0]));
  expectCpuMatchesReference(*g, {scores, mask}, 0.0);
}

// IsNan, IsInf and IsFinite on their own (the cpu column clusters none of them) run the
// own bit-test loop: NaNs of both signs and payloads, infinities, the largest finite and
// denormal values, each equal to the reference.
TEST(CpuBackend, FloatClassTestsRunTheOwnLoop) {
  HostTensor x = randomTensor({3, 37, 29}, 73);
  const uint32_t special[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u, 0x80000000u};
  for (size_t k = 0; k < sizeof special / sizeof special[0]; ++k) std::memcpy(x.as<float>() + k * 97, &special[k], 4);
  for (const char* op : {"IsNan", "IsInf", "IsFinite"}) {
    GraphBuilder b;
    b.output(b.op1(op, {b.input("x", DType::kFloat32, {3, 37, 29})}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    auto want = testing::runGraph(*g, {x}, "reference", optLevel(0));
    ASSERT_TRUE(want.ok());
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = 2;
    auto got = testing::runWithKernels(*g, {x}, o);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->countDetail("own float class loop"), 1) << op << ": " << got->details;
    EXPECT_EQ(testing::compareTensors(got->outputs[0], (*want)[0], 0, 0), "") << op;
  }
}

// Select in the fused loop: the NaN guard after a softmax (PyTorch's SDPA export:
// Select(IsNan(p), 0, p); the cpu column clusters no IsNan, so its bool result is read
// whole), a bool mask input broadcast over the heads, and a condition from a comparison
// inside the cluster; each equal to the reference, NaN too. IsNan inside a cluster (as
// the gpu column makes them) runs in the loop as well.
TEST(CpuBackend, SelectAndIsNanRunInTheFusedLoop) {
  const Shape s{2, 3, 40, 33};
  HostTensor p = randomTensor(s, 71), mask(DType::kBool, {1, 1, 40, 33});
  for (int64_t i = 0; i < numElements(s); i += 17) p.as<float>()[i] = std::nanf("");
  for (int64_t i = 0; i < 40 * 33; ++i) mask.as<uint8_t>()[i] = (i * 7) % 5 < 3;
  for (const char* name : {"nan_guard", "bool_mask", "compare"}) {
    GraphBuilder b;
    Value x = b.input("p", DType::kFloat32, s);
    std::vector<HostTensor> inputs{p};
    const std::string n = name;
    Value y;
    if (n == "nan_guard") {
      y = b.op1("Select", {b.op1("IsNan", {x}), b.scalar(0.0f, x), x});
    } else if (n == "bool_mask") {
      y = b.op1("Select", {b.input("mask", DType::kBool, {1, 1, 40, 33}), x, b.scalar(-3.0e38f, x)});
      inputs.push_back(mask);
    } else {
      y = b.op1("Select", {b.op1("Less", {x, b.scalar(0.25f, x)}), x, b.op1("Exp", {x})});
    }
    b.output(b.mul(y, 2.0f), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const ir::Graph fused = fusedFor(*g, FusionColumn::kCpu);
    ASSERT_EQ(fused.nodes.size(), n == "nan_guard" ? 2u : 1u) << name;
    EXPECT_TRUE(cpu::canRunElementwise(fused, fused.nodes.back())) << name;
    if (n == "nan_guard") {  // the gpu column's cluster of both
      const ir::Graph gpu = fusedFor(*g, FusionColumn::kGpu);
      ASSERT_EQ(gpu.nodes.size(), 1u);
      EXPECT_TRUE(cpu::canRunElementwise(gpu, gpu.nodes[0]));
      auto want = testing::runGraph(*g, inputs, "reference", optLevel(0));
      auto got = testing::runGraph(*g, inputs, "cpu", *parseFusionFlags("--fusion_profile=gpu"));
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-6, 1e-6), "");
    }
    expectCpuMatchesReference(*g, inputs, 1e-6);
  }
}

TEST(CpuBackend, PoolingMatchesReference) {
  for (const char* op : {"MaxPool", "AvgPool"}) {
    for (bool include_pad : {false, true}) {
      GraphBuilder b;
      Value x = b.input("x", DType::kFloat32, {2, 3, 11, 8});
      PoolAttrs a;
      a.kernel = {3, 2};
      a.strides = {2, 2};
      a.pads = {1, 0, 1, 1};
      a.ceil_mode = include_pad;
      a.count_include_pad = include_pad;
      b.output(b.op1(op, {x}, a), "y");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().toString();
      expectCpuMatchesReference(*g, {randomTensor({2, 3, 11, 8}, 31)}, 1e-5);
    }
  }
}

}  // namespace
}  // namespace gkrt
