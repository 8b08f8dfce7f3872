// enable_pass/disable_pass take MindSpore 2.10's pass names as its dump files spell them.
#include "fusion/mindspore_pass_names.h"
#include "fusion/pass_manager.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

bool ran(const std::string& flags, const std::string& pass) {
  GraphBuilder b;
  b.output(b.add(b.mul(b.input("x", DType::kFloat32, {4, 4}), 2.0f), 1.0f), "y");
  ir::Graph g = *b.finish();
  auto options = parseFusionFlags(flags);
  if (!options.ok()) {
    ADD_FAILURE() << options.status().toString();
    return true;
  }
  auto report = runFusionPipeline(g, *options, FusionColumn::kCpu);
  if (!report.ok()) {
    ADD_FAILURE() << report.status().toString();
    return true;
  }
  for (const PassRecord& p : report->passes) if (p.name.find(pass) != std::string::npos) return p.ran;
  ADD_FAILURE() << "no pass " << pass;
  return false;
}

TEST(MindSporePassNames, AliasesSwitchTheGkrtPass) {
  EXPECT_EQ(mindSporePassAlias("graph_kernel_cluster"), "StaticShapeCluster");
  EXPECT_EQ(mindSporePassAlias("stage2_highlevelopt1_3_arithmetic_simplify"), "ArithmeticSimplify");
  EXPECT_EQ(mindSporePassAlias("StaticShapeCluster"), "StaticShapeCluster");
  EXPECT_TRUE(ran("--opt_level=2", "StaticShapeCluster"));
  EXPECT_FALSE(ran("--opt_level=2 --disable_pass=graph_kernel_cluster", "StaticShapeCluster"));
  EXPECT_FALSE(ran("--opt_level=2 --disable_pass=stage1_cluster_3_graph_kernel_expander", "GraphKernelExpander"));
  EXPECT_FALSE(ran("--opt_level=2 --disable_pass=graph_kernel_cse", "CommonSubexpressionElimination"));
}

TEST(MindSporePassNames, MindSporeOnlyPassesWarnAndUnknownNamesFail) {
  auto o = parseFusionFlags("--disable_pass=convert_mix_type,getitem_tuple");
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->warnings.size(), 2u);
  EXPECT_NE(o->warnings[0].find("no gkrt counterpart"), std::string::npos);
  auto bad = parseFusionFlags("--disable_pass=graph_kernel_clustr");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("graph_kernel_clustr"), std::string::npos);
}

}  // namespace
}  // namespace gkrt
