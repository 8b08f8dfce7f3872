// gkrt's fusion debugging tools: accuracy bisection (with planted wrong rules), the
// before/after fusion picture (DOT) and the benchmark chart's SVG writer.
#include <gtest/gtest.h>

#include <regex>

#include "fusion/planted_fault.h"
#include "runtime/builder.h"
#include "runtime/model_io.h"
#include "tests/unit/test_support.h"
#include "tools/fusion_bisect.h"
#include "tools/graph_dot.h"
#include "tools/svg_chart.h"

namespace gkrt {
namespace {

using tools::BisectOptions;
using tools::BisectResult;

// Plants a wrong rule for one test and always removes it.
struct PlantedFaultScope {
  explicit PlantedFaultScope(PlantedFault f) { plantFusionFaultForTesting(f); }
  ~PlantedFaultScope() { plantFusionFaultForTesting({}); }
};

// y = GeLU(x) * 2 + (x - z): GeLU expands, everything clusters into one kernel.
ir::Graph geluNet() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 16});
  Value z = b.input("z", DType::kFloat32, {8, 16});
  Value s = b.op("GeLU", {x}, GeluAttrs{}, -1, "gelu")[0];
  b.output(b.add(b.mul(s, 2.0f), b.op("Sub", {x, z}, {}, -1, "sub")[0]), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(g).value();
}

// The flags `fix` on `backend` give the reference's outputs.
void expectFixWorks(const ir::Graph& g, const std::string& backend, const std::string& fix) {
  std::vector<HostTensor> inputs;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int t : g.inputs) {
    std::vector<float> v(static_cast<size_t>(numElements(g.tensors[t].shape)));
    for (float& f : v) f = u(rng);
    inputs.push_back(HostTensor::fromFloats(g.tensors[t].shape, v));
  }
  auto want = testing::runGraph(g, inputs, "reference", parseFusionFlags("--opt_level=0").value());
  auto fixed_flags = parseFusionFlags(fix);
  ASSERT_TRUE(fixed_flags.ok()) << fixed_flags.status().toString();
  auto got = testing::runGraph(g, inputs, backend, *fixed_flags);
  auto broken = testing::runGraph(g, inputs, backend, parseFusionFlags("").value());
  ASSERT_TRUE(want.ok() && got.ok() && broken.ok());
  EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-4, 1e-5), "") << "with " << fix;
  EXPECT_NE(testing::compareTensors((*broken)[0], (*want)[0], 1e-4, 1e-5), "") << "the planted fault shows without the fix";
}

TEST(FusionBisect, NamesAPlantedWrongExpanderAndTheFlagsThatFixIt) {
  const ir::Graph g = geluNet();
  PlantedFaultScope fault({PlantedFault::kWrongExpander, "GeLU"});
  for (const char* backend : {"cpu", "reference"}) {
    BisectOptions o;
    o.backend = backend;
    auto r = tools::bisectFusion(g, o);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    const std::string report = tools::formatBisectReport(*r);
    EXPECT_FALSE(r->matched) << report;
    EXPECT_EQ(r->passes, std::vector<std::string>{"GraphKernelExpander"}) << report;
    EXPECT_EQ(r->expand_ops, std::vector<std::string>{"GeLU"}) << report;
    EXPECT_EQ(r->fix_flags, "--disable_expand_ops=GeLU") << report;
    EXPECT_TRUE(r->fix_verified) << report;
    EXPECT_NE(report.find("MS_DEV_GRAPH_KERNEL_FLAGS=\"--disable_expand_ops=GeLU\""), std::string::npos) << report;
    EXPECT_NE(report.find("the expander of GeLU"), std::string::npos) << report;
    ASSERT_EQ(r->kernels.size(), 1u) << report;  // the one fused kernel holding the expansion
    EXPECT_EQ(r->kernels[0].rfind("fused_", 0), 0u) << report;
    EXPECT_EQ(r->first_divergence.tensor, g.tensors[g.nodes[0].outputs[0]].name) << report;
    EXPECT_EQ(r->first_divergence.kernel.rfind("fused_", 0), 0u) << report;
    expectFixWorks(g, backend, r->fix_flags);
  }
}

TEST(FusionBisect, NamesAPlantedWrongClusterRuleAndTheFlagsThatFixIt) {
  const ir::Graph g = geluNet();
  PlantedFaultScope fault({PlantedFault::kWrongCluster, "Sub"});
  BisectOptions o;
  o.backend = "cpu";
  o.flags = "--opt_level=3";  // the user's own flags are kept in the fix
  std::vector<std::string> progress;
  o.progress = [&](const std::string& line) { progress.push_back(line); };
  auto r = tools::bisectFusion(g, o);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  const std::string report = tools::formatBisectReport(*r);
  EXPECT_EQ(r->passes, std::vector<std::string>{"StaticShapeCluster"}) << report;
  EXPECT_EQ(r->cluster_ops, std::vector<std::string>{"Sub"}) << report;
  EXPECT_EQ(r->fix_flags, "--opt_level=3 --disable_cluster_ops=Sub") << report;
  EXPECT_TRUE(r->fix_verified) << report;
  EXPECT_FALSE(r->kernels.empty()) << report;
  EXPECT_EQ(r->first_divergence.tensor, g.tensors[g.nodes.back().inputs[1]].name) << report;  // Sub's output
  EXPECT_EQ(static_cast<int>(progress.size()) + 5, r->runs) << report;  // + reference, fused, fixed, two divergence runs
  expectFixWorks(g, "cpu", r->fix_flags);
}

TEST(FusionBisect, MatchingOutputsSaySo) {
  auto g = loadModelFile(std::string(GKRT_EXAMPLES_DIR) + "/mynet_myop.gkm");
  ASSERT_TRUE(g.ok());
  auto r = tools::bisectFusion(*g, {});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_TRUE(r->matched);
  EXPECT_EQ(r->runs, 2);
  EXPECT_NE(tools::formatBisectReport(*r).find("outputs match"), std::string::npos);
}

TEST(FusionBisect, MinimalRestoringSetFindsTwoCulpritsByHalving) {
  const std::vector<std::string> all = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"};
  int calls = 0;
  auto needs = [&](const std::vector<std::string>& s) -> StatusOr<bool> {
    ++calls;
    return std::count(s.begin(), s.end(), "c") && std::count(s.begin(), s.end(), "n");
  };
  auto found = tools::minimalRestoringSet(all, needs);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, (std::vector<std::string>{"c", "n"}));
  EXPECT_LT(calls, 16);  // fewer than trying each candidate alone
  calls = 0;
  auto one = tools::minimalRestoringSet(all, [&](const std::vector<std::string>& s) -> StatusOr<bool> {
    ++calls;
    return std::count(s.begin(), s.end(), "k") > 0;
  });
  EXPECT_EQ(*one, std::vector<std::string>{"k"});
  EXPECT_LE(calls, 8);
}

std::string pictureOf(const ir::Graph& model, const std::string& flags, tools::DotOptions o = {}) {
  SessionOptions opts;
  opts.fusion = parseFusionFlags(flags).value();
  auto session = Session::create(model, opts);
  EXPECT_TRUE(session.ok()) << session.status().toString();
  tools::FusionPicture pic{model, (*session)->compiledGraph(), "cpu", {}, (*session)->fusionReport().node_origin_pass, "t"};
  for (const auto& k : (*session)->kernelInfos()) pic.kernel_backends.push_back(k.backend);
  auto dot = tools::fusionPictureToDot(pic, o);
  EXPECT_TRUE(dot.ok()) << dot.status().toString();
  return dot.ok() ? *dot : "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(FusionPicture, SeedsMyOpIsFourOpsLeftAndOneFusedKernelRight) {
  auto g = loadModelFile(std::string(GKRT_EXAMPLES_DIR) + "/mynet_myop.gkm");
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(ir::inferShapes(*g).ok());
  const std::string dot = pictureOf(*g, "");
  EXPECT_NE(dot.find("before fusion: 4 ops"), std::string::npos) << dot;
  EXPECT_NE(dot.find("after fusion (cpu): 1 kernel"), std::string::npos) << dot;
  EXPECT_EQ(count(dot, "subgraph cluster_a_k"), 1u) << dot;  // one fused kernel box
  EXPECT_EQ(count(dot, "label=\"Pow\\n"), 2u) << dot;         // Pow on both sides
  EXPECT_NE(dot.find("by GraphKernelSplitter"), std::string::npos) << dot;
  EXPECT_NE(dot.find("float32[4x4]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\\nconst 3\""), std::string::npos) << dot;   // Pow's exponent folded into its label
  EXPECT_NE(dot.find("fused_0: Mul_Pow_Sub_Mul_fusion"), std::string::npos) << dot;
  const std::string unfused = pictureOf(*g, "--opt_level=0");
  EXPECT_EQ(count(unfused, "subgraph cluster_a_k"), 0u) << unfused;
}

TEST(FusionPicture, LongChainsCollapseAndRegionsKeepTheNeighbourhood) {
  GraphBuilder b;
  Value v = b.input("x", DType::kFloat32, {4});
  for (int i = 0; i < 20; ++i) v = b.op1("Exp", {v});
  b.output(v, "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  const std::string collapsed = pictureOf(*g, "");
  EXPECT_NE(collapsed.find("... 18 ops ...\\nExp x18"), std::string::npos) << collapsed;
  tools::DotOptions keep_all;
  keep_all.collapse_chains = 0;
  EXPECT_EQ(count(pictureOf(*g, "", keep_all), "label=\"Exp\\n"), 40u);
  tools::DotOptions region;
  region.region = g->nodes[10].name;
  region.region_radius = 1;
  region.collapse_chains = 0;
  EXPECT_EQ(count(pictureOf(*g, "", region), "label=\"Exp\\n"), 6u);  // three on each side
  region.region = "no_such_node";
  SessionOptions opts;
  auto session = Session::create(*g, opts);
  tools::FusionPicture pic{*g, (*session)->compiledGraph(), "cpu", {}, {}, ""};
  auto bad = tools::fusionPictureToDot(pic, region);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no_such_node"), std::string::npos);
}

TEST(FusionPicture, ARegionNamedByAnExpandedOpFindsItsOriginalOnTheOtherSide) {
  const ir::Graph g = geluNet();
  tools::DotOptions region;
  region.region = "gelu/Mul_0";  // a node the expander made from 'gelu'
  region.region_radius = 0;
  const std::string dot = pictureOf(g, "", region);
  EXPECT_EQ(count(dot, "label=\"GeLU\\n"), 1u) << dot;  // the before side keeps 'gelu' itself
  EXPECT_EQ(count(dot, "label=\"Sub\\n"), 0u) << dot;
}

TEST(FusionPicture, FallbackKernelsNameTheirBackend) {
  auto g = loadModelFile(std::string(GKRT_EXAMPLES_DIR) + "/mynet.gkm");
  ASSERT_TRUE(g.ok());
  SessionOptions opts;
  auto session = Session::create(*g, opts);
  ASSERT_TRUE(session.ok());
  tools::FusionPicture pic{*g, (*session)->compiledGraph(), "cpu", {"reference"}, {}, ""};
  auto dot = tools::fusionPictureToDot(pic, {});
  ASSERT_TRUE(dot.ok());
  EXPECT_NE(dot->find("runs on reference (fallback)"), std::string::npos) << *dot;
}

TEST(SvgChart, EscapesTextAndHoldsEverySeries) {
  tools::BenchChart c;
  c.title = "a <b> & \"c\"";
  c.latency = {{"cpu", "fusion on", 1, 2, 3}, {"cpu", "fusion off", 4, 5, 6}};
  c.kernels = {{"cpu: fused_0 (Mul, Add)", 2e6, 8e6, 1e-3}, {"cpu: Conv2D_3 (Conv2D)", 2e9, 1e7, 0.05}};
  c.memory_gbps = 20;
  c.peak_gflops = 100;
  const std::string svg = tools::benchChartToSvg(c);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"series\" data-panel=\"latency\""), 2u);
  EXPECT_EQ(count(svg, "class=\"series\" data-panel=\"roofline\""), 4u);  // two kernels and the two ceilings
  EXPECT_NE(svg.find("data-p50-ms=\"5\""), std::string::npos);
  EXPECT_NE(svg.find("latency per run (ms): p50"), std::string::npos);  // 1-6 ms: a linear axis
  EXPECT_NE(svg.find("data-intensity=\"0.25\" data-gflops=\"2\""), std::string::npos);  // the elementwise kernel
  EXPECT_NE(svg.find("data-intensity=\"200\" data-gflops=\"40\""), std::string::npos);  // the convolution
  EXPECT_NE(svg.find("GFLOP/s"), std::string::npos);
  // backends three orders of magnitude apart: a log axis, so the fast one's bar shows
  c.latency = {{"cpu", "fusion on", 11, 12, 13}, {"reference", "fusion on", 3800, 3870, 3900}};
  EXPECT_NE(tools::benchChartToSvg(c).find("latency per run (ms, log scale)"), std::string::npos);
  EXPECT_DOUBLE_EQ(tools::niceStep(9.3, 5), 2);
  EXPECT_DOUBLE_EQ(tools::niceStep(0.42, 5), 0.1);
  EXPECT_DOUBLE_EQ(tools::niceStep(230, 5), 50);
}

}  // namespace
}  // namespace gkrt
