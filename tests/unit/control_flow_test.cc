// Control-flow nodes (If, Loop, Scan) built in C++: shape rules, reference kernels
// against hand-computed results, sessions on every host backend (subgraphs compiled
// once as child sessions), .gkm round trips, and corrupted subgraphs refused.
#include <gtest/gtest.h>

#include "runtime/builder.h"
#include "runtime/base/log.h"
#include "runtime/model_io.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using Sub = std::shared_ptr<ir::Graph>;

Sub finished(GraphBuilder& b) {
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::make_shared<ir::Graph>(std::move(g).value());
}

// then: a * 2, else: a - b (both read the outer values a, b as explicit inputs).
Sub thenBranch(const Shape& shape) {
  GraphBuilder b;
  Value a = b.input("a", DType::kFloat32, shape);
  b.input("b", DType::kFloat32, shape);
  b.output(b.mul(a, 2.0f), "then_out");
  return finished(b);
}
Sub elseBranch(const Shape& shape) {
  GraphBuilder b;
  Value a = b.input("a", DType::kFloat32, shape);
  Value c = b.input("b", DType::kFloat32, shape);
  b.output(b.sub(a, c), "else_out");
  return finished(b);
}

ir::Graph ifModel() {
  GraphBuilder b;
  Value cond = b.input("cond", DType::kBool, {});
  Value x = b.input("x", DType::kFloat32, {2, 3});
  Value y = b.input("y", DType::kFloat32, {2, 3});
  Value sum = b.add(x, y);
  auto out = b.op("If", {cond, sum, y}, IfAttrs{}, 1, "choose", {thenBranch({2, 3}), elseBranch({2, 3})});
  b.output(b.relu(out[0]), "out");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(g).value();
}

// Loop body: h = h * w + x_i is too much for a unit test; h = h * 0.5 + i, and a
// scan output of h each step. Reads the outer `bias` as a captured input.
ir::Graph loopModel(int64_t trips) {
  GraphBuilder body;
  Value i = body.input("i", DType::kInt64, {});
  Value cond = body.input("cond", DType::kBool, {});
  Value h = body.input("h", DType::kFloat32, {2});
  Value bias = body.input("bias", DType::kFloat32, {2});
  Value fi = body.op1("Cast", {i}, CastAttrs{DType::kFloat32});
  Value next = body.add(body.add(body.mul(h, 0.5f), fi), bias);
  body.output(body.op1("LogicalNot", {body.op1("LogicalNot", {cond})}), "cond_out");
  body.output(next, "h_out");
  body.output(body.mul(next, 1.0f), "h_scan");
  Sub sub = finished(body);
  GraphBuilder b;
  Value h0 = b.input("h0", DType::kFloat32, {2});
  Value bias_outer = b.input("bias", DType::kFloat32, {2});
  const int64_t m = trips;
  Value mv = b.constant("M", DType::kInt64, {}, &m);
  auto outs = b.op("Loop", {mv, Value{}, h0, bias_outer}, LoopAttrs{trips, 1}, 2, "loop", {sub});
  b.output(outs[0], "h_final");
  b.output(outs[1], "h_all");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(g).value();
}

// Cumulative sum over axis 1 of a 2x3 input, backwards: Scan-9 with axis and direction.
ir::Graph scanModel() {
  GraphBuilder body;
  Value s = body.input("s", DType::kFloat32, {2});
  Value col = body.input("col", DType::kFloat32, {2});
  Value next = body.add(s, col);
  body.output(next, "s_out");
  body.output(body.mul(next, 1.0f), "cum");
  Sub sub = finished(body);
  GraphBuilder b;
  Value init = b.input("init", DType::kFloat32, {2});
  Value x = b.input("x", DType::kFloat32, {2, 3});
  ScanAttrs a;
  a.num_state = 1;
  a.num_scan_inputs = 1;
  a.scan_input_axes = {1};
  a.scan_input_directions = {1};
  a.scan_output_axes = {-1};
  auto outs = b.op("Scan", {init, x}, a, 2, "scan", {sub});
  b.output(outs[0], "final");
  b.output(outs[1], "cumulative");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(g).value();
}

HostTensor boolScalar(bool v) {
  HostTensor t(DType::kBool, {});
  *static_cast<uint8_t*>(t.data()) = v ? 1 : 0;
  return t;
}

const char* const kBackends[] = {"reference", "cpu"};

TEST(ControlFlow, IfRunsTheBranchTheConditionPicks) {
  const ir::Graph g = ifModel();
  const HostTensor x = HostTensor::fromFloats({2, 3}, {1, 2, 3, -4, 5, -6});
  const HostTensor y = HostTensor::fromFloats({2, 3}, {1, 1, 1, 1, 1, 1});
  for (const char* backend : kBackends) {
    for (const char* flags : {"--opt_level=0", "--opt_level=2"}) {
      auto fusion = parseFusionFlags(flags);
      ASSERT_TRUE(fusion.ok());
      auto t = testing::runGraph(g, {boolScalar(true), x, y}, backend, *fusion);
      ASSERT_TRUE(t.ok()) << backend << ": " << t.status().toString();
      EXPECT_EQ((*t)[0].toFloats(), (std::vector<float>{4, 6, 8, 0, 12, 0})) << backend << " " << flags;  // relu(2(x+y))
      auto e = testing::runGraph(g, {boolScalar(false), x, y}, backend, *fusion);
      ASSERT_TRUE(e.ok()) << backend << ": " << e.status().toString();
      EXPECT_EQ((*e)[0].toFloats(), (std::vector<float>{1, 2, 3, 0, 5, 0})) << backend << " " << flags;  // relu(x)
    }
  }
}

TEST(ControlFlow, FusionNeverClustersControlFlowNodes) {
  auto fusion = parseFusionFlags("--opt_level=3");
  ASSERT_TRUE(fusion.ok());
  for (const ir::Graph& g : {ifModel(), loopModel(2), scanModel()}) {
    SessionOptions opts;
    opts.backend = "cpu";
    opts.fusion = *fusion;
    auto s = Session::create(g, opts);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    size_t control = 0;
    for (const ir::Node& n : (*s)->compiledGraph().nodes) {
      if (!n.subgraphs.empty()) ++control;
      if (!n.subgraph) continue;
      for (const ir::Node& inner : n.subgraph->nodes) EXPECT_TRUE(inner.subgraphs.empty()) << n.name;
    }
    EXPECT_EQ(control, 1u);
  }
}

TEST(ControlFlow, IfBranchesOfDifferentShapesAreRefused) {
  GraphBuilder b;
  Value cond = b.input("cond", DType::kBool, {});
  Value x = b.input("x", DType::kFloat32, {2, 3});
  GraphBuilder other;
  Value a = other.input("a", DType::kFloat32, {2, 3});
  other.input("b", DType::kFloat32, {2, 3});
  other.output(other.op1("ReduceSum", {a}, AxesAttrs{{1}, false}), "narrow");
  b.op("If", {cond, x, x}, IfAttrs{}, 1, "mismatch", {thenBranch({2, 3}), finished(other)});
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  for (const char* needle : {"mismatch", "output 0", "2x3", "'then_out'", "'narrow'", "--freeze"}) {
    EXPECT_NE(g.status().message().find(needle), std::string::npos) << g.status().message();
  }
}

TEST(ControlFlow, LoopCarriesStateAndStacksScanOutputs) {
  const ir::Graph g = loopModel(3);
  std::vector<float> h = {2, -4}, all;
  const std::vector<float> bias = {0.25f, 1};
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 2; ++k) h[k] = h[k] * 0.5f + float(i) + bias[k];
    all.insert(all.end(), h.begin(), h.end());
  }
  for (const char* backend : kBackends) {
    auto r = testing::runGraph(g, {HostTensor::fromFloats({2}, {2, -4}), HostTensor::fromFloats({2}, bias)}, backend);
    ASSERT_TRUE(r.ok()) << backend << ": " << r.status().toString();
    EXPECT_EQ((*r)[0].toFloats(), h) << backend;
    EXPECT_EQ((*r)[1].shape(), (Shape{3, 2})) << backend;
    EXPECT_EQ((*r)[1].toFloats(), all) << backend;
  }
}

TEST(ControlFlow, LoopScanOutputsNeedATripCount) {
  ir::Graph g = loopModel(3);
  for (ir::Node& n : g.nodes) if (std::string(n.op->name) == "Loop") n.attrs = LoopAttrs{-1, 1};
  Status s = ir::inferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("needs the trip count"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--freeze"), std::string::npos) << s.message();
}

TEST(ControlFlow, ScanFollowsAxesAndDirections) {
  const ir::Graph g = scanModel();
  // x = [[1,2,3],[4,5,6]] scanned backwards along axis 1 from init [10, 20].
  for (const char* backend : kBackends) {
    auto r = testing::runGraph(g, {HostTensor::fromFloats({2}, {10, 20}), HostTensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6})},
                               backend);
    ASSERT_TRUE(r.ok()) << backend << ": " << r.status().toString();
    EXPECT_EQ((*r)[0].toFloats(), (std::vector<float>{16, 35})) << backend;
    // Output axis -1 (= 1 of 2x3), forward: step t at column t.
    EXPECT_EQ((*r)[1].shape(), (Shape{2, 3})) << backend;
    EXPECT_EQ((*r)[1].toFloats(), (std::vector<float>{13, 15, 16, 26, 31, 35})) << backend;
  }
}

TEST(ControlFlow, SubgraphsSurviveASaveAndLoad) {
  for (const ir::Graph& g : {ifModel(), loopModel(4), scanModel()}) {
    auto bytes = serializeModel(g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().toString();
    auto back = loadModelBuffer(bytes->data(), bytes->size());
    ASSERT_TRUE(back.ok()) << back.status().toString();
    ASSERT_EQ(back->nodes.size(), g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node &a = g.nodes[i], &b = back->nodes[i];
      EXPECT_EQ(a.attrs, b.attrs);
      ASSERT_EQ(a.subgraphs.size(), b.subgraphs.size());
      for (size_t k = 0; k < a.subgraphs.size(); ++k) {
        EXPECT_EQ(a.subgraphs[k]->nodes.size(), b.subgraphs[k]->nodes.size());
        EXPECT_EQ(a.subgraphs[k]->inputs, b.subgraphs[k]->inputs);
        EXPECT_EQ(a.subgraphs[k]->outputs, b.subgraphs[k]->outputs);
      }
    }
    auto again = serializeModel(*back);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *bytes);
  }
}

// Saves `g` after `corrupt` edits it (bypassing the builder), then loads it.
Status loadCorrupted(ir::Graph g, const std::function<void(ir::Graph&)>& corrupt) {
  g = ir::cloneGraph(g);
  corrupt(g);
  auto bytes = serializeModel(g);
  if (!bytes.ok()) return bytes.status();
  return loadModelBuffer(bytes->data(), bytes->size()).status();
}

ir::Node& nodeOf(ir::Graph& g, const char* op) {
  for (ir::Node& n : g.nodes) if (std::string(n.op->name) == op) return n;
  return g.nodes.front();
}

void expectRefused(const Status& s, const std::vector<std::string>& needles) {
  ASSERT_FALSE(s.ok());
  for (const auto& n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << s.message();
}

TEST(ControlFlow, CorruptedSubgraphsAreRefused) {
  const ir::Graph g = ifModel();
  expectRefused(loadCorrupted(g, [](ir::Graph& m) { nodeOf(m, "If").subgraphs.pop_back(); }),
                {"'choose'", "holds 1 subgraphs", "then and else"});
  expectRefused(loadCorrupted(g, [](ir::Graph& m) { nodeOf(m, "If").subgraphs[1]->nodes[0].inputs[0] = 99; }),
                {"'choose'", "else branch", "tensor 99"});
  expectRefused(loadCorrupted(g, [](ir::Graph& m) { nodeOf(m, "If").subgraphs[0]->inputs.pop_back(); }),
                {"then branch has 1 inputs", "binds 2"});
  // A subgraph reading a value of the outer graph directly (not as an input).
  expectRefused(loadCorrupted(g, [](ir::Graph& m) {
                  ir::Graph& then_b = *nodeOf(m, "If").subgraphs[0];
                  then_b.inputs.pop_back();
                  then_b.inputs.push_back(then_b.addTensor({"ghost", DType::kFloat32, {2, 3}, {}, nullptr}));
                  then_b.nodes[0].inputs[0] = then_b.addTensor({"outer_x", DType::kFloat32, {2, 3}, {}, nullptr});
                }),
                {"then branch", "'outer_x'", "neither a graph input nor a constant"});
  // A cycle inside a body.
  expectRefused(loadCorrupted(scanModel(), [](ir::Graph& m) {
                  ir::Graph& body = *nodeOf(m, "Scan").subgraphs[0];
                  body.nodes[0].inputs[1] = body.nodes[1].outputs[0];
                }),
                {"body", "cycle"});
  // A body input whose type differs from what the node binds.
  expectRefused(loadCorrupted(loopModel(2), [](ir::Graph& m) {
                  ir::Graph& body = *nodeOf(m, "Loop").subgraphs[0];
                  body.tensors[body.inputs[2]].dtype = DType::kInt32;
                }),
                {"body input 2", "int32", "float32"});
  expectRefused(loadCorrupted(loopModel(2), [](ir::Graph& m) { nodeOf(m, "Loop").attrs = LoopAttrs{2, 7}; }),
                {"num_carried 7"});
  expectRefused(loadCorrupted(g, [](ir::Graph& m) { m.nodes[0].subgraphs = nodeOf(m, "If").subgraphs; }),
                {"only If, Loop and Scan"});
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ControlFlow, ChildSessionsAreCompiledOnceAndReused) {
  const ir::Graph g = loopModel(5);
  SessionOptions opts;
  opts.backend = "cpu";
  const LogLevel saved = logLevel();
  setLogLevel(LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  auto s = Session::create(g, opts);
  const std::string compile_log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(countOf(compile_log, "session compiled for cpu"), 2u) << compile_log;  // the model and the loop body
  ASSERT_TRUE((*s)->setInput("h0", HostTensor::fromFloats({2}, {1, 1})).ok());
  ASSERT_TRUE((*s)->setInput("bias", HostTensor::fromFloats({2}, {0, 0})).ok());
  ::testing::internal::CaptureStderr();
  for (int run = 0; run < 3; ++run) {  // five iterations each, no compiling
    ASSERT_TRUE((*s)->run().ok());
    auto h = (*s)->output("h_final");
    ASSERT_TRUE(h.ok());
    EXPECT_FLOAT_EQ(h->toFloats()[0], 6.15625f);  // h = h/2 + i from 1, i = 0..4
  }
  const std::string run_log = ::testing::internal::GetCapturedStderr();
  setLogLevel(saved);
  EXPECT_EQ(countOf(run_log, "compiled"), 0u) << run_log;
}

}  // namespace
}  // namespace gkrt
