// A Fused node (a subgraph of basic ops) runs like its subgraph and survives save/load.
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

// The seeds' MyOp body, (a - b) * a, as one Fused node over inputs a, b.
ir::Graph fusedMyOp() {
  GraphBuilder inner;
  Value a = inner.input("a", DType::kFloat32, {4, 4});
  Value c = inner.input("b", DType::kFloat32, {4, 4});
  inner.output(inner.mul(inner.sub(a, c), a), "out");
  auto sub = inner.finish();

  ir::Graph g;
  int x = g.addTensor({"x", DType::kFloat32, {4, 4}, {}, nullptr});
  int y = g.addTensor({"y", DType::kFloat32, {4, 4}, {}, nullptr});
  int r = g.addTensor({"result", DType::kFloat32, {}, {}, nullptr});
  ir::Node n;
  n.name = "myop_fused";
  n.op = findOp("Fused");
  n.inputs = {x, y};
  n.outputs = {r};
  n.subgraph = std::make_shared<ir::Graph>(*sub);
  g.addNode(std::move(n));
  g.inputs = {x, y};
  g.outputs = {r};
  return g;
}

TEST(FusedOp, RunsItsSubgraphAndRoundTrips) {
  ir::Graph g = fusedMyOp();
  ASSERT_TRUE(ir::validateGraph(g).ok());
  ASSERT_TRUE(ir::inferShapes(g).ok());
  EXPECT_EQ(g.countNodesDeep(), 2u);
  auto bytes = serializeModel(g);
  ASSERT_TRUE(bytes.ok());
  auto loaded = loadModelBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  ASSERT_TRUE(loaded->nodes[0].subgraph);
  for (const std::string backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(*loaded, {HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.064f)),
                                           HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.3f))}, backend);
    ASSERT_TRUE(out.ok()) << out.status().toString();
    for (float v : (*out)[0].toFloats()) EXPECT_FLOAT_EQ(v, (0.064f - 0.3f) * 0.064f);
  }
}

TEST(FusedOp, SubgraphArityMismatchIsAnError) {
  ir::Graph g = fusedMyOp();
  g.nodes[0].inputs.pop_back();
  Status s = ir::validateGraph(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("subgraph has 2 inputs and 1 outputs, the node 1 and 1"), std::string::npos);
}

}  // namespace
}  // namespace gkrt
