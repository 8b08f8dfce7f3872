// The loader against corrupted, truncated, hostile and inconsistent files: each must
// give an error that names the problem, never a crash.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "gkm_generated.h"
#include "runtime/attrs_codec.h"
#include "runtime/builder.h"
#include "runtime/model_io.h"

namespace gkrt {
namespace {

// A plain description of a model file, encoded exactly as written (no checks), so
// tests can write what the saver never would.
struct SpecTensor {
  std::string name;
  int dtype = 0;
  std::vector<int64_t> shape;
  int buffer = -1;
  std::vector<std::string> symbols;
};
struct SpecNode {
  std::string op;
  std::vector<int> inputs, outputs;
  Attrs attrs;
  int attr_type_override = -1;
  bool subgraph = false;
  // When set, writes the attribute table itself (for values the codec never writes).
  std::function<flatbuffers::Offset<void>(flatbuffers::FlatBufferBuilder&)> raw_attrs;
};
struct Spec {
  uint32_t version = kSchemaVersion;
  std::vector<SpecTensor> tensors;
  std::vector<SpecNode> nodes;
  std::vector<int> inputs, outputs;
  std::vector<std::vector<uint8_t>> buffers;
};

// y = x * c + x, with c a 2x2 constant.
Spec validSpec() {
  Spec s;
  s.tensors = {{"x", 0, {2, 2}}, {"c", 0, {2, 2}, 0}, {"t", 0, {2, 2}}, {"y", 0, {2, 2}}};
  s.buffers = {std::vector<uint8_t>(16, 0)};
  s.nodes = {{"Mul", {0, 1}, {2}}, {"Add", {2, 0}, {3}}};
  s.inputs = {0};
  s.outputs = {3};
  return s;
}

std::vector<uint8_t> encode(const Spec& s) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const SpecTensor& t : s.tensors) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> syms;
    for (const auto& x : t.symbols) syms.push_back(fbb.CreateString(x));
    tensors.push_back(fb::CreateTensor(fbb, fbb.CreateString(t.name), static_cast<fb::DType>(t.dtype),
                                       fbb.CreateVector(t.shape), syms.empty() ? 0 : fbb.CreateVector(syms), t.buffer));
  }
  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  for (const SpecNode& n : s.nodes) {
    auto attrs = n.raw_attrs ? n.raw_attrs(fbb) : encodeAttrs(fbb, n.attrs);
    const uint8_t type = n.attr_type_override >= 0 ? static_cast<uint8_t>(n.attr_type_override)
                                                   : static_cast<uint8_t>(n.attrs.kind());
    flatbuffers::Offset<fb::Graph> sub(0);
    if (n.subgraph) sub = fb::CreateGraph(fbb);
    nodes.push_back(fb::CreateNode(fbb, fbb.CreateString("n"), fbb.CreateString(n.op), static_cast<fb::Attrs>(type),
                                   attrs, fbb.CreateVector(n.inputs), fbb.CreateVector(n.outputs), sub));
  }
  auto graph = fb::CreateGraph(fbb, fbb.CreateVector(tensors), fbb.CreateVector(nodes), fbb.CreateVector(s.inputs),
                               fbb.CreateVector(s.outputs));
  std::vector<flatbuffers::Offset<fb::Buffer>> bufs;
  for (const auto& b : s.buffers) bufs.push_back(fb::CreateBuffer(fbb, fbb.CreateVector(b)));
  fb::FinishModelBuffer(fbb, fb::CreateModel(fbb, s.version, graph, fbb.CreateVector(bufs)));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

// Loads `bytes`, expects failure with every `needles` substring in the message.
void expectError(const std::vector<uint8_t>& bytes, std::vector<std::string> needles) {
  auto g = loadModelBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(g.ok()) << "expected an error containing '" << needles[0] << "'";
  for (const std::string& n : needles) EXPECT_NE(g.status().message().find(n), std::string::npos) << g.status().message();
}

void expectSpecError(const std::function<void(Spec&)>& tweak, std::vector<std::string> needles) {
  Spec s = validSpec();
  tweak(s);
  expectError(encode(s), std::move(needles));
}

TEST(Loader, ValidSpecLoads) {
  auto g = loadModelBuffer(encode(validSpec()).data(), encode(validSpec()).size());
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->tensors[3].shape, (Shape{2, 2}));
}

TEST(Loader, EmptyFile) { expectError({}, {"too short"}); }
TEST(Loader, FourBytes) { expectError({1, 2, 3, 4}, {"too short"}); }
TEST(Loader, RandomBytes) {
  std::mt19937 rng(7);
  std::vector<uint8_t> b(1024);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  expectError(b, {"not a gkrt model"});
}
TEST(Loader, WrongIdentifier) {
  auto b = encode(validSpec());
  std::memcpy(b.data() + 4, "ONNX", 4);
  expectError(b, {"file identifier is 'ONNX'", "expected 'GKM1'"});
}
TEST(Loader, TruncatedHalf) {
  auto b = encode(validSpec());
  b.resize(b.size() / 2);
  expectError(b, {"corrupted or truncated"});
}
// The last byte may be alignment padding (where depends on the compiler's argument
// evaluation order): cutting it gives either an error or the very same model.
TEST(Loader, TruncatedOneByte) {
  auto b = encode(validSpec());
  b.pop_back();
  auto g = loadModelBuffer(b.data(), b.size());
  if (!g.ok()) {
    EXPECT_NE(g.status().message().find("corrupted or truncated"), std::string::npos) << g.status().message();
    return;
  }
  auto full = encode(validSpec());
  auto original = loadModelBuffer(full.data(), full.size());
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(g->nodes.size(), original->nodes.size());
  EXPECT_EQ(g->tensors.size(), original->tensors.size());
}
TEST(Loader, TruncatedTail) {
  auto b = encode(validSpec());
  b.resize(b.size() - 16);
  expectError(b, {"corrupted or truncated"});
}
TEST(Loader, RootOffsetOutOfRange) {
  auto b = encode(validSpec());
  const uint32_t off = 0x7ffffff0;
  std::memcpy(b.data(), &off, 4);
  expectError(b, {"corrupted or truncated"});
}
TEST(Loader, NewerSchemaVersion) { expectSpecError([](Spec& s) { s.version = kSchemaVersion + 1; }, {"schema version 2", "upgrade gkrt"}); }
TEST(Loader, MissingSchemaVersion) { expectSpecError([](Spec& s) { s.version = 0; }, {"no schema version"}); }
TEST(Loader, UnknownOpWithHint) {
  expectSpecError([](Spec& s) { s.nodes[1].op = "Addd"; }, {"node 1", "unknown op 'Addd'", "did you mean 'Add'"});
}
TEST(Loader, InputIndexOutOfRange) {
  expectSpecError([](Spec& s) { s.nodes[0].inputs[1] = 99; }, {"input 1 refers to tensor 99", "4 tensors"});
}
TEST(Loader, OutputIndexOutOfRange) { expectSpecError([](Spec& s) { s.nodes[0].outputs[0] = 12; }, {"output 0 refers to tensor 12"}); }
TEST(Loader, NegativeIndex) { expectSpecError([](Spec& s) { s.nodes[0].inputs[0] = -5; }, {"tensor -5"}); }
TEST(Loader, RequiredInputAbsent) { expectSpecError([](Spec& s) { s.nodes[0].inputs[0] = -1; }, {"tensor -1"}); }
TEST(Loader, ConstantBufferTooSmall) {
  expectSpecError([](Spec& s) { s.buffers[0].resize(12); }, {"tensor 1 'c'", "buffer 0 is 12 bytes", "2x2 float32 needs 16"});
}
// A 4-bit constant holds one element per byte in a .gkm file: five int4 elements in the
// three bytes ONNX would pack them into is a truncated file.
void int4ConstantSpec(Spec& s, std::vector<uint8_t> bytes) {
  s.tensors = {{"x", 0, {5}}, {"c", static_cast<int>(DType::kInt4), {5}, 0}, {"cf", 0, {5}}, {"y", 0, {5}}};
  s.buffers = {std::move(bytes)};
  s.nodes = {{"Cast", {1}, {2}, CastAttrs{DType::kFloat32}}, {"Add", {2, 0}, {3}}};
}
TEST(Loader, Int4ConstantLoads) {
  Spec s = validSpec();
  int4ConstantSpec(s, {0xf8, 0xff, 0, 7, 3});
  const std::vector<uint8_t> bytes = encode(s);
  auto g = loadModelBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->tensors[1].dtype, DType::kInt4);
}
TEST(Loader, TruncatedInt4Constant) {
  expectSpecError([](Spec& s) { int4ConstantSpec(s, {0xf8, 0x70, 0x03}); },
                  {"tensor 1 'c'", "buffer 0 is 3 bytes", "5 int4 needs 5", "one element per byte"});
}
TEST(Loader, Int4ConstantOutOfRange) {
  expectSpecError([](Spec& s) { int4ConstantSpec(s, {0xf8, 0xff, 0, 0x12, 3}); },
                  {"tensor 1 'c'", "int4 element 3 is 18, outside -8..7"});
}

TEST(Loader, BufferIndexOutOfRange) { expectSpecError([](Spec& s) { s.tensors[1].buffer = 3; }, {"tensor 1 'c'", "buffer 3", "1 buffers"}); }
TEST(Loader, UnknownDType) { expectSpecError([](Spec& s) { s.tensors[0].dtype = 42; }, {"tensor 0 'x'", "dtype 42 is unknown"}); }
TEST(Loader, AttrKindMismatch) {
  expectSpecError([](Spec& s) { s.nodes[1].attrs = AxesAttrs{{0}, false}; }, {"node 1", "Axes", "Add takes None"});
}
TEST(Loader, AttrUnionTypeOutOfRange) {
  expectSpecError([](Spec& s) { s.nodes[1].attr_type_override = 99; }, {"node 1", "attribute kind 99 is unknown"});
}
TEST(Loader, EnumValueOutOfRange) {
  expectSpecError([](Spec& s) {
    s.tensors.push_back({"z", 2, {2, 2}});
    SpecNode cast{"Cast", {3}, {4}, CastAttrs{}};
    cast.raw_attrs = [](flatbuffers::FlatBufferBuilder& fbb) {
      return fb::CreateCastAttrs(fbb, static_cast<fb::DType>(99)).Union();
    };
    s.nodes.push_back(cast);
    s.outputs = {4};
  }, {"node 2", "attribute 'to' has value 99", "valid are 0..22"});
}
TEST(Loader, Cycle) {
  expectSpecError([](Spec& s) { s.nodes[0].inputs[0] = 3; }, {"cycle"});
}
TEST(Loader, OutputNeverProduced) {
  expectSpecError([](Spec& s) {
    s.tensors.push_back({"orphan", 0, {2, 2}});
    s.outputs = {4};
  }, {"graph output tensor 4 'orphan' is never produced"});
}
TEST(Loader, TensorProducedTwice) {
  expectSpecError([](Spec& s) { s.nodes[1].outputs[0] = 2; }, {"tensor 2 't' is produced by both"});
}
TEST(Loader, WrongArity) { expectSpecError([](Spec& s) { s.nodes[1].inputs = {2}; }, {"node 1", "has 1 inputs, Add takes 2"}); }
TEST(Loader, BadDim) { expectSpecError([](Spec& s) { s.tensors[0].shape = {2, -7}; }, {"tensor 0 'x'", "dim -7"}); }
TEST(Loader, ElementCountOverflow) {
  expectSpecError([](Spec& s) { s.tensors[1].shape = {1 << 30, 1 << 30, 1 << 30}; }, {"tensor 1 'c'", "2^40"});
}
TEST(Loader, DimSymbolCountMismatch) {
  expectSpecError([](Spec& s) { s.tensors[0].symbols = {"batch"}; }, {"tensor 0 'x'", "1 dim symbols for rank 2"});
}
TEST(Loader, InputIsAlsoConstant) { expectSpecError([](Spec& s) { s.inputs = {1}; }, {"graph input and also a constant"}); }
TEST(Loader, ImpossibleBroadcast) {
  expectSpecError([](Spec& s) { s.tensors[0].shape = {3, 3}; }, {"node 0", "cannot be broadcast"});
}
TEST(Loader, DeclaredShapeDisagrees) {
  expectSpecError([](Spec& s) { s.tensors[3].shape = {2, 5}; }, {"tensor 3 'y' is declared 2x5", "produces 2x2"});
}
TEST(Loader, NoOutputs) { expectSpecError([](Spec& s) { s.outputs.clear(); }, {"no outputs"}); }
TEST(Loader, FusedWithoutSubgraph) {
  expectSpecError([](Spec& s) { s.nodes[1].op = "Fused"; }, {"fused node has no subgraph"});
}
TEST(Loader, SubgraphOnBasicOp) {
  expectSpecError([](Spec& s) { s.nodes[1].subgraph = true; }, {"only Fused nodes carry a subgraph"});
}
TEST(Loader, ReadsWrittenNodeBeforeProducer) {
  // A node reading a tensor nobody writes (not input, not constant).
  expectSpecError([](Spec& s) {
    s.tensors.push_back({"ghost", 0, {2, 2}});
    s.nodes[1].inputs[1] = 4;
  }, {"reads tensor 4 'ghost'", "no node produces"});
}
TEST(Loader, MissingFile) {
  auto g = loadModelFile("/nonexistent/model.gkm");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("cannot open model '/nonexistent/model.gkm'"), std::string::npos);
}

// Random byte flips of a valid file: every result is either a model or an error.
TEST(Loader, ByteFlipFuzz) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 4});
  Value c = b.constant({4}, {1, 2, 3, 4});
  b.output(b.op1("Softmax", {b.add(b.mul(x, c), 1.0f)}, AxisAttrs{-1, false}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto bytes = serializeModel(*g);
  ASSERT_TRUE(bytes.ok());
  std::mt19937 rng(1234);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> m = *bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) m[rng() % m.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (rng() % 5 == 0) m.resize(rng() % m.size());
    auto r = loadModelBuffer(m.data(), m.size());
    if (!r.ok()) {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(errors, 100);
}

}  // namespace
}  // namespace gkrt
