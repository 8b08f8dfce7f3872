// opt_level 0..3 each run a different pipeline and give the same outputs on real
// blocks: an MLP, a LayerNorm block, a softmax-attention block and a conv block.
#include <random>

#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

std::vector<float> randomValues(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Value weight(GraphBuilder& b, const Shape& s, uint32_t seed, float scale = 0.3f) {
  return b.constant(s, randomValues(static_cast<size_t>(numElements(s)), seed, scale));
}

ir::Graph mlp() {  // x @ W1 + b1 -> GeLU -> @ W2 + b2 -> Softmax
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 16});
  Value h = b.add(b.matmul(x, weight(b, {16, 32}, 1)), weight(b, {32}, 2));
  h = b.op1("GeLU", {h}, GeluAttrs{});
  Value y = b.add(b.matmul(h, weight(b, {32, 10}, 3)), weight(b, {10}, 4));
  b.output(b.op1("Softmax", {y}, AxisAttrs{-1, false}), "y");
  return *b.finish();
}

ir::Graph layerNormBlock() {  // LayerNorm(x + residual) * 1 + 0, with a scaled branch
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 6, 16});
  Value r = b.input("r", DType::kFloat32, {2, 6, 16});
  Value s = b.add(x, b.mul(r, 1.0f));  // x*1 is simplified at opt_level >= 2
  auto ln = b.op("LayerNorm", {s, weight(b, {16}, 5), weight(b, {16}, 6)}, NormAttrs{-1, 1e-5f}, 1);
  b.output(b.add(ln[0], 0.0f), "y");
  return *b.finish();
}

ir::Graph attentionBlock() {  // softmax(Q K^T / sqrt(d) + mask) V, 2 heads
  GraphBuilder b;
  Value q = b.input("q", DType::kFloat32, {2, 8, 16});
  Value k = b.input("k", DType::kFloat32, {2, 8, 16});
  Value v = b.input("v", DType::kFloat32, {2, 8, 16});
  Value mask = weight(b, {8, 8}, 7, 1.0f);
  Value scores = b.op1("BatchMatMul", {q, k}, MatMulAttrs{false, true});
  scores = b.add(b.mul(scores, 0.25f), mask);
  Value p = b.op1("Softmax", {scores}, AxisAttrs{-1, false});
  b.output(b.op1("BatchMatMul", {p, v}, MatMulAttrs{}), "y");
  return *b.finish();
}

ir::Graph convBlock() {  // Conv -> BatchNorm -> ReLU -> MaxPool, plus a 1x1 shortcut
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 4, 10, 10});
  Conv2DAttrs c3;
  c3.pads = {1, 1, 1, 1};
  Value y = b.op1("Conv2D", {x, weight(b, {8, 4, 3, 3}, 8), weight(b, {8}, 9)}, c3);
  std::vector<float> var = randomValues(8, 10, 0.5f);
  for (float& f : var) f = f + 1.0f;
  y = b.op1("BatchNorm", {y, weight(b, {8}, 11), weight(b, {8}, 12), weight(b, {8}, 13), b.constant({8}, var)},
            NormAttrs{1, 1e-5f});
  Value shortcut = b.op1("Conv2D", {x, weight(b, {8, 4, 1, 1}, 14), Value{}}, Conv2DAttrs{});
  y = b.relu(b.add(y, shortcut));
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.strides = {2, 2};
  b.output(b.op1("MaxPool", {y}, pool), "y");
  return *b.finish();
}

std::vector<HostTensor> inputsFor(const ir::Graph& g) {
  std::vector<HostTensor> in;
  uint32_t seed = 100;
  for (int t : g.inputs) {
    const Shape& s = g.tensors[t].shape;
    in.push_back(HostTensor::fromFloats(s, randomValues(static_cast<size_t>(numElements(s)), seed++)));
  }
  return in;
}

struct Block {
  const char* name;
  ir::Graph (*make)();
};

TEST(FusionOptLevels, SameOutputsDifferentPipelines) {
  const Block blocks[] = {{"mlp", mlp}, {"layernorm", layerNormBlock}, {"attention", attentionBlock}, {"conv", convBlock}};
  for (const Block& block : blocks) {
    const ir::Graph g = block.make();
    const auto inputs = inputsFor(g);
    auto base = testing::runGraph(g, inputs, "reference", *parseFusionFlags("--opt_level=0"));
    ASSERT_TRUE(base.ok()) << base.status().toString();
    for (const char* profile : {"cpu", "gpu"}) {
      std::vector<std::set<std::string>> pipelines;
      std::vector<size_t> kernel_counts;
      for (int level = 0; level <= 3; ++level) {
        SCOPED_TRACE(std::string(block.name) + ", " + profile + " table, opt_level " + std::to_string(level));
        const auto flags = *parseFusionFlags("--opt_level=" + std::to_string(level) + " --fusion_profile=" + profile);
        for (const std::string backend : {"reference", "cpu"}) {
          auto out = testing::runGraph(g, inputs, backend, flags);
          ASSERT_TRUE(out.ok()) << out.status().toString();
          for (size_t k = 0; k < out->size(); ++k) {
            EXPECT_EQ(testing::compareTensors((*out)[k], (*base)[k], 1e-4, 1e-5), "") << backend;
          }
        }
        ir::Graph fused = ir::cloneGraph(g);
        auto report = runFusionPipeline(fused, flags, *parseFusionColumn(profile));
        ASSERT_TRUE(report.ok());
        std::set<std::string> ran;
        for (const PassRecord& p : report->passes) if (p.ran) ran.insert(p.name);
        pipelines.push_back(ran);
        kernel_counts.push_back(report->kernels);
      }
      for (int a = 0; a < 4; ++a) {
        for (int c = a + 1; c < 4; ++c) EXPECT_NE(pipelines[a], pipelines[c]) << "opt_level " << a << " vs " << c;
      }
      EXPECT_TRUE(pipelines[0].empty());
      // Expansion can add kernels (a LayerNorm becomes reductions that only stitching
      // re-joins), so only opt_level 3 >= 2 holds in general.
      EXPECT_LE(kernel_counts[3], kernel_counts[2]) << block.name << " " << profile;
      std::cout << block.name << " (" << profile << " table): kernels at opt_level 0..3 = " << kernel_counts[0]
                << ", " << kernel_counts[1] << ", " << kernel_counts[2] << ", " << kernel_counts[3] << "\n";
    }
  }
}

// A cluster the backend's supports() refuses is split back into its ops (each of which
// the backend may run) instead of falling back to the host whole; clusters it accepts stay.
TEST(FusionPipeline, ClustersTheBackendRefusesAreDissolved) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 16});
  Value a = b.op1("Exp", {b.mul(b.add(x, 1.0f), 2.0f)});  // one elementwise cluster
  Value r = b.op1("ReduceSum", {b.op1("Abs", {a})}, AxesAttrs{{1}, true});
  b.output(a, "a");
  b.output(r, "r");
  ir::Graph base = *b.finish();
  auto opts = parseFusionFlags("--opt_level=2");
  ASSERT_TRUE(opts.ok());
  ir::Graph all = ir::cloneGraph(base);
  auto kept = runFusionPipeline(all, *opts, FusionColumn::kGpu, [](const ir::Node&) { return true; });
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  ASSERT_GE(kept->clusters, 1u);
  EXPECT_EQ(kept->dissolved, 0u);
  // Refuse every fused node that holds an Exp: that cluster's ops come back one by one.
  auto holds_exp = [](const ir::Node& n) {
    if (!n.subgraph) return false;
    for (const ir::Node& m : n.subgraph->nodes) if (std::string(m.op->name) == "Exp") return true;
    return false;
  };
  ir::Graph some = ir::cloneGraph(base);
  auto split = runFusionPipeline(some, *opts, FusionColumn::kGpu, [&](const ir::Node& n) { return !holds_exp(n); });
  ASSERT_TRUE(split.ok()) << split.status().toString();
  EXPECT_GE(split->dissolved, 1u);
  EXPECT_GT(split->kernels, kept->kernels);
  for (const ir::Node& n : some.nodes) EXPECT_FALSE(holds_exp(n)) << n.name << " still holds the refused cluster";
  EXPECT_EQ(split->ops_after, kept->ops_after);  // the same ops, only ungrouped
  // The result still computes the same thing.
  const std::vector<HostTensor> in = {testing::randomTensor({8, 16}, 3)};
  auto want = testing::runGraph(base, in, "reference", testing::optLevel(0));
  auto got = testing::runGraph(some, in, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t k = 0; k < want->size(); ++k) EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 1e-5, 1e-6), "");
}

}  // namespace
}  // namespace gkrt
