// The cpu backend's own MaxPool/AvgPool on channel-blocked activations
// (backends/cpu/nn/blocked_pool.h): between two convolutions (so the layout plan keeps the
// pooled tensors blocked), every window/stride/padding/ceil_mode/count_include_pad
// combination below must be picked and equal the reference backend's output.
#include "backends/cpu/layout/blocked_layout.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

Value weight(GraphBuilder& b, const Shape& s, uint32_t seed) {
  std::vector<float> v = testing::randomTensor(s, seed).toFloats();
  for (float& f : v) f *= 0.2f;
  return b.constant(s, v);
}

struct PoolCase {
  const char* op;
  Ints kernel, strides, pads;
  bool ceil_mode, count_include_pad;
};

TEST(BlockedPool, MatchesReferenceBetweenConvolutions) {
  if (cpu::preferredBlock() == 0) GTEST_SKIP() << "no blocked layouts in this build";
  const PoolCase cases[] = {
      {"MaxPool", {3, 3}, {2, 2}, {0, 0, 0, 0}, false, false},  // SqueezeNet
      {"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false},  // ResNet
      {"MaxPool", {5, 5}, {1, 1}, {2, 2, 2, 2}, false, false},  // YOLO's SPPF
      {"MaxPool", {3, 3}, {2, 2}, {0, 1, 1, 0}, true, false},
      {"AvgPool", {3, 3}, {1, 1}, {1, 1, 1, 1}, false, false},
      {"AvgPool", {3, 3}, {1, 1}, {1, 1, 1, 1}, false, true},
      {"AvgPool", {2, 3}, {2, 2}, {0, 1, 0, 1}, true, true},
      {"AvgPool", {3, 3}, {2, 2}, {1, 0, 1, 0}, true, false},
  };
  for (const PoolCase& c : cases) {
   for (bool to_plain : {false, true}) {  // the pooled tensor also a graph output: written plain
    SCOPED_TRACE(std::string(c.op) + " kernel " + std::to_string(c.kernel[0]) + "x" + std::to_string(c.kernel[1]) +
                 (c.ceil_mode ? " ceil" : "") + (c.count_include_pad ? " count_include_pad" : "") +
                 (to_plain ? ", output plain" : ""));
    const int64_t C = 2 * cpu::preferredBlock();
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {2, C, 13, 15});
    Conv2DAttrs same;
    same.pads = {1, 1, 1, 1};
    Value y = b.relu(b.op1("Conv2D", {x, weight(b, {C, C, 3, 3}, 1), weight(b, {C, 1, 1}, 2)}, same));
    PoolAttrs p;
    p.kernel = c.kernel;
    p.strides = c.strides;
    p.pads = c.pads;
    p.ceil_mode = c.ceil_mode;
    p.count_include_pad = c.count_include_pad;
    y = b.op1(c.op, {y}, p);
    b.output(b.op1("Conv2D", {y, weight(b, {8, C, 1, 1}, 3)}, Conv2DAttrs{}), "y");
    if (to_plain) b.output(y, "pooled");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const HostTensor in = testing::randomTensor({2, C, 13, 15}, 4);
    auto want = testing::runGraph(*g, {in}, "reference", testing::optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (int threads : {1, 2}) {
      SessionOptions o;
      o.backend = "cpu";
      o.backend_options.num_threads = threads;
      auto r = testing::runWithKernels(*g, {in}, o);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      int own = 0;
      for (const Session::KernelInfo& k : r->kernels) {
        own += k.detail.rfind("own, nChw", 0) == 0 && (k.detail.find("to plain") != std::string::npos) == to_plain;
      }
      // (A plain output of a pooling oneDNN has no fast kernel for makes its input plain
      // too: the own plain kernel runs it.)
      if (!to_plain || (std::string(c.op) == "MaxPool" && !c.ceil_mode)) { EXPECT_EQ(own, 1) << r->details; }
      EXPECT_EQ(testing::compareTensors(r->outputs[0], (*want)[0], 1e-4, 1e-5), "") << r->details;
      if (to_plain) { EXPECT_EQ(testing::compareTensors(r->outputs[1], (*want)[1], 1e-5, 1e-6), "") << r->details; }
    }
   }
  }
}

}  // namespace
}  // namespace gkrt
