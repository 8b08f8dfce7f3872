// Bugs the differential fusion fuzzer (tests/fuzz_fusion) and the MindSpore fidelity
// test (tests/fidelity) found, each kept as a fused-vs-unfused test.
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

HostTensor tensorOf(DType dt, const std::vector<float>& v) {
  HostTensor t(dt, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::kFloat16) t.as<uint16_t>()[i] = floatToHalf(v[i]);
    else t.as<float>()[i] = v[i];
  }
  return t;
}

// `g` compiled for cpu at opt_level 2, to read its fusion report and kernel count.
StatusOr<std::unique_ptr<Session>> fusedCpuSession(const ir::Graph& g) {
  SessionOptions opts;
  opts.backend = "cpu";
  opts.fusion = testing::optLevel(2);
  return Session::create(g, opts);
}

// Seed 2765: Cosh expanded as (e^x + e^-x) / 2 overflowed to inf while cosh(x) still
// fits (float16 near |x| = 11.5, float32 near 89); likewise Sinh.
TEST(FusionFuzzRegressions, CoshSinhExpandersDoNotOverflowEarly) {
  for (DType dt : {DType::kFloat16, DType::kFloat32}) {
    const float big = dt == DType::kFloat16 ? 11.5f : 89.0f;
    GraphBuilder b;
    Value x = b.input("x", dt, {6});
    b.output(b.op1("Cosh", {x}), "cosh");
    b.output(b.op1("Sinh", {x}), "sinh");
    b.output(b.op1("Softplus", {x}, SoftplusAttrs{}), "softplus");  // seed 20641: e^x overflowed
    const ir::Graph g = *b.finish();
    const std::vector<HostTensor> in = {tensorOf(dt, {big, -big, 0.25f, -3.0f, 0.0f, 1e-3f})};
    auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (const char* backend : {"reference", "cpu"}) {
      SCOPED_TRACE(std::string(dtypeName(dt)) + " on " + backend);
      auto got = testing::runGraph(g, in, backend,
                                   *parseFusionFlags("--opt_level=1 --fusion_profile=ascend --enable_expand_ops=Softplus"));
      ASSERT_TRUE(got.ok()) << got.status().toString();
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_TRUE(std::isfinite((*want)[k].toFloats()[0]));
        EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 2e-3, 1e-3), "") << "output " << k;
      }
    }
  }
}

// Seed 4347: LayerNorm expanded in float16 subtracted a float16-rounded mean, so
// rows with a small spread came out far from the reference (which computes in
// float32); the expander now works in float32 for 16-bit floats, as MindSpore's.
TEST(FusionFuzzRegressions, Float16LayerNormExpandsInFloat32) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat16, {3, 2});
  const std::vector<uint16_t> ones = {floatToHalf(1.0f), floatToHalf(1.0f)};
  const std::vector<uint16_t> zeros = {floatToHalf(0.0f), floatToHalf(0.0f)};
  Value gamma = b.constant("gamma", DType::kFloat16, {2}, ones.data());
  Value beta = b.constant("beta", DType::kFloat16, {2}, zeros.data());
  auto outs = b.op("LayerNorm", {x, gamma, beta}, NormAttrs{-1, 1e-5f}, 3);
  b.output(outs[0], "y");
  b.output(outs[1], "mean");
  b.output(outs[2], "var");
  const ir::Graph g = *b.finish();
  HostTensor in(DType::kFloat16, {3, 2});
  const float v[] = {0.3f, 0.3007f, -1.2f, -1.1995f, 5.0f, 5.004f};
  for (int i = 0; i < 6; ++i) in.as<uint16_t>()[i] = floatToHalf(v[i]);
  auto want = testing::runGraph(g, {in}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (const char* backend : {"reference", "cpu"}) {
    SCOPED_TRACE(backend);
    auto got = testing::runGraph(g, {in}, backend, *parseFusionFlags("--opt_level=1 --fusion_profile=gpu"));
    ASSERT_TRUE(got.ok()) << got.status().toString();
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 1e-2, 1e-3), "") << "output " << k;
  }
}

// Fidelity random graph 10: a Reshape to the same shape before a graph output stayed
// as a copy in the fused kernel; MindSpore drops it, and now so does gkrt (the
// Neg writes the output itself).
TEST(FusionFuzzRegressions, NoOpReshapeBeforeAnOutputIsDropped) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {16, 3, 2});
  Value r = b.op1("Reshape", {b.op1("Minimum", {x, x})}, ShapeAttrs{{96}});
  Value n = b.op1("Neg", {r});
  b.output(b.op1("Reshape", {n}, ShapeAttrs{{96}}), "y");
  b.output(b.op1("Exp", {n}), "e");  // the Neg has another reader
  const ir::Graph g = *b.finish();
  const std::vector<HostTensor> in = {testing::randomTensor({16, 3, 2}, 7)};
  auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto session = fusedCpuSession(g);
  ASSERT_TRUE(session.ok()) << session.status().toString();
  EXPECT_EQ((*session)->fusionReport().ops_after, 4u);  // Minimum, Reshape, Neg, Exp
  for (const char* backend : {"reference", "cpu"}) {
    auto got = testing::runGraph(g, in, backend, testing::optLevel(2));
    ASSERT_TRUE(got.ok()) << got.status().toString();
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 1e-6, 1e-6), "") << backend;
  }
}

// Fidelity random graph 5: a Transpose that moves only size-1 dims stayed a separate
// kernel; MindSpore makes it a Reshape (its rules 65-69) that joins the fused kernel.
TEST(FusionFuzzRegressions, TransposeOfUnitDimsBecomesAFusedReshape) {
  for (bool unit_only : {true, false}) {
    SCOPED_TRACE(unit_only ? "moves only 1-dims" : "reorders data");
    const Shape s = unit_only ? Shape{1, 1, 8} : Shape{2, 1, 3};
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, s);
    b.output(b.op1("Transpose", {b.op1("Exp", {x})}, PermAttrs{{2, 0, 1}}), "y");
    const ir::Graph g = *b.finish();
    const std::vector<HostTensor> in = {testing::randomTensor(s, 5)};
    auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    auto session = fusedCpuSession(g);
    ASSERT_TRUE(session.ok()) << session.status().toString();
    EXPECT_EQ((*session)->kernelCount(), unit_only ? 1u : 2u);
    auto got = testing::runGraph(g, in, "cpu", testing::optLevel(2));
    ASSERT_TRUE(got.ok()) << got.status().toString();
    EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-6, 1e-6), "");
  }
}

// Seed 100427 (opencl): a fused kernel over size-1 dims writing a [1,1] and a 0-d
// output rendered `if () {` for the smaller output, and the OpenCL build failed.
TEST(FusionFuzzRegressions, OpenclOutputsOverSizeOneDimsOnly) {
  auto probe = createBackend("opencl");
  if (!probe.ok()) GTEST_SKIP() << "no opencl here: " << probe.status().message();
  GraphBuilder b;
  Value x = b.op1("ReduceMin", {b.input("x", DType::kFloat32, {})}, AxesAttrs{{}, true});
  Value l = b.op1("Log", {b.add(b.op1("Abs", {x}), 0.5f)});
  b.output(b.op1("Reshape", {l}, ShapeAttrs{{1, 1}}), "y0");
  b.output(b.op1("Erfc", {x}), "y1");
  const ir::Graph g = *b.finish();
  const std::vector<HostTensor> in = {HostTensor::fromFloats({}, {-1.5f})};
  auto want = testing::runGraph(g, in, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto got = testing::runGraph(g, in, "opencl", *parseFusionFlags("--opt_level=3 --disable_pass=TransformOpOptimizer"));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(testing::compareTensors((*got)[k], (*want)[k], 1e-6, 1e-6), "");
}

}  // namespace
}  // namespace gkrt
