// The ONNX importer on hand-made models: correct conversion, folding, and clear
// errors for corrupted or hostile files.
#include <onnx/onnx_pb.h>

#include <fstream>
#include <functional>

#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"
#include "tools/onnx/onnx_import.h"
#include "tests/unit/onnx_test_support.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

StatusOr<ir::Graph> importBytes(const std::string& bytes, const OnnxImportOptions& o = {}) {
  const std::string path = gkrt::testing::testTempPath("m.onnx");
  std::ofstream(path, std::ios::binary) << bytes;
  return importOnnxFile(path, o);
}
StatusOr<ir::Graph> import(const onnx::ModelProto& m, const OnnxImportOptions& o = {}) {
  return importBytes(m.SerializeAsString(), o);
}

void expectError(const StatusOr<ir::Graph>& g, const std::vector<std::string>& needles) {
  ASSERT_FALSE(g.ok());
  for (const auto& s : needles) EXPECT_NE(g.status().message().find(s), std::string::npos) << g.status().message();
}

TEST(OnnxImport, ConvertsFoldsAndRuns) {
  auto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {2, 3});
  addInitializer(g, "w", {3, 2}, {1, 2, 3, 4, 5, 6});
  addNode(g, "MatMul", {"x", "w"}, {"h"});
  addNode(g, "Shape", {"h"}, {"s"});           // shape arithmetic folds away
  addNode(g, "Reshape", {"h", "s"}, {"r"});
  addNode(g, "Relu", {"r"}, {"y"});
  addOutput(g, "y");
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (const ir::Node& n : r->nodes) EXPECT_STRNE(n.op->name, "Shape");
  auto out = testing::runGraph(*r, {HostTensor::fromFloats({2, 3}, {1, 0, -1, 0, 1, 0})}, "cpu");
  ASSERT_TRUE(out.ok()) << out.status().toString();
  EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{0, 0, 3, 4}));  // relu([-4,-4],[3,4])
}

TEST(OnnxImport, BatchNormFoldsIntoConv) {
  auto build = [](bool keep_conv_output) {
    auto m = model();
    auto* g = m.mutable_graph();
    addInput(g, "x", {1, 2, 4, 4});
    std::vector<float> w(3 * 2 * 3 * 3);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i % 7) - 0.1f;
    addInitializer(g, "w", {3, 2, 3, 3}, w);
    addInitializer(g, "b", {3}, {0.1f, -0.2f, 0.3f});
    addInitializer(g, "gamma", {3}, {1.5f, 0.5f, 2.0f});
    addInitializer(g, "beta", {3}, {0.0f, 1.0f, -1.0f});
    addInitializer(g, "mean", {3}, {0.2f, -0.1f, 0.0f});
    addInitializer(g, "var", {3}, {1.0f, 0.5f, 2.0f});
    auto* conv = addNode(g, "Conv", {"x", "w", "b"}, {"c"});
    auto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k) pads->add_ints(1);
    addNode(g, "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
    addOutput(g, "y");
    if (keep_conv_output) addOutput(g, "c");
    return m;
  };
  auto folded = import(build(false));
  auto plain = import(build(true));
  ASSERT_TRUE(folded.ok() && plain.ok()) << folded.status().toString() << plain.status().toString();
  std::vector<std::string> ops;
  for (const ir::Node& n : folded->nodes) ops.push_back(n.op->name);
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv2D"}));
  std::vector<float> xv(32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
  const HostTensor x = HostTensor::fromFloats({1, 2, 4, 4}, xv);
  auto a = testing::runGraph(*folded, {x});
  auto b = testing::runGraph(*plain, {x});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(testing::compareTensors((*a)[0], (*b)[0], 1e-5, 1e-6), "");
}

TEST(OnnxImport, ListsEveryUnsupportedOpAtOnce) {
  auto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {4});
  addNode(g, "Unique", {"x"}, {"a"});
  addNode(g, "GridSample", {"x", "x"}, {"b"});
  addNode(g, "Relu", {"x"}, {"y"});
  addOutput(g, "y");
  expectError(import(m), {"unsupported ONNX ops (opset 17):", "Unique", "GridSample", "[nodes: Unique_1"});
}

TEST(OnnxImport, HostileFiles) {
  auto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {4});
  addNode(g, "Relu", {"x"}, {"y"});
  addOutput(g, "y");
  const std::string good = m.SerializeAsString();
  expectError(importBytes(good.substr(0, good.size() / 2)), {"not a valid ONNX model"});
  expectError(importBytes("\x08\x96\x01garbage-garbage"), {"not a valid ONNX model"});
  expectError(importOnnxFile("/nonexistent.onnx"), {"cannot open"});

  auto huge = m;  // dims with 2^50 elements: refused before any allocation
  auto* t = huge.mutable_graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t{1} << 25);
  t->add_dims(int64_t{1} << 25);
  expectError(import(huge), {"initializer 'big'", "2^40"});

  auto negative = m;
  auto* nt = negative.mutable_graph()->add_initializer();
  nt->set_name("neg");
  nt->set_data_type(onnx::TensorProto::FLOAT);
  nt->add_dims(-3);
  expectError(import(negative), {"negative dim -3"});

  auto short_data = m;
  auto* st = short_data.mutable_graph()->add_initializer();
  st->set_name("short");
  st->set_data_type(onnx::TensorProto::FLOAT);
  st->add_dims(4);
  st->set_raw_data(std::string(6, '\0'));
  expectError(import(short_data), {"'short' holds 6 bytes", "needs 16"});

  auto missing = m;  // a node reading a value nobody defines
  addNode(missing.mutable_graph(), "Add", {"y", "nowhere"}, {"z"});
  expectError(import(missing), {"input 'nowhere' is not produced", "missing initializer"});

  auto cycle = model();  // a -> b -> a
  auto* cg = cycle.mutable_graph();
  addInput(cg, "x", {4});
  addNode(cg, "Add", {"x", "b"}, {"a"});
  addNode(cg, "Relu", {"a"}, {"b"});
  addOutput(cg, "b");
  expectError(import(cycle), {"input 'b' is not produced by an earlier node", "cycle"});

  auto escape = m;  // external data must stay beside the model
  auto* et = escape.mutable_graph()->add_initializer();
  et->set_name("ext");
  et->set_data_type(onnx::TensorProto::FLOAT);
  et->add_dims(1);
  et->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = et->add_external_data();
  kv->set_key("location");
  kv->set_value("../../etc/passwd");
  expectError(import(escape), {"external data location '../../etc/passwd' climbs out with '..'", "must name a file inside"});
  kv->set_value("weights.bin");
  auto* off = et->add_external_data();
  off->set_key("offset");
  off->set_value("12abc");
  expectError(import(escape), {"external data offset '12abc' is not a non-negative integer"});

  auto dynamic = model();
  auto* dg = dynamic.mutable_graph();
  auto* v = dg->add_input();
  v->set_name("x");
  v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("batch");
  addNode(dg, "Relu", {"x"}, {"y"});
  addOutput(dg, "y");
  auto kept = import(dynamic);  // dynamic dims are kept (tests/unit/dynamic_shapes_test.cc)
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  EXPECT_EQ(kept->tensors[kept->inputs[0]].shape, (Shape{-1}));
  EXPECT_EQ(kept->tensors[kept->inputs[0]].dim_symbols, (std::vector<std::string>{"batch"}));
  OnnxImportOptions o;
  o.input_shapes["x"] = {3};
  EXPECT_TRUE(import(dynamic, o).ok());
}

TEST(OnnxImport, ExternalDataBesideTheModel) {
  auto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {2});
  auto* t = g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  const std::string weights = gkrt::testing::testTempPath("weights.bin");
  kv->set_value(weights.substr(weights.rfind('/') + 1));  // beside the model importBytes writes
  const float w[2] = {3.0f, -1.0f};
  std::ofstream(weights, std::ios::binary).write(reinterpret_cast<const char*>(w), 8);
  addNode(g, "Mul", {"x", "w"}, {"y"});
  addOutput(g, "y");
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto out = testing::runGraph(*r, {HostTensor::fromFloats({2}, {2, 2})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{6, -2}));
}

// LSTM/GRU/RNN: attributes reach the op (activations with alpha/beta as onnxruntime
// consumes them), and what the op cannot take is a clear error naming it.
TEST(OnnxImport, RecurrentOpsAndTheirErrors) {
  auto lstm = [](const std::function<void(onnx::NodeProto*)>& edit) {
    onnx::ModelProto m = model(14);
    auto* g = m.mutable_graph();
    addInput(g, "x", {3, 1, 2});
    addInitializer(g, "W", {1, 8, 2}, std::vector<float>(16, 0.1f));
    addInitializer(g, "R", {1, 8, 2}, std::vector<float>(16, 0.1f));
    auto* n = addNode(g, "LSTM", {"x", "W", "R"}, {"y", "y_h"});
    auto* h = n->add_attribute();
    h->set_name("hidden_size");
    h->set_type(onnx::AttributeProto::INT);
    h->set_i(2);
    edit(n);
    addOutput(g, "y");
    addOutput(g, "y_h");
    return import(m);
  };
  auto strings = [](onnx::NodeProto* n, const std::string& name, std::vector<std::string> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRINGS);
    for (auto& s : v) a->add_strings(s);
  };
  auto floats = [](onnx::NodeProto* n, const std::string& name, std::vector<float> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float f : v) a->add_floats(f);
  };
  auto ok = lstm([&](onnx::NodeProto* n) {
    strings(n, "activations", {"HardSigmoid", "Tanh", "LeakyRelu"});
    floats(n, "activation_alpha", {0.3f, 0.7f});  // HardSigmoid's, then LeakyRelu's
  });
  ASSERT_TRUE(ok.ok()) << ok.status().toString();
  const ir::Node* node = nullptr;
  for (const ir::Node& n : ok->nodes) if (std::string(n.op->name) == "LSTM") node = &n;
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->attrs.toString(),
            "hidden_size=2 direction=forward layout=0 clip=0 input_forget=false linear_before_reset=false "
            "activations=[HardSigmoid,Tanh,LeakyRelu] activation_alpha=[0.3,0,0.7] activation_beta=[0.5,0,0]");

  expectError(lstm([&](onnx::NodeProto* n) { strings(n, "activations", {"Sigmoid", "Swish", "Tanh"}); }),
              {"LSTM", "activation 'Swish'", "HardSigmoid"});
  expectError(lstm([&](onnx::NodeProto* n) { strings(n, "activations", {"Sigmoid", "Tanh"}); }),
              {"LSTM", "activations lists 2 functions", "3 per direction"});
  expectError(lstm([&](onnx::NodeProto* n) {
                auto* a = n->add_attribute();
                a->set_name("direction");
                a->set_type(onnx::AttributeProto::STRING);
                a->set_s("sideways");
              }),
              {"direction 'sideways'", "bidirectional"});
  expectError(lstm([&](onnx::NodeProto* n) { n->mutable_attribute(0)->set_i(3); }),  // R says 2
              {"hidden_size=3", "hidden size 2"});
}

}  // namespace
}  // namespace gkrt

namespace gkrt {
namespace {

// NonZero: folded when its input is a constant; on run-time data a clear error naming
// the node and the fix.
TEST(OnnxImport, NonZeroFoldsConstantsAndRefusesRuntimeData) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  addInitializer(g, "c", {2, 3}, {0, 1, 0, 2, 0, 3});
  addNode(g, "NonZero", {"c"}, {"y"});
  addOutput(g, "y");
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (const ir::Node& n : r->nodes) EXPECT_STRNE(n.op->name, "NonZero");
  auto out = testing::runGraph(*r, {}, "reference");
  ASSERT_TRUE(out.ok()) << out.status().toString();
  ASSERT_EQ((*out)[0].shape(), (Shape{2, 3}));
  const int64_t* v = (*out)[0].as<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(v, v + 6), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));  // rows, then columns

  auto m2 = model(13);
  auto* g2 = m2.mutable_graph();
  addInput(g2, "x", {2, 3});
  addNode(g2, "NonZero", {"x"}, {"y"});
  addOutput(g2, "y");
  expectError(import(m2), {"NonZero_1", "depends on the input's values", "--freeze"});
}

// Einsum: a batched contraction becomes one BatchMatMul; a transpose-and-sum form and
// a diagonal match numpy's values.
TEST(OnnxImport, EinsumForms) {
  auto run = [](const std::string& eq, std::vector<std::vector<int64_t>> dims, std::vector<HostTensor> inputs,
                std::vector<float> want, const char* expect_op) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    std::vector<std::string> names;
    for (size_t k = 0; k < dims.size(); ++k) {
      names.push_back("x" + std::to_string(k));
      addInput(g, names.back(), dims[k]);
    }
    auto* n = addNode(g, "Einsum", names, {"y"});
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(eq);
    addOutput(g, "y");
    auto r = import(m);
    ASSERT_TRUE(r.ok()) << eq << ": " << r.status().toString();
    if (expect_op) {
      bool found = false;
      for (const ir::Node& node : r->nodes) found |= std::string(node.op->name) == expect_op;
      EXPECT_TRUE(found) << eq << " has no " << expect_op;
    }
    auto out = testing::runGraph(*r, inputs, "reference");
    ASSERT_TRUE(out.ok()) << out.status().toString();
    EXPECT_EQ((*out)[0].toFloats(), want) << eq;
  };
  // [2,1,2] x [2,2,1]: per batch a row times a column.
  run("bij,bjk->bik", {{2, 1, 2}, {2, 2, 1}},
      {HostTensor::fromFloats({2, 1, 2}, {1, 2, 3, 4}), HostTensor::fromFloats({2, 2, 1}, {5, 6, 7, 8})}, {17, 53},
      "BatchMatMul");
  run("ij->ji", {{2, 3}}, {HostTensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6})}, {1, 4, 2, 5, 3, 6}, "Transpose");
  run("ii->i", {{2, 2}}, {HostTensor::fromFloats({2, 2}, {1, 2, 3, 4})}, {1, 4}, nullptr);
  run("i,j", {{2}, {3}}, {HostTensor::fromFloats({2}, {1, 2}), HostTensor::fromFloats({3}, {1, 2, 3})},
      {1, 2, 3, 2, 4, 6}, nullptr);
}

}  // namespace
}  // namespace gkrt
