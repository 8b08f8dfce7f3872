// Session lifecycle: save/load round trip, inputs, resize, errors.
#include <cstdio>

#include "runtime/model_io.h"
#include "tests/unit/test_support.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

ir::Graph mlp() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {-1, 3}, {"batch", ""});
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, bias = {0.5f, -0.5f};
  Value h = b.matmul(x, b.constant({2, 3}, w), /*transpose_b=*/true);
  Value y = b.relu(b.add(h, b.constant({2}, bias)));
  b.output(y, "y");
  return *b.finish();
}

TEST(Session, SaveLoadRoundTripAndResize) {
  const std::string path = gkrt::testing::testTempPath("mlp.gkm");
  ASSERT_TRUE(saveModelFile(mlp(), path).ok());
  auto g = loadModelFile(path);
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(g->tensors[g->inputs[0]].dim_symbols[0], "batch");
  EXPECT_EQ(g->tensors[g->inputs[0]].shape, (Shape{-1, 3}));

  auto deferred = Session::create(*g);  // no size yet: compiled at the first run
  ASSERT_TRUE(deferred.ok()) << deferred.status().toString();
  Status unset = (*deferred)->run();
  EXPECT_NE(unset.message().find("input 'x' has shape ?x3 with unknown dims and was not set"), std::string::npos);

  SessionOptions opts;
  opts.input_shapes["x"] = {1, 3};
  auto s = Session::create(*g, opts);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  Session& session = **s;
  ASSERT_TRUE(session.setInput("x", HostTensor::fromFloats({1, 3}, {1, 0, -1})).ok());
  ASSERT_TRUE(session.run().ok());
  auto y = session.output("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->toFloats(), (std::vector<float>{0.0f, 0.0f}));  // relu(-2+0.5), relu(-2-0.5)

  ASSERT_TRUE(session.resizeInput("x", {2, 3}).ok());
  ASSERT_TRUE(session.setInput("x", HostTensor::fromFloats({2, 3}, {1, 1, 1, 0, 1, 0})).ok());
  ASSERT_TRUE(session.run().ok());
  y = session.output("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(y->toFloats(), (std::vector<float>{6.5f, 14.5f, 2.5f, 4.5f}));

  Status wrong = session.resizeInput("x", {2, 4});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("input 'x' dim 1 is fixed at 3"), std::string::npos) << wrong.toString();
  Status shape = session.setInput("x", HostTensor::fromFloats({3, 4}, std::vector<float>(12)));
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.message().find("input 'x' dim 1 is fixed at 3"), std::string::npos) << shape.toString();
  // Another batch size: a second plan, picked at run().
  ASSERT_TRUE(session.setInput("x", HostTensor::fromFloats({3, 3}, {1, 1, 1, 0, 1, 0, 1, 0, -1})).ok());
  ASSERT_TRUE(session.run().ok());
  y = session.output("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(y->toFloats(), (std::vector<float>{6.5f, 14.5f, 2.5f, 4.5f, 0.0f, 0.0f}));
  Status name = session.setInput("z", HostTensor::fromFloats({2, 3}, std::vector<float>(6)));
  EXPECT_NE(name.message().find("no input 'z'; inputs: x"), std::string::npos);
  EXPECT_FALSE(session.output("nope").ok());
  std::remove(path.c_str());
}

TEST(Session, RuntimeDataErrorIsAStatus) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {3, 2});
  Value i = b.input("i", DType::kInt64, {2});
  b.output(b.op1("Gather", {x, i}, AxisAttrs{0, false}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  HostTensor idx(DType::kInt64, {2});
  idx.as<int64_t>()[0] = 1;
  idx.as<int64_t>()[1] = 7;
  auto out = testing::runGraph(*g, {HostTensor::fromFloats({3, 2}, std::vector<float>(6, 1.0f)), idx});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Gather index 7 at position 1 is out of range for axis 0 of size 3"),
            std::string::npos);
}

TEST(Session, UnknownBackend) {
  auto s = Session::create(mlp(), SessionOptions{"tpu", {}, {{"x", {1, 3}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown backend 'tpu'; available: reference, cpu"), std::string::npos);
}

}  // namespace
}  // namespace gkrt
