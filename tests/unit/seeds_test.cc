// The seeds' two sample networks (enable_graph_kernel_fusion.md) give exactly the
// printed outputs, built in C++ and loaded from the bundled example files.
#include "runtime/model_io.h"
#include "tests/unit/test_support.h"
#include "tools/array_print.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

const char* kMyNetPrinted =
    "[[2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]]";
const char* kMyOpPrinted =
    "[[-0.015104 -0.015104 -0.015104 -0.015104]\n [-0.015104 -0.015104 -0.015104 -0.015104]\n"
    " [-0.015104 -0.015104 -0.015104 -0.015104]\n [-0.015104 -0.015104 -0.015104 -0.015104]]";

TEST(Seeds, MyNetBuiltInCpp) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.add(b.mul(x, 2.0f), 1.0f), "result");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  for (const std::string backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(*g, {HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.5f))}, backend);
    ASSERT_TRUE(out.ok()) << out.status().toString();
    for (float v : (*out)[0].toFloats()) EXPECT_EQ(v, 2.0f);
    EXPECT_EQ(formatArray((*out)[0]), kMyNetPrinted);
  }
}

TEST(Seeds, MyNetWithMyOpBuiltInCpp) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  Value y = b.input("y", DType::kFloat32, {4, 4});
  Value cube = b.pow(b.mul(x, 2.0f), 3.0f);
  b.output(b.mul(b.sub(cube, y), cube), "result");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto out = testing::runGraph(*g, {HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.2f)),
                                    HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.3f))});
  ASSERT_TRUE(out.ok()) << out.status().toString();
  for (float v : (*out)[0].toFloats()) EXPECT_NEAR(v, -0.015104f, 1e-8f);
  EXPECT_EQ(formatArray((*out)[0]), kMyOpPrinted);
}

TEST(Seeds, BundledExampleFiles) {
  const std::string ex = GKRT_EXAMPLES_DIR;
  auto net = loadModelFile(ex + "/mynet.gkm");
  ASSERT_TRUE(net.ok()) << net.status().toString();
  auto x = readNpy(ex + "/mynet_x.npy");
  ASSERT_TRUE(x.ok());
  auto out = testing::runGraph(*net, {*x}, "cpu");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(formatArray((*out)[0]), kMyNetPrinted);

  auto myop = loadModelFile(ex + "/mynet_myop.gkm");
  ASSERT_TRUE(myop.ok()) << myop.status().toString();
  auto mx = readNpy(ex + "/mynet_myop_x.npy");
  auto my = readNpy(ex + "/mynet_myop_y.npy");
  ASSERT_TRUE(mx.ok() && my.ok());
  auto out2 = testing::runGraph(*myop, {*mx, *my}, "cpu");
  ASSERT_TRUE(out2.ok());
  EXPECT_EQ(formatArray((*out2)[0]), kMyOpPrinted);
}

}  // namespace
}  // namespace gkrt
