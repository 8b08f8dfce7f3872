// The seeds' Figures 1 and 2: MyNet and MyNet-with-MyOp each fuse into exactly one
// kernel, on every backend and table column, with the seeds' exact outputs.
#include "fusion/fusion_options.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"
#include "tools/array_print.h"

namespace gkrt {
namespace {

ir::Graph myNet() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.add(b.mul(x, 2.0f), 1.0f), "result");
  return *b.finish();
}

ir::Graph myNetMyOp() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  Value y = b.input("y", DType::kFloat32, {4, 4});
  Value cube = b.pow(b.mul(x, 2.0f), 3.0f);
  b.output(b.mul(b.sub(cube, y), cube), "result");  // MyOp(cube, y) = (cube - y) * cube
  return *b.finish();
}

std::unique_ptr<Session> compile(const ir::Graph& g, const std::string& backend, const std::string& flags) {
  SessionOptions opts;
  opts.backend = backend;
  opts.fusion = *parseFusionFlags(flags);
  auto s = Session::create(g, opts);
  EXPECT_TRUE(s.ok()) << s.status().toString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(FusionSeeds, Figure1MyNetIsOneKernel) {
  for (const std::string backend : {"reference", "cpu"}) {
    for (const char* profile : {"cpu", "gpu", "ascend"}) {
      SCOPED_TRACE(backend + " / " + profile);
      auto off = compile(myNet(), backend, "--opt_level=0");
      EXPECT_EQ(off->kernelCount(), 2u);  // Mul, Add
      auto s = compile(myNet(), backend, std::string("--fusion_profile=") + profile);
      ASSERT_TRUE(s);
      EXPECT_EQ(s->kernelCount(), 1u);
      EXPECT_EQ(s->fusionReport().clusters, 1u);
      ASSERT_TRUE(s->setInput("x", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.5f))).ok());
      ASSERT_TRUE(s->run().ok());
      EXPECT_EQ(formatArray(*s->output("result")), "[[2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]]");
    }
  }
}

TEST(FusionSeeds, Figure2MyOpAcrossTheCustomOpIsOneKernel) {
  for (const std::string backend : {"reference", "cpu"}) {
    for (const char* profile : {"cpu", "gpu", "ascend"}) {
      SCOPED_TRACE(backend + " / " + profile);
      auto off = compile(myNetMyOp(), backend, "--opt_level=0");
      EXPECT_EQ(off->kernelCount(), 4u);  // Mul, Pow, Sub, Mul
      auto s = compile(myNetMyOp(), backend, std::string("--fusion_profile=") + profile);
      ASSERT_TRUE(s);
      EXPECT_EQ(s->kernelCount(), 1u);
      const ir::Node& fused = s->compiledGraph().nodes[0];
      ASSERT_TRUE(fused.subgraph);
      std::vector<std::string> ops;
      for (const ir::Node& n : fused.subgraph->nodes) ops.push_back(n.op->name);
      EXPECT_EQ(ops, (std::vector<std::string>{"Mul", "Pow", "Sub", "Mul"}));
      ASSERT_TRUE(s->setInput("x", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.2f))).ok());
      ASSERT_TRUE(s->setInput("y", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.3f))).ok());
      ASSERT_TRUE(s->run().ok());
      const std::string row = "[-0.015104 -0.015104 -0.015104 -0.015104]";
      EXPECT_EQ(formatArray(*s->output("result")), "[" + row + "\n " + row + "\n " + row + "\n " + row + "]");
    }
  }
}

}  // namespace
}  // namespace gkrt
