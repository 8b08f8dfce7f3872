// Models with dynamic dims: converted once with their symbolic dims kept, run at any
// input size; one compiled plan per size, cached; impossible sizes refused by name.
#include <onnx/onnx_pb.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "runtime/ir/op_def.h"
#include "tests/unit/onnx_test_support.h"
#include "tests/unit/test_support.h"
#include "tools/onnx/onnx_import.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

void addDynamicInput(onnx::GraphProto* g, const std::string& name, const std::vector<std::string>& dims) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (d[0] >= '0' && d[0] <= '9') dim->set_dim_value(std::stoll(d));
    else if (d != "?") dim->set_dim_param(d);
  }
}
void addInts(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}
// x [N, 3, H, W] -> Conv 3x3 pad 1 -> Relu -> y1: Resize to (2H, W+5) computed from Shape;
// y2: Reshape to [N, 4, H*W] from Shape arithmetic, then Flatten; y3: Slice of the last
// W-2 columns (ends from Shape), y4: Expand of a [1, 4, 1, 1] constant to x's computed shape.
onnx::ModelProto dynamicModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  auto* g = m.mutable_graph();
  addDynamicInput(g, "x", {"batch", "3", "height", "width"});
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(int(i % 11) - 5);
  addInitializer(g, "w", {4, 3, 3, 3}, w);
  auto* conv = addNode(g, "Conv", {"x", "w"}, {"c"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int k = 0; k < 4; ++k) pads->add_ints(1);
  addNode(g, "Relu", {"c"}, {"r"});
  addNode(g, "Shape", {"r"}, {"s"});
  addInts(g, "i01", {0, 1});
  addInts(g, "i2", {2});
  addInts(g, "i3", {3});
  addInts(g, "two", {2});
  addInts(g, "five", {5});
  addInts(g, "minus1", {-1});
  addInts(g, "zero", {0});
  addNode(g, "Gather", {"s", "i01"}, {"nc"});
  addNode(g, "Gather", {"s", "i2"}, {"h"});
  addNode(g, "Gather", {"s", "i3"}, {"wd"});
  addNode(g, "Mul", {"h", "two"}, {"h2"});
  addNode(g, "Add", {"wd", "five"}, {"w5"});
  addNode(g, "Concat", {"nc", "h2", "w5"}, {"sizes"})->add_attribute()->set_name("axis");
  g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  addNode(g, "Resize", {"r", "", "", "sizes"}, {"y1"});
  addNode(g, "Mul", {"h", "wd"}, {"hw"});
  addNode(g, "Concat", {"nc", "hw"}, {"shape3"})->add_attribute()->set_name("axis");
  g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  addNode(g, "Reshape", {"r", "shape3"}, {"r3"});
  addNode(g, "Flatten", {"r3"}, {"y2"});
  addNode(g, "Sub", {"wd", "two"}, {"wm2"});
  addNode(g, "Slice", {"r", "two", "minus1", "i3"}, {"y3"});
  g->mutable_node(g->node_size() - 1)->set_input(1, "zero");
  g->mutable_node(g->node_size() - 1)->set_input(2, "wm2");
  addInitializer(g, "k", {1, 4, 1, 1}, {1, -2, 3, 0.5f});
  addNode(g, "Expand", {"k", "s"}, {"e"});
  addNode(g, "Add", {"e", "r"}, {"y4"});
  for (const char* y : {"y1", "y2", "y3", "y4"}) g->add_output()->set_name(y);
  return m;
}

StatusOr<ir::Graph> importModel(const onnx::ModelProto& m, const OnnxImportOptions& o = {}) {
  const std::string path = gkrt::testing::testTempPath("dynamic.onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return importOnnxFile(path, o);
}

HostTensor input(const Shape& shape) { return testing::randomTensor(shape, 7 + static_cast<int>(shape[2])); }

std::vector<HostTensor> runOnce(Session& s, const HostTensor& x) {
  std::vector<HostTensor> outs;
  EXPECT_TRUE(s.setInput("x", x).ok());
  Status r = s.run();
  EXPECT_TRUE(r.ok()) << r.toString();
  for (const TensorInfo& o : s.outputs()) outs.push_back(*s.output(o.name));
  return outs;
}

TEST(DynamicShapes, ConvertedOnceRunsAtEverySizeAndCachesPlans) {
  auto dynamic = importModel(dynamicModel());
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().toString();
  const ir::Tensor& x = dynamic->tensors[dynamic->inputs[0]];
  EXPECT_EQ(x.shape, (Shape{-1, 3, -1, -1}));
  EXPECT_EQ(x.dim_symbols[2], "height");
  const std::vector<Shape> sizes = {{1, 3, 8, 10}, {2, 3, 5, 7}, {1, 3, 17, 4}};
  for (const char* backend : {"reference", "cpu"}) {
    SessionOptions opts;
    opts.backend = backend;
    opts.max_cached_plans = 2;
    auto s = Session::create(*dynamic, opts);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ((*s)->plansCompiled(), 0u);  // no size known yet
    for (size_t k = 0; k < sizes.size(); ++k) {
      SCOPED_TRACE(std::string(backend) + " at " + shapeToString(sizes[k]));
      // The same model converted at this fixed size, on the reference backend.
      OnnxImportOptions fixed;
      fixed.input_shapes["x"] = sizes[k];
      auto static_model = importModel(dynamicModel(), fixed);
      ASSERT_TRUE(static_model.ok()) << static_model.status().toString();
      auto want = testing::runGraph(*static_model, {input(sizes[k])});
      ASSERT_TRUE(want.ok()) << want.status().toString();
      const auto got = runOnce(**s, input(sizes[k]));
      ASSERT_EQ(got.size(), want->size());
      for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(testing::compareTensors(got[o], (*want)[o], 1e-5, 1e-5), "") << "output " << o;
      EXPECT_EQ((*s)->plansCompiled(), k + 1);
    }
    EXPECT_EQ((*s)->plansCached(), 2u);  // bounded
    runOnce(**s, input(sizes[2]));       // the current size: nothing compiled
    runOnce(**s, input(sizes[1]));       // an earlier size still cached: switched, not recompiled
    EXPECT_EQ((*s)->plansCompiled(), 3u);
    runOnce(**s, input(sizes[0]));       // evicted (cache of 2): compiled again
    EXPECT_EQ((*s)->plansCompiled(), 4u);
    // The lowered graph holds no dynamic op: fusion and backends saw static ops only.
    for (const ir::Node& n : (*s)->compiledGraph().nodes) EXPECT_EQ(n.op->lower, nullptr) << n.op->name;
  }
}

// Not a speed assertion: prints what a new size costs (compile + run) against a switch
// to a cached size and a run at the current size, for bench/README.md's figures.
TEST(DynamicShapes, PrintsTheCostOfANewSizeAndOfACachedOne) {
  auto dynamic = importModel(dynamicModel());
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().toString();
  auto s = Session::create(*dynamic, {"cpu"});
  ASSERT_TRUE(s.ok());
  auto timed = [&](const Shape& shape) {
    const HostTensor x = input(shape);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE((*s)->setInput("x", x).ok());
    EXPECT_TRUE((*s)->run().ok());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const Shape a{1, 3, 64, 64}, b{1, 3, 48, 80};
  const double first = timed(a), again = timed(a), second_size = timed(b), switch_back = timed(a);
  std::cout << "dynamic dims, cpu: first run at a new size " << first << " ms (plan compiled), same size again "
            << again << " ms, another new size " << second_size << " ms, back to a cached size " << switch_back
            << " ms\n";
  EXPECT_EQ((*s)->plansCompiled(), 2u);
}

TEST(DynamicShapes, ImpossibleSizesAreRefusedByName) {
  auto dynamic = importModel(dynamicModel());
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().toString();
  auto s = Session::create(*dynamic, {"cpu"});
  ASSERT_TRUE(s.ok());
  Status fixed_dim = (*s)->setInput("x", input({1, 4, 8, 8}));
  EXPECT_NE(fixed_dim.message().find("input 'x' dim 1 is fixed at 3"), std::string::npos) << fixed_dim.toString();
  Status rank = (*s)->setInput("x", testing::randomTensor({3, 8, 8}, 1));
  EXPECT_NE(rank.message().find("input 'x' is declared ?x3x?x? (rank 4)"), std::string::npos) << rank.toString();
  Status unset = (*s)->run();
  EXPECT_NE(unset.message().find("input 'x' has shape ?x3x?x? with unknown dims and was not set"), std::string::npos)
      << unset.toString();
  Status resize = (*s)->resizeInput("x", {1, 2, 8, 8});
  EXPECT_NE(resize.message().find("dim 1 is fixed at 3"), std::string::npos) << resize.toString();
  SessionOptions opts;
  opts.input_shapes["x"] = {1, 3, 8};
  auto bad = Session::create(*dynamic, opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input_shapes"), std::string::npos) << bad.status().toString();
}

// A decoder's cache inputs as exporters name them: the mask's dim is an expression of the
// past and new lengths, "total_sequence_length" their sum by convention; the causal mask
// is a Trilu over [sequence, total] sized at run time.
onnx::ModelProto cacheModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  auto* g = m.mutable_graph();
  addDynamicInput(g, "past", {"batch_size", "past_sequence_length", "4"});
  addDynamicInput(g, "new", {"batch_size", "sequence_length", "4"});
  addDynamicInput(g, "mask", {"batch_size", "past_sequence_length + sequence_length"});
  addDynamicInput(g, "scores", {"sequence_length", "total_sequence_length"});
  addNode(g, "Concat", {"past", "new"}, {"kv"})->add_attribute()->set_name("axis");
  g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_i(1);
  addInts(g, "axis2", {2});
  addInts(g, "axis1", {1});
  addNode(g, "ReduceSum", {"kv", "axis2"}, {"r"})->add_attribute()->set_name("keepdims");
  g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  addNode(g, "Add", {"r", "mask"}, {"y1"});  // [B, T]: T = past + new
  addNode(g, "Unsqueeze", {"r", "axis1"}, {"r3"});
  addNode(g, "Add", {"r3", "scores"}, {"s3"});  // [B, S, T]
  auto* k = g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::INT64);
  k->add_int64_data(1);
  addNode(g, "Trilu", {"s3", "k"}, {"y2"});
  for (const char* y : {"y1", "y2"}) g->add_output()->set_name(y);
  return m;
}

TEST(DynamicShapes, CacheLengthsNamedByExpressionsAndACausalTriluRunAtEveryLength) {
  auto dynamic = importModel(cacheModel());
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().toString();
  struct Lengths { int64_t batch, past, seq; };
  for (const Lengths& l : {Lengths{1, 0, 3}, Lengths{2, 5, 1}, Lengths{1, 2, 4}}) {
    const int64_t total = l.past + l.seq;
    SCOPED_TRACE("past " + std::to_string(l.past) + ", new " + std::to_string(l.seq));
    const std::map<std::string, Shape> shapes = {
        {"past", {l.batch, l.past, 4}}, {"new", {l.batch, l.seq, 4}}, {"mask", {l.batch, total}}, {"scores", {l.seq, total}}};
    std::vector<HostTensor> feeds;
    OnnxImportOptions fixed;
    int seed = 3;
    for (const char* name : {"past", "new", "mask", "scores"}) {
      feeds.push_back(testing::randomTensor(shapes.at(name), seed++));
      fixed.input_shapes[name] = shapes.at(name);
    }
    auto static_model = importModel(cacheModel(), fixed);
    ASSERT_TRUE(static_model.ok()) << static_model.status().toString();
    auto want = testing::runGraph(*static_model, feeds);
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (const char* backend : {"reference", "cpu"}) {
      auto got = testing::runGraph(*dynamic, feeds, backend);
      ASSERT_TRUE(got.ok()) << backend << ": " << got.status().toString();
      for (size_t o = 0; o < got->size(); ++o) {
        EXPECT_EQ(testing::compareTensors((*got)[o], (*want)[o], 1e-5, 1e-5), "") << backend << " output " << o;
      }
    }
    // Above the diagonal (k = 1) the Trilu keeps s3, elsewhere 0.
    const HostTensor& tri = (*want)[1];
    EXPECT_EQ(tri.as<float>()[0], 0.0f);
  }
}

TEST(DynamicShapes, ADimNameSharedByTwoInputsMustAgree) {
  GraphBuilder b;
  Value a = b.input("a", DType::kFloat32, {-1, 4}, {"batch", ""});
  Value c = b.input("c", DType::kFloat32, {-1, 4}, {"batch", ""});
  b.output(b.add(a, c), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto s = Session::create(*g, {"cpu"});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->setInput("a", testing::randomTensor({2, 4}, 1)).ok());
  ASSERT_TRUE((*s)->setInput("c", testing::randomTensor({3, 4}, 2)).ok());
  Status r = (*s)->run();
  EXPECT_NE(r.message().find("dim 'batch' is 2 in input 'a' but 3 in input 'c'"), std::string::npos) << r.toString();
  ASSERT_TRUE((*s)->setInput("c", testing::randomTensor({2, 4}, 2)).ok());
  EXPECT_TRUE((*s)->run().ok());
}

TEST(DynamicShapes, StaticDimsOfAStaticModelCannotBeOverridden) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.mul(x, 2.0f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  SessionOptions opts;
  opts.input_shapes["x"] = {3, 4};  // what `gkrt run` fills from a 3x4 .npy
  auto s = Session::create(*g, opts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("input 'x' dim 0 is fixed at 4"), std::string::npos) << s.status().toString();
}

TEST(DynamicShapes, ASizeBakedIntoAnAttributeIsAConversionError) {
  // Split into num_outputs equal parts along a dynamic axis: the part sizes are
  // attributes of gkrt's Split, so the model cannot stay dynamic there.
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(18);
  auto* g = m.mutable_graph();
  addDynamicInput(g, "x", {"2", "n"});
  auto* split = addNode(g, "Split", {"x"}, {"p", "q"});
  auto* a = split->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  auto* k = split->add_attribute();
  k->set_name("num_outputs");
  k->set_type(onnx::AttributeProto::INT);
  k->set_i(2);
  g->add_output()->set_name("p");
  g->add_output()->set_name("q");
  auto r = importModel(m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(Split) (its attributes are"), std::string::npos) << r.status().toString();
  EXPECT_NE(r.status().message().find("--input-shape"), std::string::npos);
  OnnxImportOptions fixed;
  fixed.input_shapes["x"] = {2, 6};
  EXPECT_TRUE(importModel(m, fixed).ok());
}

}  // namespace
}  // namespace gkrt
