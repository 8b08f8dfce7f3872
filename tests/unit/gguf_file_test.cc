// The GGUF reader (tools/gguf/gguf_file.h) on files written here byte by byte: every
// metadata type, string and nested arrays, tensors of three types at aligned offsets;
// then every truncation of the file and each kind of inconsistency is an error naming
// what is wrong (the real SmolLM2 file is checked against the gguf package by
// tests/models/check_gguf_info.py).
#include <gtest/gtest.h>

#include <cstring>

#include "tools/gguf/gguf_file.h"
#include "runtime/base/huge_page_arena.h"

namespace gkrt::gguf {
namespace {

class Writer {
 public:
  template <class T> Writer& raw(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Writer& str(const std::string& s) {
    raw<uint64_t>(s.size());
    bytes += s;
    return *this;
  }
  Writer& key(const std::string& k, ValueType t) {
    str(k);
    return raw<uint32_t>(uint32_t(t));
  }
  void pad(size_t align) {
    while (bytes.size() % align) bytes += '\0';
  }
  std::string bytes;
};

// Version 3, alignment 64: 9 metadata entries, tensors F32 [4, 2], Q8_0 [64, 1] and
// Q4_1 [32, 3].
std::string sampleFile(uint32_t version = 3, uint32_t alignment = 64) {
  Writer w;
  w.bytes = "GGUF";
  w.raw<uint32_t>(version).raw<uint64_t>(3).raw<uint64_t>(9);
  w.key("general.architecture", ValueType::kString).str("llama");
  w.key("general.alignment", ValueType::kUInt32).raw<uint32_t>(alignment);
  w.key("llama.block_count", ValueType::kUInt32).raw<uint32_t>(30);
  w.key("llama.rope.freq_base", ValueType::kFloat32).raw<float>(100000.0f);
  w.key("big", ValueType::kUInt64).raw<uint64_t>(uint64_t(1) << 63);
  w.key("neg", ValueType::kInt8).raw<int8_t>(-5);
  w.key("flag", ValueType::kBool).raw<uint8_t>(1);
  w.key("tokenizer.ggml.tokens", ValueType::kArray).raw<uint32_t>(uint32_t(ValueType::kString)).raw<uint64_t>(3);
  w.str("a").str("\xc4\xa0the").str("");
  w.key("nested", ValueType::kArray).raw<uint32_t>(uint32_t(ValueType::kArray)).raw<uint64_t>(2);
  w.raw<uint32_t>(uint32_t(ValueType::kInt32)).raw<uint64_t>(2).raw<int32_t>(7).raw<int32_t>(-8);
  w.raw<uint32_t>(uint32_t(ValueType::kFloat64)).raw<uint64_t>(1).raw<double>(0.25);
  const uint64_t sizes[3] = {4 * 2 * 4, 2 * 34, 3 * 20};
  const char* names[3] = {"a.weight", "b.weight", "c.weight"};
  const std::vector<std::vector<uint64_t>> dims = {{4, 2}, {64, 1}, {32, 3}};
  const uint32_t types[3] = {0, 8, 3};
  uint64_t offset = 0;
  for (int t = 0; t < 3; ++t) {
    w.str(names[t]).raw<uint32_t>(uint32_t(dims[t].size()));
    for (uint64_t d : dims[t]) w.raw<uint64_t>(d);
    w.raw<uint32_t>(types[t]).raw<uint64_t>(offset);
    offset += (sizes[t] + alignment - 1) / alignment * alignment;
  }
  w.pad(alignment);
  for (int t = 0; t < 3; ++t) {
    for (uint64_t i = 0; i < sizes[t]; ++i) w.bytes += char(t + 1);
    if (t < 2) w.pad(alignment);
  }
  return w.bytes;
}

TEST(GgufFile, ReadsEveryValueTypeAndTheTensorsInPlace) {
  for (uint32_t version : {2u, 3u}) {
    auto f = GgufFile::fromBytes(sampleFile(version));
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->architecture(), "llama");
    EXPECT_EQ(*f->getInt("llama.block_count"), 30);
    EXPECT_EQ(*f->getFloat("llama.rope.freq_base"), 100000.0);
    EXPECT_EQ(f->find("big")->u, uint64_t(1) << 63);
    EXPECT_FALSE(f->getInt("big").ok());  // does not fit int64: named, not wrapped
    EXPECT_EQ(*f->getInt("neg"), -5);
    EXPECT_EQ(*f->getInt("flag"), 1);
    const Value* tokens = f->find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->strings, (std::vector<std::string>{"a", "\xc4\xa0the", ""}));
    const Value* nested = f->find("nested");
    ASSERT_EQ(nested->items.size(), 2u);
    EXPECT_EQ(nested->items[0].ints[1], -8);
    EXPECT_EQ(nested->items[1].floats[0], 0.25);
    EXPECT_NE(f->getString("llama.block_count").status().message().find("'llama.block_count' is uint32, not a string"),
              std::string::npos);
    EXPECT_NE(f->getInt("missing.key").status().message().find("'missing.key' is missing"), std::string::npos);
    ASSERT_EQ(f->tensors().size(), 3u);
    const Tensor* b = f->findTensor("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(tensorTypeName(b->type), "Q8_0");
    EXPECT_EQ(b->bytes, 68u);
    EXPECT_EQ(b->elements(), 64);
    EXPECT_EQ(b->data[0], 2);
    EXPECT_EQ(f->findTensor("c.weight")->bytes, 60u);
    EXPECT_EQ(f->findTensor("c.weight")->data[59], 3);
    EXPECT_EQ(f->findTensor("a.weight")->data - b->data, -64);
  }
}

TEST(HugePageArena, AlignedPiecesThatDoNotOverlapAcrossChunks) {
  HugePageArena arena(size_t(4) << 20);  // chunks of 4 MiB
  std::vector<std::pair<uint8_t*, size_t>> pieces;
  for (size_t bytes : {size_t(1), size_t(100), size_t(3) << 20, size_t(2) << 20, size_t(9) << 20, size_t(64)}) {
    uint8_t* p = arena.allocate(bytes);  // the 2 MiB piece no longer fits the first chunk; 9 MiB gets a chunk of its own
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, int(pieces.size() + 1), bytes);
    pieces.push_back({p, bytes});
  }
  for (size_t i = 0; i < pieces.size(); ++i) {  // each piece kept its own bytes
    EXPECT_EQ(pieces[i].first[0], uint8_t(i + 1));
    EXPECT_EQ(pieces[i].first[pieces[i].second - 1], uint8_t(i + 1));
  }
}

TEST(GgufFile, EveryTruncationIsANamedError) {
  const std::string full = sampleFile();
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = GgufFile::fromBytes(full.substr(0, n), "cut.gguf");
    ASSERT_FALSE(f.ok()) << "accepted the first " << n << " of " << full.size() << " bytes";
    const std::string m = f.status().message();
    EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("not a GGUF file") != std::string::npos) << n << ": " << m;
  }
}

TEST(GgufFile, InconsistentFilesAreNamedErrors) {
  auto expectError = [](std::string bytes, const std::string& want) {
    auto f = GgufFile::fromBytes(std::move(bytes), "bad.gguf");
    ASSERT_FALSE(f.ok()) << want;
    EXPECT_NE(f.status().message().find(want), std::string::npos) << f.status().message();
  };
  expectError(sampleFile(1), "GGUF version 1; gkrt reads versions 2 and 3");
  expectError(sampleFile(3, 48), "general.alignment must be a uint32 power of two");
  std::string s = sampleFile();
  expectError("GGML" + s.substr(4), "is not a GGUF file");
  std::string huge = s;
  const uint64_t count = uint64_t(1) << 60;
  std::memcpy(&huge[16], &count, 8);  // the metadata count
  expectError(huge, "metadata entries");
  std::string q8 = s;  // b.weight's type Q8_0 -> 99
  const size_t at = q8.find("b.weight") + 8 + 4 + 16;
  const uint32_t bad_type = 99;
  std::memcpy(&q8[at], &bad_type, 4);
  expectError(q8, "tensor 'b.weight' has ggml type 99, which gkrt cannot read");
  std::string rows = s;  // c.weight's first dim 32 -> 33: not whole Q4_1 blocks
  const size_t dim = rows.find("c.weight") + 8 + 4;
  const uint64_t odd = 33;
  std::memcpy(&rows[dim], &odd, 8);
  expectError(rows, "rows of 33 values are not whole Q4_1 blocks of 32");
  std::string off = s;  // c.weight's offset moved off the alignment
  const size_t o = off.find("c.weight") + 8 + 4 + 16 + 4;
  uint64_t v = 0;
  std::memcpy(&v, &off[o], 8);
  v += 4;
  std::memcpy(&off[o], &v, 8);
  expectError(off, "is not a multiple of the alignment 64");
  v += 60 + 64 * 10;
  std::memcpy(&off[o], &v, 8);
  expectError(off, "tensor 'c.weight' (Q4_1, 60 bytes at data offset");
}

}  // namespace
}  // namespace gkrt::gguf
