// The ONNX converter on control flow: an If with a constant (or frozen) condition is
// inlined, otherwise kept with both branches; outer values the subgraphs read become
// explicit inputs; a Loop with scan outputs needs a trip count known at conversion.
#include <onnx/onnx_pb.h>

#include <fstream>

#include "backends/backend.h"
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"
#include "tests/unit/test_support.h"
#include "tools/onnx/onnx_import.h"
#include "tests/unit/onnx_test_support.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

void addGraphAttr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}
void addIntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

StatusOr<ir::Graph> import(const onnx::ModelProto& m, const OnnxImportOptions& o = {}) {
  const std::string path = gkrt::testing::testTempPath("cf.onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return importOnnxFile(path, o);
}

// y = If(flag) { x * k } else { x - x2 } + 1, where k, x and x2 are outer values.
onnx::ModelProto ifModel() {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "flag", {}, onnx::TensorProto::BOOL);
  addInput(g, "x", {3});
  addInitializer(g, "k", {3}, {2, 3, 4});
  addNode(g, "Neg", {"x"}, {"x2"});
  onnx::GraphProto then_g, else_g;
  addNode(&then_g, "Mul", {"x", "k"}, {"t"});
  addOutput(&then_g, "t");
  addNode(&else_g, "Sub", {"x", "x2"}, {"e"});
  addOutput(&else_g, "e");
  auto* node = addNode(g, "If", {"flag"}, {"picked"});
  addGraphAttr(node, "then_branch", then_g);
  addGraphAttr(node, "else_branch", else_g);
  addInitializer(g, "one", {}, {1});
  addNode(g, "Add", {"picked", "one"}, {"y"});
  addOutput(g, "y");
  return m;
}

HostTensor flag(bool v) {
  HostTensor t(DType::kBool, {});
  *static_cast<uint8_t*>(t.data()) = v;
  return t;
}


TEST(OnnxControlFlow, IfIsKeptWithCapturesAsInputs) {
  auto g = import(ifModel());
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ASSERT_EQ(testing::countOps(*g, "If"), 1);
  const ir::Node* node = nullptr;
  for (const ir::Node& n : g->nodes) if (std::string(n.op->name) == "If") node = &n;
  // {flag, x, x2}: x read by both branches, x2 by the else branch only; the constant
  // k is copied into the then branch rather than captured.
  ASSERT_EQ(node->inputs.size(), 3u);
  EXPECT_EQ(g->tensors[node->inputs[1]].name, "x");
  EXPECT_STREQ(g->nodes[0].op->name, "Neg");
  EXPECT_EQ(node->inputs[2], g->nodes[0].outputs[0]);
  for (const auto& branch : node->subgraphs) {
    ASSERT_EQ(branch->inputs.size(), 2u);
    EXPECT_EQ(branch->tensors[branch->inputs[0]].name, "x");
    EXPECT_EQ(branch->tensors[branch->inputs[1]].name, "x2");
  }
  const HostTensor x = HostTensor::fromFloats({3}, {1, -2, 3});
  for (const char* backend : {"reference", "cpu"}) {
    auto t = testing::runGraph(*g, {flag(true), x}, backend);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    EXPECT_EQ((*t)[0].toFloats(), (std::vector<float>{3, -5, 13})) << backend;
    auto e = testing::runGraph(*g, {flag(false), x}, backend);
    ASSERT_TRUE(e.ok()) << e.status().toString();
    EXPECT_EQ((*e)[0].toFloats(), (std::vector<float>{3, -3, 7})) << backend;
  }
}

TEST(OnnxControlFlow, IfOnAFrozenConditionIsInlined) {
  for (bool taken : {true, false}) {
    OnnxImportOptions o;
    o.frozen_inputs["flag"] = flag(taken);
    auto g = import(ifModel(), o);
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_EQ(testing::countOps(*g, "If"), 0);
    EXPECT_EQ(testing::countOps(*g, taken ? "Mul" : "Sub"), 1);
    EXPECT_EQ(testing::countOps(*g, taken ? "Sub" : "Mul"), 0);
    auto out = testing::runGraph(*g, {HostTensor::fromFloats({3}, {1, -2, 3})}, "cpu");
    ASSERT_TRUE(out.ok()) << out.status().toString();
    EXPECT_EQ((*out)[0].toFloats(), taken ? (std::vector<float>{3, -5, 13}) : (std::vector<float>{3, -3, 7}));
  }
}

// y = If(flag) { x * k } else { reflect-Pad(x) by 8 }: the else branch cannot run on the
// 6 values of x (a reflect pad needs an axis longer than the pad), as Silero VAD's 8 kHz
// branch cannot at 16 kHz sizes. `broken_then` swaps the branches.
onnx::ModelProto ifWithABranchInvalidAtTheseShapes(bool broken_then) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "flag", {}, onnx::TensorProto::BOOL);
  addInput(g, "x", {6});
  addInitializer(g, "k", {6}, {1, 2, 3, 4, 5, 6});
  auto* pads = g->add_initializer();
  pads->set_name("pads");
  pads->set_data_type(onnx::TensorProto::INT64);
  pads->add_dims(2);
  pads->add_int64_data(0);
  pads->add_int64_data(8);
  onnx::GraphProto good, bad;
  addNode(&good, "Mul", {"x", "k"}, {"t"});
  addOutput(&good, "t");
  auto* pad = addNode(&bad, "Pad", {"x", "pads"}, {"e"});
  auto* mode = pad->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("reflect");
  addOutput(&bad, "e");
  auto* node = addNode(g, "If", {"flag"}, {"y"});
  addGraphAttr(node, "then_branch", broken_then ? bad : good);
  addGraphAttr(node, "else_branch", broken_then ? good : bad);
  addOutput(g, "y");
  return m;
}

TEST(OnnxControlFlow, ABranchThatCannotRunAtTheseShapesIsARunTimeErrorWhenTaken) {
  for (bool broken_then : {false, true}) {
    auto g = import(ifWithABranchInvalidAtTheseShapes(broken_then));
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const ir::Node* node = nullptr;
    for (const ir::Node& n : g->nodes) if (std::string(n.op->name) == "If") node = &n;
    ASSERT_NE(node, nullptr);
    ASSERT_EQ(node->attrs.kind(), AttrKind::kIf);
    EXPECT_EQ(node->attrs.get<IfAttrs>().unbuilt_branch, broken_then ? 0 : 1);
    // Saved and loaded, the node keeps which branch is the placeholder.
    auto bytes = serializeModel(*g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().toString();
    auto loaded = loadModelBuffer(bytes->data(), bytes->size());
    ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
    const HostTensor x = HostTensor::fromFloats({6}, {1, -2, 3, -4, 5, -6});
    for (const char* backend : {"reference", "cpu"}) {
      auto good = testing::runGraph(*loaded, {flag(!broken_then), x}, backend);
      ASSERT_TRUE(good.ok()) << good.status().toString();
      EXPECT_EQ((*good)[0].toFloats(), (std::vector<float>{1, -4, 9, -16, 25, -36})) << backend;
      auto bad = testing::runGraph(*loaded, {flag(broken_then), x}, backend);
      ASSERT_FALSE(bad.ok()) << backend;
      EXPECT_NE(bad.status().message().find(broken_then ? "its then branch was not built" : "its else branch was not built"),
                std::string::npos) << bad.status().message();
      EXPECT_NE(bad.status().message().find("--input-shape"), std::string::npos) << bad.status().message();
    }
  }
}

TEST(OnnxControlFlow, AnIfWhoseBranchesBothFailAtTheseShapesStillFailsToConvert) {
  onnx::ModelProto m = ifWithABranchInvalidAtTheseShapes(false);
  auto* g = m.mutable_graph();
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() != "If") continue;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == "then_branch") *a.mutable_g() = n.attribute(1).g();  // both the reflect pad
    }
  }
  auto converted = import(m);
  ASSERT_FALSE(converted.ok());
  EXPECT_NE(converted.status().message().find("reflect Pad"), std::string::npos) << converted.status().message();
}

// Loop(M, cond, s) { s + x } with a scan output; M from `trips`.
onnx::ModelProto loopModel(bool constant_trips) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {2});
  addInput(g, "s0", {2});
  if (constant_trips) {
    auto* t = g->add_initializer();
    t->set_name("trips");
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(4);
  } else {
    addInput(g, "trips", {}, onnx::TensorProto::INT64);
  }
  onnx::GraphProto body;
  addInput(&body, "i", {}, onnx::TensorProto::INT64);
  addInput(&body, "c", {}, onnx::TensorProto::BOOL);
  addInput(&body, "s", {2});
  addNode(&body, "Identity", {"c"}, {"c_out"});
  addNode(&body, "Add", {"s", "x"}, {"s_out"});
  addNode(&body, "Identity", {"s_out"}, {"scan"});
  for (const char* o : {"c_out", "s_out", "scan"}) body.add_output()->set_name(o);
  auto* node = addNode(g, "Loop", {"trips", "", "s0"}, {"s_final", "all"});
  addGraphAttr(node, "body", body);
  addOutput(g, "s_final");
  addOutput(g, "all");
  return m;
}

TEST(OnnxControlFlow, LoopWithAConstantTripCountRuns) {
  auto g = import(loopModel(true));
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ASSERT_EQ(testing::countOps(*g, "Loop"), 1);
  for (const char* backend : {"reference", "cpu"}) {
    auto r = testing::runGraph(*g, {HostTensor::fromFloats({2}, {1, 10}), HostTensor::fromFloats({2}, {0, 5})}, backend);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_EQ((*r)[0].toFloats(), (std::vector<float>{4, 45})) << backend;
    EXPECT_EQ((*r)[1].shape(), (Shape{4, 2}));
    EXPECT_EQ((*r)[1].toFloats(), (std::vector<float>{1, 15, 2, 25, 3, 35, 4, 45})) << backend;
  }
}

TEST(OnnxControlFlow, LoopScanOutputsWithARuntimeTripCountAreAClearError) {
  auto g = import(loopModel(false));
  ASSERT_FALSE(g.ok());
  for (const char* needle : {"Loop", "scan output", "M ('trips') must be a constant", "--freeze"}) {
    EXPECT_NE(g.status().message().find(needle), std::string::npos) << g.status().message();
  }
  OnnxImportOptions o;  // the fix the message names
  HostTensor trips(DType::kInt64, {});
  *static_cast<int64_t*>(trips.data()) = 4;
  o.frozen_inputs["trips"] = trips;
  auto frozen = import(loopModel(false), o);
  ASSERT_TRUE(frozen.ok()) << frozen.status().toString();
}

// Loop { If (i > 1) { s + x } else { s - x } }: the branches read the body's s and the
// top level's x, which the body captures in turn.
TEST(OnnxControlFlow, NestedIfInALoopCapturesThroughBothLevels) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {2});
  addInput(g, "s0", {2});
  auto* trips = g->add_initializer();
  trips->set_name("trips");
  trips->set_data_type(onnx::TensorProto::INT64);
  trips->add_int64_data(3);
  auto* one = g->add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::INT64);
  one->add_int64_data(1);
  onnx::GraphProto body, then_g, else_g;
  addInput(&body, "i", {}, onnx::TensorProto::INT64);
  addInput(&body, "c", {}, onnx::TensorProto::BOOL);
  addInput(&body, "s", {2});
  addNode(&then_g, "Add", {"s", "x"}, {"t"});
  addOutput(&then_g, "t");
  addNode(&else_g, "Sub", {"s", "x"}, {"e"});
  addOutput(&else_g, "e");
  addNode(&body, "Identity", {"c"}, {"c_out"});
  addNode(&body, "Greater", {"i", "one"}, {"late"});
  auto* branch = addNode(&body, "If", {"late"}, {"s_out"});
  addGraphAttr(branch, "then_branch", then_g);
  addGraphAttr(branch, "else_branch", else_g);
  for (const char* o : {"c_out", "s_out"}) body.add_output()->set_name(o);
  addGraphAttr(addNode(g, "Loop", {"trips", "", "s0"}, {"s_final"}), "body", body);
  addOutput(g, "s_final");
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (const ir::Node& n : r->nodes) {
    if (std::string(n.op->name) == "Loop") { EXPECT_EQ(n.inputs.size(), 4u); }  // M, cond, s0, x
  }
  for (const char* backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(*r, {HostTensor::fromFloats({2}, {1, 2}), HostTensor::fromFloats({2}, {0, 0})}, backend);
    ASSERT_TRUE(out.ok()) << out.status().toString();
    EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{-1, -2})) << backend;  // -x, -x, +x
  }
}

TEST(OnnxControlFlow, ScanWithAnOuterValueAndReverseDirection) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "init", {2});
  addInput(g, "xs", {3, 2});
  addInput(g, "w", {2});
  onnx::GraphProto body;
  addInput(&body, "acc", {2});
  addInput(&body, "row", {2});
  addNode(&body, "Mul", {"row", "w"}, {"wr"});
  addNode(&body, "Add", {"acc", "wr"}, {"acc_out"});
  addNode(&body, "Identity", {"acc_out"}, {"trace"});
  for (const char* o : {"acc_out", "trace"}) body.add_output()->set_name(o);
  auto* node = addNode(g, "Scan", {"init", "xs"}, {"final", "traces"});
  addGraphAttr(node, "body", body);
  addIntAttr(node, "num_scan_inputs", 1);
  auto* dirs = node->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  addOutput(g, "final");
  addOutput(g, "traces");
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (const ir::Node& n : r->nodes) {
    if (std::string(n.op->name) == "Scan") { EXPECT_EQ(n.inputs.size(), 3u); }  // + w
  }
  auto out = testing::runGraph(*r, {HostTensor::fromFloats({2}, {0, 0}), HostTensor::fromFloats({3, 2}, {1, 2, 3, 4, 5, 6}),
                                    HostTensor::fromFloats({2}, {1, 10})}, "cpu");
  ASSERT_TRUE(out.ok()) << out.status().toString();
  EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{9, 120}));
  EXPECT_EQ((*out)[1].toFloats(), (std::vector<float>{5, 60, 8, 100, 9, 120}));  // rows 2, 1, 0 accumulated
}


void addInt64Initializer(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                         std::vector<int64_t> values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

// ONNX's test_loop11 shape: Loop(5) { y += x[i : i + 1]; scan out y } with x outer;
// `constant_end`: x[i : 5] instead, whose length depends on i.
onnx::ModelProto sliceLoopModel(bool constant_end) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "y", {1});
  addInitializer(g, "x", {5}, {1, 2, 3, 4, 5});
  addInt64Initializer(g, "trips", {}, {5});
  onnx::GraphProto body;
  addInput(&body, "i", {}, onnx::TensorProto::INT64);
  addInput(&body, "c", {}, onnx::TensorProto::BOOL);
  addInput(&body, "y_in", {1});
  addInt64Initializer(&body, "one", {}, {1});
  addInt64Initializer(&body, "axis0", {1}, {0});
  addInt64Initializer(&body, "five", {1}, {5});
  addNode(&body, "Add", {"i", "one"}, {"end"});
  addNode(&body, "Unsqueeze", {"i", "axis0"}, {"starts"});
  addNode(&body, "Unsqueeze", {"end", "axis0"}, {"ends"});
  addNode(&body, "Identity", {"c"}, {"c_out"});
  addNode(&body, "Slice", {"x", "starts", constant_end ? "five" : "ends"}, {"picked"});
  addNode(&body, "Add", {"y_in", "picked"}, {"y_out"});
  addNode(&body, "Identity", {"y_out"}, {"scan"});
  for (const char* o : {"c_out", "y_out", "scan"}) body.add_output()->set_name(o);
  addGraphAttr(addNode(g, "Loop", {"trips", "", "y"}, {"y_final", "ys"}), "body", body);
  addOutput(g, "y_final");
  addOutput(g, "ys");
  return m;
}

TEST(OnnxControlFlow, ASliceByTheLoopCounterReadsItsStartAtRun) {
  auto g = import(sliceLoopModel(false));
  ASSERT_TRUE(g.ok()) << g.status().toString();
  size_t slices = 0;
  for (const ir::Node& n : g->nodes) {
    for (const auto& body : n.subgraphs) slices += testing::countOps(*body, "SliceAtRun");
  }
  EXPECT_EQ(slices, 1u);
  for (const std::string& backend : availableBackends()) {
    auto r = testing::runGraph(*g, {HostTensor::fromFloats({1}, {-2})}, backend);
    ASSERT_TRUE(r.ok()) << backend << ": " << r.status().toString();
    EXPECT_EQ((*r)[0].toFloats(), (std::vector<float>{13})) << backend;
    EXPECT_EQ((*r)[1].toFloats(), (std::vector<float>{-1, 1, 4, 8, 13})) << backend;
  }
}

TEST(OnnxControlFlow, ASliceWhoseLengthDependsOnTheCounterIsAClearError) {
  auto g = import(sliceLoopModel(true));
  ASSERT_FALSE(g.ok());
  for (const char* needle : {"Loop body", "Slice", "or ends - starts, for bounds computed at run", "must be a constant"}) {
    EXPECT_NE(g.status().message().find(needle), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace gkrt
