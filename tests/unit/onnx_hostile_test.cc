// The converter against hostile ONNX content: tensors claiming more elements than their
// bytes (refused before allocating), external data outside the model's directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/onnx_test_support.h"
#include "tools/onnx/onnx_import.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

namespace fs = std::filesystem;

void expectMessage(const Status& s, std::initializer_list<const char*> needles) {
  ASSERT_FALSE(s.ok());
  for (const char* n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << "no '" << n << "' in: " << s.message();
}

onnx::TensorProto floatTensor(const std::string& name, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

// 2^40 elements (4 TiB): allocating before checking would throw or exhaust the machine.
TEST(OnnxHostile, TensorClaimingMoreElementsThanItsBytesIsRefused) {
  onnx::TensorProto raw = floatTensor("w", {1 << 20, 1 << 20});
  raw.set_raw_data(std::string(16, '\0'));
  expectMessage(tensorFromProto(raw, ".").status(), {"tensor 'w' holds 16 bytes", "1048576x1048576 float32 needs 4398046511104"});
  onnx::TensorProto typed = floatTensor("v", {1 << 20, 1 << 20});
  typed.add_float_data(1.0f);
  expectMessage(tensorFromProto(typed, ".").status(), {"tensor 'v' holds 1 values", "needs 1099511627776"});
  onnx::TensorProto int4 = floatTensor("q", {1 << 20, 1 << 20});
  int4.set_data_type(22);  // INT4 (Debian's onnx headers predate it)
  int4.set_raw_data(std::string(3, '\0'));
  expectMessage(tensorFromProto(int4, ".").status(), {"tensor 'q'", "holds 3 bytes"});
}

TEST(OnnxHostile, InitializerClaimingTooMuchFailsTheConversion) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "x", {4});
  onnx::TensorProto* w = g->add_initializer();
  *w = floatTensor("w", {int64_t{1} << 38});
  w->set_raw_data(std::string(16, '\0'));
  addNode(g, "Add", {"x", "w"}, {"y"});
  addOutput(g, "y");
  expectMessage(importOnnxModel(m, ".").status(), {"tensor 'w' holds 16 bytes"});
}

// Fuzzer find (tests/fuzz/regressions/onnx_convert/matmul_1d_mismatch.onnx): a 1-D
// MatMul operand whose size does not match erased a dim of the failed MatMul's empty shape.
TEST(OnnxHostile, OneDimensionalMatMulWithMismatchedSizesIsAnError) {
  onnx::ModelProto m = model();
  auto* g = m.mutable_graph();
  addInput(g, "a", {5});
  addInput(g, "b", {2, 4, 1});
  addNode(g, "MatMul", {"a", "b"}, {"c"});
  addOutput(g, "c");
  auto r = importOnnxModel(m, ".");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MatMul"), std::string::npos) << r.status().message();
}

struct ExternalDataTest : ::testing::Test {
  void SetUp() override {
    root = fs::path(gkrt::testing::testTempPath("gkrt_onnx_external"));
    fs::remove_all(root);
    fs::create_directories(root / "model");
    const float v[4] = {1, 2, 3, 4};
    std::ofstream(root / "model" / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(v), sizeof v);
    std::ofstream(root / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(v), sizeof v);
    fs::create_symlink(root / "secret.bin", root / "model" / "link.bin");
  }
  void TearDown() override { fs::remove_all(root); }
  StatusOr<HostTensor> load(const std::string& location, int64_t offset = 0, int64_t elements = 4) {
    onnx::TensorProto t = floatTensor("w", {elements});
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t.add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* off = t.add_external_data();
    off->set_key("offset");
    off->set_value(std::to_string(offset));
    return tensorFromProto(t, (root / "model").string());
  }
  fs::path root;
};

TEST_F(ExternalDataTest, FileBesideTheModelLoads) {
  auto t = load("w.bin");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->as<float>()[3], 4.0f);
}

TEST_F(ExternalDataTest, LocationsLeavingTheModelDirectoryAreRefused) {
  expectMessage(load("../secret.bin").status(), {"tensor 'w': external data location '../secret.bin'", "'..'"});
  expectMessage(load((root / "secret.bin").string()).status(), {"absolute path"});
  expectMessage(load("link.bin").status(), {"leads outside the directory"});
  expectMessage(load(std::string("w.bin\0../../secret.bin", 22)).status(), {"NUL byte"});
  expectMessage(load("").status(), {"is empty"});
}

TEST_F(ExternalDataTest, DataPastTheFileEndIsRefusedBeforeAllocating) {
  expectMessage(load("w.bin", 8).status(), {"external data file 'w.bin' is 16 bytes", "offset 8 + 16 bytes", "runs past its end"});
  expectMessage(load("w.bin", 0, int64_t{1} << 38).status(), {"runs past its end"});
  expectMessage(load("missing.bin").status(), {"external data file 'missing.bin' not found"});
}

}  // namespace
}  // namespace gkrt
