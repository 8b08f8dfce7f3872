// The cpu backend's Winograd F(4x4, 3x3) convolution (backends/cpu/nn/winograd_conv.h):
// the engine against a direct convolution computed in double on blocked (nChw8c and
// nChw16c) tensors, in both of its work splits, with every epilogue step; then in sessions,
// where it must be picked for the 3x3 stride-1 convolutions it pays off on, with their
// epilogues in the same kernel, and match the reference backend.
//
// Tolerance: Winograd's transforms add and subtract partial sums up to ~10x the output
// (points 0, +-1, +-2), so in float32 the error is a few ulps of those: measured
// <= 1e-5 of the largest output for C <= 256; the tests allow 1e-4 of it.
#include "backends/cpu/nn/winograd_conv.h"

#include <cstdlib>
#include <cmath>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/layout/blocked_layout.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using cpu::WinogradConv;
using cpu::WinogradShape;
using cpu::WinogradStep;

std::vector<float> randomFloats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

// Plain NCHW -> nChw{B}c.
std::vector<float> toBlocked(const std::vector<float>& x, int64_t N, int64_t C, int64_t HW, int64_t B) {
  std::vector<float> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < HW; ++i) y[((n * (C / B) + c / B) * HW + i) * B + c % B] = x[(n * C + c) * HW + i];
  return y;
}

// Direct convolution in double, NCHW; bias added.
std::vector<double> directConv(const WinogradShape& s, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b) {
  std::vector<double> y(static_cast<size_t>(s.N * s.K * s.OH * s.OW));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          double acc = b.empty() ? 0.0 : b[k];
          for (int64_t c = 0; c < s.C; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) {
                const int64_t ih = oh + r - s.pad_top, iw = ow + q - s.pad_left;
                if (ih < 0 || iw < 0 || ih >= s.H || iw >= s.W) continue;
                acc += double(x[((n * s.C + c) * s.H + ih) * s.W + iw]) * w[((k * s.C + c) * 3 + r) * 3 + q];
              }
          y[((n * s.K + k) * s.OH + oh) * s.OW + ow] = acc;
        }
  return y;
}

double applyRef(const WinogradStep& st, double v, double full, double chan) {
  const double a = st.alpha, b = st.beta;
  switch (st.kind) {
    case WinogradStep::kRelu: return v > 0 ? v : a * v;
    case WinogradStep::kClip: return std::min(std::max(v, a), b);
    case WinogradStep::kLinear: return a * v + b;
    case WinogradStep::kSigmoid: return 1 / (1 + std::exp(-v));
    case WinogradStep::kSwish: return v / (1 + std::exp(-a * v));
    case WinogradStep::kHardSwish: return v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
    case WinogradStep::kHardSigmoid: return std::min(std::max(a * v + b, 0.0), 1.0);
    case WinogradStep::kTanh: return std::tanh(v);
    case WinogradStep::kGeluErf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case WinogradStep::kGeluTanh: return 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    case WinogradStep::kAbs: return std::fabs(v);
    case WinogradStep::kSquare: return v * v;
    case WinogradStep::kSqrt: return std::sqrt(v);
    case WinogradStep::kExp: return std::exp(v);
    case WinogradStep::kBinary: {
      const double o = st.operand == WinogradStep::kFull ? full : st.operand == WinogradStep::kChannel ? chan : a;
      switch (st.op) {
        case WinogradStep::kAdd: return v + o;
        case WinogradStep::kSub: return v - o;
        case WinogradStep::kMul: return v * o;
        case WinogradStep::kMax: return std::max(v, o);
        case WinogradStep::kMin: return std::min(v, o);
      }
    }
  }
  return v;
}

// Runs the engine on blocked tensors and compares with the direct convolution (plus
// the steps applied in double). Returns the largest error relative to max |y|.
double checkEngine(const WinogradShape& s, const std::vector<WinogradStep>& steps, int threads, bool* whole_image,
                   WinogradConv::Split split = WinogradConv::Split::kAuto, int64_t* cols = nullptr) {
  const auto x = randomFloats(static_cast<size_t>(s.N * s.C * s.H * s.W), 1, 1.0f);
  const auto w = randomFloats(static_cast<size_t>(s.K * s.C * 9), 2, 1.0f / std::sqrt(9.0f * s.C));
  const auto b = randomFloats(static_cast<size_t>(s.K), 3, 0.5f);
  const size_t out = static_cast<size_t>(s.N * s.K * s.OH * s.OW);
  const auto residual = randomFloats(out, 4, 1.0f);
  const auto channel = randomFloats(static_cast<size_t>(s.K), 5, 1.0f);
  std::vector<double> want = directConv(s, x, w, b);
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i) / (s.OH * s.OW) % s.K;
    for (const WinogradStep& st : steps) want[i] = applyRef(st, want[i], residual[i], channel[k]);
  }
  std::vector<WinogradStep> bound = steps;  // operands: input 0 = residual, channel as a constant
  for (WinogradStep& st : bound) {
    if (st.operand == WinogradStep::kFull) st.input = 0;
    if (st.operand == WinogradStep::kChannel) st.channel = channel.data();
  }
  cpu::ThreadPool pool(threads);
  WinogradConv conv(s, w.data(), b.data(), bound, threads, split);
  *whole_image = conv.wholeImage();
  if (cols) *cols = conv.tileColsPerTask();
  std::vector<char> ws(conv.workspaceBytes());
  const auto xb = toBlocked(x, s.N, s.C, s.H * s.W, s.block);
  const auto rb = toBlocked(residual, s.N, s.K, s.OH * s.OW, s.block);
  std::vector<float> yb(out, std::nanf(""));
  conv.run(xb.data(), yb.data(), {rb.data()}, ws.data(), pool);
  std::vector<double> wb(want.size());
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t i = 0; i < s.OH * s.OW; ++i)
        wb[((n * (s.K / s.block) + k / s.block) * s.OH * s.OW + i) * s.block + k % s.block] =
            want[(n * s.K + k) * s.OH * s.OW + i];
  double max_y = 1e-30, max_err = 0;
  for (size_t i = 0; i < out; ++i) {
    max_y = std::max(max_y, std::fabs(wb[i]));
    const double e = std::fabs(yb[i] - wb[i]);
    if (!(e <= max_err)) max_err = std::isnan(e) ? INFINITY : e;
  }
  return max_err / max_y;
}

struct EngineCase {
  WinogradShape s;
  const char* what;
};

TEST(WinogradConv, MatchesDirectConvolutionInBothWorkSplits) {
  const EngineCase cases[] = {
      {{2, 16, 13, 17, 24, 13, 17, 1, 1}, "two images, partial tiles, K not a multiple of 16"},
      {{1, 64, 56, 56, 64, 56, 56, 1, 1}, "ResNet stage 1"},
      {{1, 256, 14, 14, 256, 14, 14, 1, 1}, "ResNet stage 3"},
      {{1, 64, 12, 100, 256, 12, 100, 1, 1}, "a wide row: tile blocks split a row of tiles"},
      {{1, 32, 10, 9, 16, 10, 9, 0, 2}, "asymmetric padding: 0 top, 2 left, 2 bottom, 0 right"},
      {{1, 16, 9, 11, 32, 7, 9, 0, 0}, "no padding"},
  };
  // Under an emulator (the cross build's tests, GKRT_TEST_EMULATED=1 from its ctest
  // preset) the two ResNet-sized cases are left to the native run: 130 s under qemu.
  const bool emulated = std::getenv("GKRT_TEST_EMULATED") != nullptr;
  for (const int64_t block : {8, 16}) {  // nChw16c: each 16-channel block as two 8-float halves
    for (EngineCase c : cases) {
      c.s.block = block;
      if (c.s.C % block || c.s.K % block) continue;
      if (emulated && c.s.C * c.s.K * c.s.H * c.s.W > (int64_t{1} << 22)) continue;
      for (int threads : {1, 2}) {
        for (auto split : {WinogradConv::Split::kWholeImage, WinogradConv::Split::kTileBlocks}) {
          bool whole = false;
          int64_t cols = 0;
          const double err = checkEngine(c.s, {}, threads, &whole, split, &cols);
          EXPECT_EQ(whole, split == WinogradConv::Split::kWholeImage);
          if (c.s.W == 100 && !whole) { EXPECT_LT(cols, (c.s.OW + 3) / 4) << "the row was not split"; }
          EXPECT_LE(err, 1e-4) << c.what << ", block " << block << ", " << threads << " threads, whole image " << whole;
        }
      }
    }
  }
}

TEST(WinogradConv, EveryEpilogueStep) {
  using S = WinogradStep;
  auto eltwise = [](S::Kind k, float a = 0, float b = 0) {
    S s;
    s.kind = k;
    s.alpha = a;
    s.beta = b;
    return s;
  };
  auto binary = [](S::Op op, S::Operand o, float scalar = 0) {
    S s;
    s.kind = S::kBinary;
    s.op = op;
    s.operand = o;
    s.alpha = scalar;
    return s;
  };
  const std::vector<std::vector<S>> chains = {
      {eltwise(S::kRelu)},
      {binary(S::kAdd, S::kFull), eltwise(S::kRelu)},  // ResNet's residual block
      {eltwise(S::kSwish, 1.0f)},                        // YOLO's SiLU
      {eltwise(S::kHardSwish), binary(S::kMul, S::kChannel)},
      {eltwise(S::kClip, 0.0f, 6.0f), eltwise(S::kLinear, 0.5f, -1.0f)},
      {eltwise(S::kRelu, 0.1f), eltwise(S::kSigmoid)},
      {eltwise(S::kHardSigmoid, 0.2f, 0.5f), binary(S::kSub, S::kFull)},
      {eltwise(S::kTanh), binary(S::kMax, S::kScalar, 0.1f), binary(S::kMin, S::kChannel)},
      {eltwise(S::kGeluErf)},
      {eltwise(S::kGeluTanh), eltwise(S::kAbs), eltwise(S::kSqrt)},
      {eltwise(S::kSquare), eltwise(S::kLinear, -1.0f, 0.0f), eltwise(S::kExp)},
  };
  for (size_t i = 0; i < chains.size(); ++i) {
    for (auto split : {WinogradConv::Split::kWholeImage, WinogradConv::Split::kTileBlocks}) {
      // nChw8c with K = 24, nChw16c with K = 32 (per-channel operands: 16 channels a block)
      for (const WinogradShape& s : {WinogradShape{2, 16, 18, 19, 24, 18, 19, 1, 1},
                                    WinogradShape{2, 16, 18, 19, 32, 18, 19, 1, 1, 16}}) {
        bool whole = false;
        EXPECT_LE(checkEngine(s, chains[i], 2, &whole, split), 1e-4)
            << "chain " << i << ", block " << s.block << ", whole image " << whole;
      }
    }
  }
}

TEST(WinogradConv, WorthItOnlyWhereItPaysOff) {
  EXPECT_TRUE(WinogradConv::worthIt({1, 64, 56, 56, 64, 56, 56, 1, 1}));
  EXPECT_FALSE(WinogradConv::worthIt({1, 512, 7, 7, 512, 7, 7, 1, 1}));  // 4 tiles: weights dominate
  EXPECT_FALSE(WinogradConv::worthIt({1, 8, 56, 56, 64, 56, 56, 1, 1}));  // too few input channels
  EXPECT_FALSE(WinogradConv::worthIt({1, 64, 56, 56, 12, 56, 56, 1, 1}));  // not a multiple of 8
  EXPECT_FALSE(WinogradConv::worthIt({1, 64, 56, 56, 24, 56, 56, 1, 1, 16}));  // not a multiple of 16
  EXPECT_TRUE(WinogradConv::worthIt({1, 64, 56, 56, 32, 56, 56, 1, 1, 16}));
}

// ---- In sessions -------------------------------------------------------------------

Value weight(GraphBuilder& b, const Shape& s, uint32_t seed, float scale) {
  std::vector<float> v = testing::randomTensor(s, seed).toFloats();
  for (float& f : v) f *= scale;
  return b.constant(s, v);
}

Value conv3x3(GraphBuilder& b, Value x, int64_t cin, int64_t cout, uint32_t seed, int64_t stride = 1) {
  Conv2DAttrs a;
  a.pads = {1, 1, 1, 1};
  a.strides = {stride, stride};
  return b.op1("Conv2D", {x, weight(b, {cout, cin, 3, 3}, seed, 1.0f / std::sqrt(9.0f * cin)),
                          weight(b, {cout, 1, 1, 1}, seed + 1, 0.3f)}, a);
}

testing::KernelRun runCpu(const ir::Graph& g, const HostTensor& x, int threads, bool winograd) {
  SessionOptions o;
  o.backend = "cpu";
  o.backend_options.num_threads = threads;
  o.backend_options.cpu_winograd = winograd;
  auto r = testing::runWithKernels(g, {x}, o);
  EXPECT_TRUE(r.ok()) << r.status().toString();
  return r.ok() ? *r : testing::KernelRun{};
}

// A stem, a residual block (conv+bias+ReLU, conv+bias+Add+ReLU), SiLU, HardSwish and
// ReLU6 epilogues, a per-channel Mul, a strided 3x3 (oneDNN's) and a 1x1 on 24x24.
ir::Graph vggResidualGraph() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 16, 24, 24});
  Value stem = b.relu(conv3x3(b, x, 16, 32, 1));
  Value y = b.relu(conv3x3(b, stem, 32, 32, 3));
  y = b.relu(b.add(conv3x3(b, y, 32, 32, 5), stem));
  Value silu = conv3x3(b, y, 32, 32, 7);
  silu = b.mul(silu, b.op1("Sigmoid", {silu}));
  Value hs = b.op1("HSwish", {conv3x3(b, silu, 32, 48, 9)});
  Value r6 = b.op1("Clip", {conv3x3(b, hs, 48, 32, 11)}, ClipAttrs{0.0f, 6.0f});
  Value scaled = b.mul(conv3x3(b, r6, 32, 32, 13), weight(b, {1, 32, 1, 1}, 15, 1.0f));
  Value down = b.relu(conv3x3(b, scaled, 32, 32, 17, 2));
  Conv2DAttrs one;
  b.output(b.op1("Conv2D", {down, weight(b, {8, 32, 1, 1}, 19, 0.2f)}, one), "y");
  return *b.finish();
}

// The reference backend's outputs of g at opt_level 0 and the largest |value| of each.
struct Reference {
  std::vector<HostTensor> y;
  std::vector<double> max_abs;
};
Reference referenceRun(const ir::Graph& g, const HostTensor& x) {
  Reference r;
  auto ref = testing::runGraph(g, {x}, "reference", testing::optLevel(0));
  EXPECT_TRUE(ref.ok()) << ref.status().toString();
  if (!ref.ok()) return r;
  r.y = *ref;
  for (const HostTensor& t : r.y) {
    double m = 0;
    for (float v : t.toFloats()) m = std::max(m, double(std::fabs(v)));
    r.max_abs.push_back(m);
  }
  return r;
}

// Stride-1 3x3 convolutions between blocked tensors run as gkrt's own Winograd
// convolutions (nChw8c on AVX2 plans, nChw16c on AVX-512 ones), within 1e-4 of the
// largest output, six of the seven with their whole epilogue in the kernel (the stem
// reads the plain graph input: oneDNN's), by default and with GKRT_CPU_WINOGRAD=own (which
// takes them on every core; by default a core with full-width AVX-512 leaves maps of under
// 36 output tiles to oneDNN's Winograd, these have 36).
// GKRT_CPU_WINOGRAD=onednn's path (AVX-512 only) is checked separately below;
// cpu_winograd off gives direct convolutions only.
TEST(WinogradSessions, PickedForStrideOneThreeByThreeWithEpiloguesAndMatchesReference) {
  const int block = cpu::preferredBlock();
  if (block != 8 && block != 16) GTEST_SKIP() << "needs a blocked layout (AVX2 or AVX-512)";
  const char* marker = "Winograd";
  const ir::Graph g = vggResidualGraph();
  const HostTensor x = testing::randomTensor({1, 16, 24, 24}, 21);
  const Reference ref = referenceRun(g, x);
  ASSERT_EQ(ref.y.size(), 1u);
  const double max_ref = ref.max_abs[0];
  for (int threads : {1, 2}) {
    setenv("GKRT_CPU_WINOGRAD", "own", 1);
    const testing::KernelRun on = runCpu(g, x, threads, true);
    unsetenv("GKRT_CPU_WINOGRAD");
    ASSERT_EQ(on.outputs.size(), 1u);
    EXPECT_EQ(on.countDetail(marker), 6) << on.details;
    EXPECT_EQ(on.countDetail(block == 16 ? "F(4x4,3x3), nChw16c" : "F(4x4,3x3), nChw8c"), 6) << on.details;
    EXPECT_EQ(testing::compareTensors(on.outputs[0], ref.y[0], 1e-4, 1e-4 * max_ref), "") << on.details;
    const testing::KernelRun chosen = runCpu(g, x, threads, true);
    ASSERT_EQ(chosen.outputs.size(), 1u);
    EXPECT_EQ(chosen.countDetail(marker), 6) << chosen.details;
    EXPECT_EQ(testing::compareTensors(chosen.outputs[0], ref.y[0], 1e-4, 1e-4 * max_ref), "") << chosen.details;
    const testing::KernelRun off = runCpu(g, x, threads, false);
    ASSERT_EQ(off.outputs.size(), 1u);
    EXPECT_EQ(off.countDetail(marker), 0) << off.details;
    EXPECT_EQ(testing::compareTensors(off.outputs[0], ref.y[0], 1e-4, 1e-4 * max_ref), "");
  }
}

// A 3x3 from a blocked tensor to a plain one whose channels are off the block (a
// detector's 96 -> 24 head, the graph's output here): the output channels padded to the
// block (zero weights), then reordered to plain; ReLU in the kernel; against the reference.
TEST(WinogradSessions, OutputChannelsOffTheBlockArePaddedThenPlain) {
  const int block = cpu::preferredBlock();
  if (block != 8 && block != 16) GTEST_SKIP() << "needs a blocked layout (AVX2 or AVX-512)";
  const int64_t K = block == 16 ? 24 : 20;  // padded to 32 or 24
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 16, 40, 40});
  Value mid = b.relu(conv3x3(b, x, 16, 32, 31));
  b.output(b.relu(conv3x3(b, mid, 32, K, 33)), "y");
  const ir::Graph g = *b.finish();
  const HostTensor in = testing::randomTensor({1, 16, 40, 40}, 35);
  const Reference ref = referenceRun(g, in);
  ASSERT_EQ(ref.y.size(), 1u);
  for (int threads : {1, 2}) {
    const testing::KernelRun on = runCpu(g, in, threads, true);
    ASSERT_EQ(on.outputs.size(), 1u);
    EXPECT_EQ(on.countDetail("channels padded to the block, then plain"), 1) << on.details;
    EXPECT_EQ(testing::compareTensors(on.outputs[0], ref.y[0], 1e-4, 1e-4 * ref.max_abs[0]), "") << on.details;
  }
}

// GKRT_CPU_WINOGRAD=onednn on AVX-512 plans: oneDNN's Winograd (jit_*wino*) with the
// epilogue as post-ops where oneDNN 2.6 takes them (ReLU), unary ones (SiLU, HardSwish,
// ReLU6) as in-place eltwise passes after it, binary ones (the residual Add, the
// per-channel Mul) on its direct kernels.
TEST(WinogradSessions, OneDnnWinogradWhenAskedOnAvx512) {
  if (cpu::preferredBlock() != 16) GTEST_SKIP() << "oneDNN 2.6 has Winograd only on AVX-512";
  setenv("GKRT_CPU_WINOGRAD", "onednn", 1);
  const ir::Graph g = vggResidualGraph();
  const HostTensor x = testing::randomTensor({1, 16, 24, 24}, 21);
  const Reference ref = referenceRun(g, x);
  ASSERT_EQ(ref.y.size(), 1u);
  const double max_ref = ref.max_abs[0];
  const testing::KernelRun on = runCpu(g, x, 2, true);
  unsetenv("GKRT_CPU_WINOGRAD");
  ASSERT_EQ(on.outputs.size(), 1u);
  EXPECT_EQ(on.countDetail("Winograd"), 0) << on.details;
  EXPECT_GE(on.countDetail("wino"), 4) << on.details;
  EXPECT_GE(on.countDetail("in-place eltwise pass"), 3) << on.details;
  EXPECT_EQ(testing::compareTensors(on.outputs[0], ref.y[0], 1e-4, 1e-4 * max_ref), "");
}

// On nChw16c plans gkrt's kernel leaves convolutions with large transformed weights
// (36 * C * K floats over 4.5 MiB: 256 -> 256 channels) to oneDNN's F(2x2) Winograd; on
// a core with full-width AVX-512 the 256 x 128 and 128 x 256 too (16 output tiles).
TEST(WinogradSessions, LargeWeightsGoToOneDnnOnAvx512) {
  if (cpu::preferredBlock() != 16) GTEST_SKIP() << "the rule is for nChw16c plans";
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 256, 14, 14});
  Value stem = b.relu(conv3x3(b, x, 256, 256, 1));  // reads the graph input: plain, oneDNN's
  Value big = b.relu(conv3x3(b, stem, 256, 256, 3));
  Value small = b.relu(conv3x3(b, big, 256, 128, 5));
  Value mid = b.relu(conv3x3(b, small, 128, 256, 7));
  Conv2DAttrs one;  // the graph output is plain: this 1x1 reorders, the 3x3s stay blocked
  b.output(b.op1("Conv2D", {mid, weight(b, {16, 256, 1, 1}, 9, 0.1f)}, one), "y");
  const ir::Graph g = *b.finish();
  const HostTensor in = testing::randomTensor({1, 256, 14, 14}, 9);
  const testing::KernelRun on = runCpu(g, in, 2, true);
  const bool full_width = cpu::cpuTier().full_width_512;
  EXPECT_EQ(on.countDetail("Winograd F(4x4,3x3)"), full_width ? 0 : 2) << on.details;  // 256 x 128 and 128 x 256
  EXPECT_GE(on.countDetail("wino"), full_width ? 3 : 1) << on.details;                  // 256 x 256
  const Reference ref = referenceRun(g, in);
  ASSERT_EQ(ref.y.size(), 1u);
  EXPECT_EQ(testing::compareTensors(on.outputs[0], ref.y[0], 1e-4, 1e-4 * ref.max_abs[0]), "");
}

}  // namespace
}  // namespace gkrt
