// The flag string: the seeds' syntax, strict errors with choices, and each flag
// changing fusion as documented.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

void expectFlagError(const std::string& flags, const std::vector<std::string>& needles) {
  auto o = parseFusionFlags(flags);
  ASSERT_FALSE(o.ok()) << flags;
  for (const std::string& n : needles) EXPECT_NE(o.status().message().find(n), std::string::npos) << o.status().message();
}

TEST(FusionFlags, ParsesTheSeedSyntax) {
  auto o = parseFusionFlags("--opt_level=3 --enable_expand_ops=Square --enable_cluster_ops=MatMul,Add,,  --dump_as_text "
                            "--enable_debug_mode=on --disable_pass=1.3,cluster.GraphKernelExpander");
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->opt_level, 3);
  EXPECT_EQ(o->enable_expand_ops, (std::vector<std::string>{"Square"}));
  EXPECT_EQ(o->enable_cluster_ops, (std::vector<std::string>{"MatMul", "Add"}));
  EXPECT_TRUE(o->dump_as_text);
  EXPECT_TRUE(o->enable_debug_mode);
  EXPECT_TRUE(o->stitchFusion());
  EXPECT_TRUE(o->parallelFusion());
  // The seeds' own example is typeset with en dashes.
  auto dash = parseFusionFlags("\xE2\x80\x93" "enable_expand_ops=Square \xE2\x80\x93" "enable_cluster_ops=MatMul,Add");
  ASSERT_TRUE(dash.ok()) << dash.status().toString();
  EXPECT_EQ(dash->enable_cluster_ops.size(), 2u);
  auto ascend = parseFusionFlags("--disable_pass=add_layer_norm_fusion,fusion_group.FlashAttentionFusionV1");
  ASSERT_TRUE(ascend.ok()) << ascend.status().toString();  // Appendix 3 passes are passes now
  EXPECT_TRUE(ascend->warnings.empty());
  EXPECT_EQ(ascend->disable_pass.size(), 2u);
  auto inert = parseFusionFlags("--kernel_generator=AKG --enable_vectorization=false");
  ASSERT_TRUE(inert.ok());
  EXPECT_EQ(inert->warnings.size(), 2u);
  EXPECT_NE(inert->warnings[0].find("has no effect in gkrt"), std::string::npos);
}

TEST(FusionFlags, BadInputListsTheChoices) {
  expectFlagError("--opt_levle=2", {"unknown fusion flag '--opt_levle'", "did you mean '--opt_level'", "flags: "});
  expectFlagError("opt_level=2", {"malformed", "--key=value"});
  expectFlagError("--opt_level=", {"malformed"});
  expectFlagError("--opt_level=1=2", {"malformed"});
  expectFlagError("--opt_level", {"needs a value"});
  expectFlagError("--opt_level=two", {"not an integer"});
  expectFlagError("--opt_level=5", {"out of range; valid: 0, 1, 2, 3"});
  expectFlagError("--dump_as_text=maybe", {"not a bool; valid: true, false, on, off, 1, 0"});
  expectFlagError("--enable_cluster_ops=Mull", {"unknown op 'Mull'", "did you mean 'Mul'"});
  expectFlagError("--enable_expand_ops=Mul", {"op 'Mul' has no expander", "ops with one: "});
  expectFlagError("--disable_pass=StaticCluster", {"unknown pass 'StaticCluster'", "StaticShapeCluster"});
  expectFlagError("--opt_level=1 --opt_level=2", {"given twice"});
  expectFlagError("--fusion_profile=npu", {"unknown fusion profile 'npu'; valid: ascend, cpu, gpu"});
}

TEST(FusionFlags, EnvironmentVariableIsTheDefault) {
  ::setenv("MS_DEV_GRAPH_KERNEL_FLAGS", "--opt_level=1 --disable_cluster_ops=Add", 1);
  auto o = fusionOptionsFromEnvironment();
  ::unsetenv("MS_DEV_GRAPH_KERNEL_FLAGS");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->opt_level, 1);
  EXPECT_EQ(o->disable_cluster_ops, (std::vector<std::string>{"Add"}));
  ::setenv("MS_DEV_GRAPH_KERNEL_FLAGS", "--bogus=1", 1);
  auto bad = fusionOptionsFromEnvironment();
  ::unsetenv("MS_DEV_GRAPH_KERNEL_FLAGS");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("MS_DEV_GRAPH_KERNEL_FLAGS: unknown fusion flag '--bogus'"), std::string::npos);
}

// x -> GeLU -> Sigmoid -> Softmax: which ops survive fusion under `flags`.
std::set<std::string> opsAfter(const std::string& flags, FusionColumn col) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 8});
  Value y = b.op1("Softmax", {b.op1("Sigmoid", {b.op1("GeLU", {x}, GeluAttrs{})})}, AxisAttrs{-1, false});
  b.output(y);
  ir::Graph g = *b.finish();
  auto o = parseFusionFlags(flags);
  EXPECT_TRUE(o.ok()) << o.status().toString();
  EXPECT_TRUE(runFusionPipeline(g, *o, col).ok());
  std::set<std::string> ops;
  for (const ir::Node& n : g.nodes) {
    if (!n.subgraph) ops.insert(n.op->name);
    else for (const ir::Node& m : n.subgraph->nodes) ops.insert(m.op->name);
  }
  return ops;
}

TEST(FusionFlags, ExpandFlagsChangeTheTable) {
  const std::string base = "--opt_level=1 ";
  auto cpu = opsAfter(base, FusionColumn::kCpu);  // CPU: GeLU Y, Sigmoid N, Softmax N
  EXPECT_FALSE(cpu.count("GeLU"));
  EXPECT_TRUE(cpu.count("Sigmoid"));
  EXPECT_TRUE(cpu.count("Softmax"));
  auto forced = opsAfter(base + "--enable_expand_ops=Sigmoid", FusionColumn::kCpu);
  EXPECT_FALSE(forced.count("Sigmoid"));
  auto kept = opsAfter(base + "--disable_expand_ops=GeLU", FusionColumn::kCpu);
  EXPECT_TRUE(kept.count("GeLU"));
  auto gpu = opsAfter(base, FusionColumn::kGpu);  // GPU: all three Y
  EXPECT_FALSE(gpu.count("GeLU") || gpu.count("Sigmoid") || gpu.count("Softmax"));
  auto only = opsAfter(base + "--enable_expand_ops_only=Softmax --enable_expand_ops=GeLU", FusionColumn::kGpu);
  EXPECT_TRUE(only.count("GeLU"));     // *_only wins over enable_expand_ops
  EXPECT_TRUE(only.count("Sigmoid"));
  EXPECT_FALSE(only.count("Softmax"));
}

size_t kernels(const ir::Graph& model, const std::string& flags, FusionColumn col = FusionColumn::kCpu) {
  ir::Graph g = ir::cloneGraph(model);
  auto o = parseFusionFlags(flags);
  EXPECT_TRUE(o.ok()) << o.status().toString();
  auto r = runFusionPipeline(g, *o, col);
  EXPECT_TRUE(r.ok()) << r.status().toString();
  return r.ok() ? r->kernels : 0;
}

TEST(FusionFlags, ClusterFlagsAndPasses) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.exp(b.add(b.mul(x, 2.0f), 1.0f)), "y");
  const ir::Graph g = *b.finish();
  EXPECT_EQ(kernels(g, ""), 1u);
  EXPECT_EQ(kernels(g, "--opt_level=0"), 3u);
  EXPECT_EQ(kernels(g, "--disable_cluster_ops=Add"), 3u);          // Add splits the chain
  EXPECT_EQ(kernels(g, "--disable_cluster_ops=Exp"), 2u);
  EXPECT_EQ(kernels(g, "--enable_cluster_ops_only=Mul,Add --enable_cluster_ops=Exp"), 2u);
  EXPECT_EQ(kernels(g, "--disable_pass=StaticShapeCluster"), 3u);  // bare name
  EXPECT_EQ(kernels(g, "--disable_pass=1.3"), 3u);                 // stage.id
  EXPECT_EQ(kernels(g, "--disable_pass=cluster.StaticShapeCluster"), 3u);
  // MatMul joins fusion only when asked (GEMM + elementwise epilogue).
  GraphBuilder m;
  Value a = m.input("a", DType::kFloat32, {4, 8});
  Value w = m.constant({8, 3}, std::vector<float>(24, 0.5f));
  m.output(m.relu(m.add(m.matmul(a, w), m.constant({3}, {1, 2, 3}))), "y");
  const ir::Graph mm = *m.finish();
  const std::string no_patterns = " --disable_pass=matmul_elem_biasadd_fusion,matmul_elem_relu_fusion";
  EXPECT_EQ(kernels(mm, "--disable_expand_ops=ReLU --enable_cluster_ops=ReLU" + no_patterns), 2u);  // MatMul, Add+ReLU
  EXPECT_EQ(kernels(mm, "--disable_expand_ops=ReLU --enable_cluster_ops=ReLU"), 1u);  // one MatMulRelu
  EXPECT_EQ(kernels(mm, "--disable_expand_ops=ReLU --enable_cluster_ops=MatMul,ReLU"), 1u);
}

TEST(FusionFlags, FusionOpsLevelCutsTheTable) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.exp(b.op1("ReduceSum", {b.exp(x)}, AxesAttrs{{1}, true})), "y");  // ReduceSum is level 1
  const ir::Graph g = *b.finish();
  EXPECT_EQ(kernels(g, "", FusionColumn::kGpu), 2u);  // Exp+ReduceSum, Exp
  EXPECT_EQ(kernels(g, "--fusion_ops_level=0", FusionColumn::kGpu), 3u);
  EXPECT_EQ(kernels(g, "--opt_level=3", FusionColumn::kGpu), 1u);  // stitching joins the consumer
  EXPECT_EQ(kernels(g, "--enable_stitch_fusion=true", FusionColumn::kGpu), 1u);
}

TEST(FusionFlags, ParallelFusionJoinsIndependentClusters) {
  GraphBuilder b;  // two independent elementwise chains reading the same input
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.exp(b.mul(x, 3.0f)), "a");
  b.output(b.add(b.mul(x, x), 1.0f), "b");
  const ir::Graph g = *b.finish();
  EXPECT_EQ(kernels(g, "--opt_level=2"), 2u);
  EXPECT_EQ(kernels(g, "--opt_level=3"), 1u);  // one kernel, two outputs
  EXPECT_EQ(kernels(g, "--opt_level=3 --disable_pass=ParallelOpFusion"), 2u);
  EXPECT_EQ(kernels(g, "--opt_level=2 --enable_pass=combine.ParallelOpFusion"), 1u);
  auto out = testing::runGraph(g, {HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.5f))}, "cpu",
                               *parseFusionFlags("--opt_level=3"));
  ASSERT_TRUE(out.ok()) << out.status().toString();
  EXPECT_FLOAT_EQ((*out)[0].toFloats()[0], std::exp(1.5f));
  EXPECT_FLOAT_EQ((*out)[1].toFloats()[0], 1.25f);
}

TEST(FusionFlags, SimplificationAtOptLevel2) {
  GraphBuilder b;  // x*1 + 0, pow(x, 2), a duplicated Exp, a constant subexpression
  Value x = b.input("x", DType::kFloat32, {4});
  Value c = b.exp(b.constant({4}, {0, 1, 2, 3}));
  Value y = b.add(b.mul(x, 1.0f), 0.0f);
  Value z = b.add(b.add(b.exp(y), b.exp(y)), b.add(b.pow(x, 2.0f), c));
  b.output(z, "z");
  ir::Graph g = *b.finish();
  auto o = parseFusionFlags("--opt_level=2 --disable_pass=StaticShapeCluster");
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(runFusionPipeline(g, *o, FusionColumn::kCpu).ok());
  std::multiset<std::string> ops;
  for (const ir::Node& n : g.nodes) ops.insert(n.op->name);
  EXPECT_EQ(ops.count("Exp"), 1u);   // CSE; the constant Exp was folded
  EXPECT_EQ(ops.count("Pow"), 0u);   // pow(x, 2) -> x * x
  EXPECT_EQ(ops.count("Mul"), 1u);   // x * 1 gone, x * x left
  EXPECT_EQ(ops.count("Add"), 3u);   // + 0 gone
}

TEST(FusionFlags, CseSeesThroughEqualSmallConstants) {
  // An exporter's fresh scalar per use (every decoder layer's position + 1 with its own 1):
  // equal values make equal subexpressions; a different value does not.
  for (float second : {1.0f, 2.0f}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {4});
    b.output(b.mul(b.add(x, 1.0f), b.add(x, second)), "z");
    ir::Graph g = *b.finish();
    auto o = parseFusionFlags("--opt_level=2 --disable_pass=StaticShapeCluster");
    ASSERT_TRUE(o.ok());
    ASSERT_TRUE(runFusionPipeline(g, *o, FusionColumn::kCpu).ok());
    size_t adds = 0;
    for (const ir::Node& n : g.nodes) adds += n.op->name == std::string("Add");
    EXPECT_EQ(adds, second == 1.0f ? 1u : 2u) << second;
    auto out = testing::runGraph(g, {HostTensor::fromFloats({4}, {0, 1, 2, 3})}, "cpu", *o);
    ASSERT_TRUE(out.ok()) << out.status().toString();
    EXPECT_FLOAT_EQ((*out)[0].toFloats()[3], 4.0f * (3.0f + second));
  }
}

TEST(FusionFlags, DumpAsTextWritesEveryPass) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.add(b.mul(x, 2.0f), 1.0f), "result");
  ir::Graph g = *b.finish();
  auto o = parseFusionFlags("--dump_as_text");
  ASSERT_TRUE(o.ok());
  o->dump_dir = gkrt::testing::testTempPath("graph_kernel_dump");
  std::filesystem::remove_all(o->dump_dir);
  auto r = runFusionPipeline(g, *o, FusionColumn::kCpu);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  size_t ran = 0;
  for (const PassRecord& p : r->passes) ran += p.ran;
  EXPECT_EQ(r->dump_files.size(), ran + 1);
  EXPECT_EQ(std::filesystem::path(r->dump_files[0]).filename(), "0000_before_fusion.txt");
  std::ifstream last(r->dump_files.back());
  std::string text((std::istreambuf_iterator<char>(last)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Fused"), std::string::npos);
  EXPECT_NE(text.find("float32[4x4]"), std::string::npos);
}

TEST(FusionFlags, DebugModeNamesTheFailingKernel) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {3, 2});
  Value i = b.input("i", DType::kInt64, {2});
  b.output(b.op1("Gather", {b.exp(x), i}, AxisAttrs{0, false}), "y");
  ir::Graph g = *b.finish();
  HostTensor idx(DType::kInt64, {2});
  idx.as<int64_t>()[1] = 9;
  auto r = testing::runGraph(g, {HostTensor::fromFloats({3, 2}, std::vector<float>(6)), idx}, "cpu",
                             *parseFusionFlags("--enable_debug_mode"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(Gather) with inputs (float32 3x2, int64 2) failed"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("Gather index 9"), std::string::npos);
}

}  // namespace
}  // namespace gkrt
