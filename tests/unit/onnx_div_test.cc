// ONNX Div converts to MindSpore's RealDiv for floats (the op the cpu fusion table
// clusters; tests/fidelity found float Div left out of MindSpore's fused kernels) and
// to Div, which truncates, for integers.
#include <onnx/onnx_pb.h>

#include <fstream>

#include "runtime/ir/op_def.h"
#include "tests/unit/onnx_test_support.h"
#include "tests/unit/test_support.h"
#include "tools/onnx/onnx_import.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

StatusOr<ir::Graph> importDiv(int type) {
  auto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {4}, type);
  addInput(g, "y", {4}, type);
  addNode(g, "Abs", {"x"}, {"a"});
  addNode(g, "Div", {"a", "y"}, {"q"});
  addNode(g, "Neg", {"q"}, {"z"});
  addOutput(g, "z");
  const std::string path = gkrt::testing::testTempPath("div.onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return importOnnxFile(path, {});
}

std::string divOp(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    if (std::string(n.op->name).find("Div") != std::string::npos) return n.op->name;
  }
  return "";
}

TEST(OnnxDiv, FloatDivIsRealDivAndFusesOnCpu) {
  auto g = importDiv(onnx::TensorProto::FLOAT);
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(divOp(*g), "RealDiv");
  const std::vector<HostTensor> in = {HostTensor::fromFloats({4}, {-3, 1, 2, 5}), HostTensor::fromFloats({4}, {2, 4, -8, 0.5f})};
  SessionOptions opts;
  opts.backend = "cpu";
  opts.fusion = testing::optLevel(2);
  auto session = Session::create(*g, opts);
  ASSERT_TRUE(session.ok()) << session.status().toString();
  EXPECT_EQ((*session)->kernelCount(), 1u);  // Abs, RealDiv and Neg in one fused kernel
  auto out = testing::runGraph(*g, in, "cpu", testing::optLevel(2));
  ASSERT_TRUE(out.ok()) << out.status().toString();
  EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{-1.5f, -0.25f, 0.25f, -10.0f}));
}

TEST(OnnxDiv, IntegerDivStaysTruncatingDiv) {
  auto g = importDiv(onnx::TensorProto::INT32);
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(divOp(*g), "Div");
}

}  // namespace
}  // namespace gkrt
