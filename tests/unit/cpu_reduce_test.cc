// The cpu backend's reduce-cluster executor (backends/cpu/fused/fused_reduce.cc) against the
// reference backend: Softmax, LogSoftmax and LayerNorm expanded into reduce clusters,
// reductions along the last axis, outer axes, a middle axis wider than a tile and all
// axes; rows longer than a tile and longer than a slab (9000: the recomputing passes);
// NaN through ReduceMax; row-shaped and full-shaped outputs of one cluster; 1 and 2
// threads, fusion off, on, and stitched.
#include <cmath>

#include "backends/cpu/fused/fused_reduce.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::randomTensor;

constexpr const char* kExpandNorms = "--opt_level=2 --enable_expand_ops=Softmax,LogSoftmax,LayerNorm";
// Stitch fusion (opt_level 3) puts a reduction and the ops that read its value back
// over the row into one cluster: a softmax is one kernel.
constexpr const char* kStitched = "--opt_level=3 --enable_expand_ops=Softmax,LogSoftmax,LayerNorm";

bool holdsReduction(const ir::Node& n) {
  auto isReduce = [](const ir::Node& m) { return m.op && std::string(m.op->name).rfind("Reduce", 0) == 0; };
  if (!n.subgraph) return isReduce(n);
  for (const ir::Node& m : n.subgraph->nodes) if (isReduce(m)) return true;
  return false;
}

// After fusion for the cpu column under `flags`: how many nodes hold a reduction, and
// how many of those the reduce executor takes.
std::pair<int, int> reduceNodes(const ir::Graph& g, const std::string& flags) {
  ir::Graph fused = ir::cloneGraph(g);
  EXPECT_TRUE(ir::inferShapes(fused).ok());
  auto report = runFusionPipeline(fused, *parseFusionFlags(flags), FusionColumn::kCpu, [](const ir::Node&) { return true; });
  EXPECT_TRUE(report.ok()) << report.status().toString();
  int with = 0, taken = 0;
  for (const ir::Node& n : fused.nodes) {
    if (!holdsReduction(n)) continue;
    ++with;
    taken += cpu::canRunReduce(fused, n) ? 1 : 0;
  }
  return {with, taken};
}

void expectCpuMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& inputs, double rtol) {
  auto want = testing::runGraph(g, inputs, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (const char* flags : {"--opt_level=0", kExpandNorms, kStitched}) {
    for (int threads : {1, 2}) {
      auto got = testing::runGraph(g, inputs, "cpu", *parseFusionFlags(flags), threads);
      ASSERT_TRUE(got.ok()) << got.status().toString();
      for (size_t k = 0; k < want->size(); ++k) {
        EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], rtol, 1e-5), "")
            << flags << ", " << threads << " threads, output " << k;
      }
    }
  }
}

TEST(CpuReduce, ExpandedNormsAndReductionsRunOnTheReduceExecutor) {
  for (const Shape& s : {Shape{3, 7, 33}, Shape{2, 700}, Shape{1, 3000}, Shape{2, 9000}}) {
    auto g = testing::normsAndReductionsGraph(s);
    ASSERT_TRUE(g.ok()) << g.status().toString();
    // With s[0] == 1 the reduction over axis 0 moves no value: ArithmeticSimplify makes
    // it a Reshape (MindSpore's rules 76-78), one reduction fewer.
    const bool axis0_trivial = s[0] == 1;
    const auto [with, taken] = reduceNodes(*g, kExpandNorms);
    EXPECT_GE(with, axis0_trivial ? 3 : 4) << shapeToString(s);
    EXPECT_EQ(taken, with) << shapeToString(s);
    // Stitched, the last-axis norms form one cluster (taken) and the reductions over
    // axis 0 and over all axes another, which mixes layouts: the reference kernel's
    // (without the axis-0 reduction both are taken).
    const auto [stitched_with, stitched_taken] = reduceNodes(*g, kStitched);
    EXPECT_EQ(stitched_with, 2) << shapeToString(s);
    EXPECT_EQ(stitched_taken, axis0_trivial ? 2 : 1) << shapeToString(s);
    expectCpuMatchesReference(*g, {randomTensor(s, 1)}, 2e-5);
  }
}

// Reductions over a middle axis with more inner positions than a tile (a row's block
// of inner positions is split) and with fewer (a tile holds several rows, the row
// values repeated along it), ReduceMin and ReduceProd, softmaxes along that axis.
TEST(CpuReduce, MiddleAxisWiderThanATile) {
  const Shape s{3, 5, 600};
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, s);
  b.output(b.op1("Softmax", {x}, AxisAttrs{1, false}), "softmax1");
  Value narrow = b.input("narrow", DType::kFloat32, {3, 5, 100});
  b.output(b.op1("LogSoftmax", {narrow}, AxisAttrs{1, false}), "narrow_log_softmax1");
  b.output(b.op1("ReduceMin", {b.op1("Sin", {x})}, AxesAttrs{{1}, false}), "min1");
  b.output(b.op1("ReduceProd", {b.add(b.mul(x, 0.25f), 1.0f)}, AxesAttrs{{0, 1}, true}), "prod01");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  for (const char* flags : {kExpandNorms, kStitched}) {
    const auto [with, taken] = reduceNodes(*g, flags);
    EXPECT_EQ(taken, with) << flags;
  }
  expectCpuMatchesReference(*g, {randomTensor(s, 5), randomTensor({3, 5, 100}, 6)}, 2e-5);
}

// One cluster with a row-shaped output (the sum, scaled), full-shaped outputs (the
// prologue's exp and the centred input), NaN through ReduceMax; a reduction over
// axes that are not one block, and a row value read out of row order, stay on the
// reference kernel, still right.
TEST(CpuReduce, RowAndFullOutputsNanAndSplitAxes) {
  const Shape s{4, 6, 5};
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, s);
  Value e = b.op1("Exp", {x});
  Value sum = b.op1("ReduceSum", {e}, AxesAttrs{{2}, true});
  b.output(b.mul(sum, 2.0f), "row_out");
  b.output(e, "exp_out");
  b.output(b.sub(x, b.op1("ReduceMax", {x}, AxesAttrs{{2}, true})), "centred");
  b.output(b.op1("ReduceMax", {x}, AxesAttrs{{1}, true}), "nan_max");
  // f is reduced three times; the second reduction's prologue reads it last, yet the
  // third reduction still needs it (the slab keeps it alive until then).
  Value f = b.op1("Exp", {b.op1("Neg", {x})});
  b.output(b.op1("ReduceMax", {f}, AxesAttrs{{2}, true}), "f_max");
  b.output(b.op1("ReduceSum", {b.mul(f, 3.0f)}, AxesAttrs{{2}, true}), "f3_sum");
  b.output(b.op1("ReduceSum", {f}, AxesAttrs{{2}, true}), "f_sum");
  b.output(b.op1("ReduceSum", {b.op1("Sigmoid", {x})}, AxesAttrs{{0, 2}, false}), "split_axes");
  // Row sums of a square matrix without keep_dims broadcast along the other axis:
  // x[i][j] - sum[j] reads a row value out of row order.
  Value sq = b.input("square", DType::kFloat32, {6, 6});
  b.output(b.sub(sq, b.op1("ReduceSum", {sq}, AxesAttrs{{1}, false})), "transposed_use");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const auto [with, taken] = reduceNodes(*g, kExpandNorms);
  EXPECT_EQ(taken, with - 1) << "all but the split-axes sum";
  const auto [stitched_with, stitched_taken] = reduceNodes(*g, kStitched);
  EXPECT_EQ(stitched_taken, stitched_with - 2) << "all but the split-axes sum and the transposed use";
  HostTensor xin = randomTensor(s, 2);
  xin.as<float>()[7] = std::nanf("");
  expectCpuMatchesReference(*g, {xin, randomTensor({6, 6}, 3)}, 1e-5);
}

}  // namespace
}  // namespace gkrt

namespace gkrt {
namespace {

// A flat Reshape before a reduction's elementwise prologue joins its kernel (MindSpore's
// reduce_fwd takes it; tests/fidelity found the difference): one cluster, taken by the
// reduce executor, equal to the reference. A Reshape after a reduction stays out.
TEST(CpuReduce, ReshapePrologueJoinsTheReduction) {
  GraphBuilder b;
  Value y = b.input("y", DType::kFloat32, {6, 1});
  Value r = b.op1("Reshape", {y}, ShapeAttrs{{1, 6}});
  Value e = b.add(b.mul(b.op1("Neg", {r}), 0.5f), b.constant({1, 6}, randomTensor({1, 6}, 3).toFloats()));
  Value m = b.op1("ReduceMax", {e}, AxesAttrs{{1}, false});
  b.output(b.op1("Reshape", {m}, ShapeAttrs{{1, 1}}), "m");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(reduceNodes(*g, "--opt_level=2"), std::make_pair(1, 1));
  ir::Graph fused = ir::cloneGraph(*g);
  ASSERT_TRUE(ir::inferShapes(fused).ok());
  ASSERT_TRUE(runFusionPipeline(fused, *parseFusionFlags("--opt_level=2"), FusionColumn::kCpu, nullptr).ok());
  int reshapes_with_reduce = 0;
  for (const ir::Node& n : fused.nodes) {
    if (!n.subgraph || !holdsReduction(n)) continue;
    for (const ir::Node& m2 : n.subgraph->nodes) reshapes_with_reduce += std::string(m2.op->name) == "Reshape";
  }
  EXPECT_EQ(reshapes_with_reduce, 1);
  expectCpuMatchesReference(*g, {randomTensor({6, 1}, 5)}, 1e-6);
}

// A reduction over extent-1 axes only (MindSpore's rules 76-78) is a Reshape at
// opt_level 2: the elementwise ops around it are one kernel with no reduction.
TEST(CpuReduce, ReductionOverUnitAxesIsAReshape) {
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMean"}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {1, 4, 1, 6});
    Value r = b.op1(op, {b.op1("Neg", {x})}, AxesAttrs{{0, 2}, false});
    b.output(b.op1("Tanh", {r}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_EQ(reduceNodes(*g, "--opt_level=2"), std::make_pair(0, 0)) << op;
    EXPECT_EQ(reduceNodes(*g, "--opt_level=1"), std::make_pair(1, 1)) << op;  // no ArithmeticSimplify
    expectCpuMatchesReference(*g, {randomTensor({1, 4, 1, 6}, 9)}, 1e-6);
  }
}

}  // namespace
}  // namespace gkrt
