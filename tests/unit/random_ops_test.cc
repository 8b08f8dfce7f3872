// Dropout and StandardNormal: deterministic for a seed, with the right statistics.
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

TEST(RandomOps, DropoutMaskAndScale) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {100, 100});
  auto outs = b.op("Dropout", {x}, DropoutAttrs{0.8f, 42}, 2);
  b.output(outs[0], "y");
  b.output(outs[1], "mask");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  HostTensor in = HostTensor::fromFloats({100, 100}, std::vector<float>(10000, 3.0f));
  auto r1 = testing::runGraph(*g, {in});
  auto r2 = testing::runGraph(*g, {in});
  ASSERT_TRUE(r1.ok() && r2.ok());
  const auto y = (*r1)[0].toFloats(), mask = (*r1)[1].toFloats();
  EXPECT_EQ(y, (*r2)[0].toFloats());
  double kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(mask[i] == 0.0f || mask[i] == 1.0f);
    EXPECT_FLOAT_EQ(y[i], mask[i] * 3.0f / 0.8f);
    kept += mask[i];
  }
  EXPECT_NEAR(kept / y.size(), 0.8, 0.02);

  GraphBuilder bad;
  Value z = bad.input("z", DType::kFloat32, {4});
  bad.output(bad.op1("Dropout", {z}, DropoutAttrs{1.5f, 0}));
  auto e = bad.finish();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("keep_prob 1.5 not in (0, 1]"), std::string::npos);
}

TEST(RandomOps, StandardNormalMoments) {
  GraphBuilder b;
  b.output(b.op1("StandardNormal", {}, StandardNormalAttrs{{200, 101}, 7}), "n");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto r = testing::runGraph(*g, {});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  const auto v = (*r)[0].toFloats();
  ASSERT_EQ(v.size(), 20200u);
  double mean = 0, sq = 0;
  for (float f : v) { mean += f; sq += f * f; }
  mean /= v.size();
  const double var = sq / v.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var, 1.0, 0.04);
}

}  // namespace
}  // namespace gkrt
