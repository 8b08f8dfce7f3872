// Resource limits checked before allocation (runtime/resource_limits.h): the session's
// memory cap, the loader's graph size and depth caps, a constant past the file's end,
// and a .npy header claiming more than the file holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "runtime/builder.h"
#include "runtime/model_io.h"
#include "runtime/resource_limits.h"
#include "runtime/session.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

void expectMessage(const Status& s, std::initializer_list<const char*> needles) {
  ASSERT_FALSE(s.ok());
  for (const char* n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << "no '" << n << "' in: " << s.message();
}

TEST(ResourceLimits, ParsesByteSizes) {
  EXPECT_EQ(*parseByteSize("1234"), 1234u);
  EXPECT_EQ(*parseByteSize("512K"), size_t{512} << 10);
  EXPECT_EQ(*parseByteSize("256M"), size_t{256} << 20);
  EXPECT_EQ(*parseByteSize("2g"), size_t{2} << 30);
  EXPECT_EQ(*parseByteSize("3GiB"), size_t{3} << 30);
  for (const char* bad : {"", "M", "12X", "-5", "1.5G", "99999999999999999999", "20000000000T"}) {
    auto v = parseByteSize(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("e.g. 512M"), std::string::npos) << v.status().message();
  }
  expectMessage(parseByteSize("0").status(), {"is zero"});
}

TEST(ResourceLimits, DefaultCapIsThreeQuartersOfPhysicalMemory) {
  const size_t phys = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(::sysconf(_SC_PAGE_SIZE));
  EXPECT_EQ(defaultMaxMemoryBytes(), phys / 4 * 3);
  EXPECT_EQ(SessionOptions{}.max_memory_bytes, defaultMaxMemoryBytes());
}

ir::Graph addOne(const Shape& shape) {
  GraphBuilder b;
  b.output(b.add(b.input("x", DType::kFloat32, shape), 1.0f), "y");
  return std::move(b.finish()).value();
}

TEST(ResourceLimits, SessionRefusesAPlanAboveTheCap) {
  const ir::Graph g = addOne({1024, 1024});  // x and y: 4 MiB each
  for (const char* backend : {"reference", "cpu"}) {
    SessionOptions o;
    o.backend = backend;
    o.max_memory_bytes = 1 << 20;
    auto s = Session::create(g, o);
    ASSERT_FALSE(s.ok()) << backend;
    expectMessage(s.status(), {"'x'", "1024x1024", "4194304 bytes", "more than the memory cap of 1.0 MiB",
                               "SessionOptions::max_memory_bytes", "--max-memory"});
    o.max_memory_bytes = 64 << 20;
    EXPECT_TRUE(Session::create(g, o).ok()) << backend;
  }
}

TEST(ResourceLimits, ArenaAboveTheCapIsRefusedThoughEachTensorFits) {
  const ir::Graph g = addOne({1024, 1024});  // 4 MiB tensors, an 8 MiB arena (x and y live together)
  SessionOptions o;
  o.backend = "reference";
  o.max_memory_bytes = 6 << 20;
  auto s = Session::create(g, o);
  ASSERT_FALSE(s.ok());
  expectMessage(s.status(), {"tensor arena and workspace of this plan", "more than the memory cap of 6.0 MiB"});
}

TEST(ResourceLimits, DynamicInputResizedBeyondTheCapFailsBeforeAllocating) {
  const ir::Graph g = addOne({kUnknownDim, 4});
  SessionOptions o;
  o.backend = "cpu";
  o.max_memory_bytes = 64 << 20;
  auto s = Session::create(g, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  // 2^36 x 4 float32 = 1 TiB: allocating it would fail or exhaust the machine.
  Status r = (*s)->resizeInput("x", {int64_t{1} << 36, 4});
  if (r.ok()) r = (*s)->run();
  expectMessage(r, {"'x'", "more than the memory cap of 64.0 MiB"});
  ASSERT_TRUE((*s)->resizeInput("x", {8, 4}).ok());  // the session still works at a size that fits
  EXPECT_TRUE((*s)->setInput("x", HostTensor(DType::kFloat32, {8, 4})).ok());
  EXPECT_TRUE((*s)->run().ok());
}

TEST(ResourceLimits, ZeroCapIsAnError) {
  SessionOptions o;
  o.max_memory_bytes = 0;
  expectMessage(Session::create(addOne({2}), o).status(), {"max_memory_bytes is 0"});
}

ir::Graph chain(int length) {
  GraphBuilder b;
  Value v = b.input("x", DType::kFloat32, {4});
  for (int i = 0; i < length; ++i) v = b.op1("Neg", {v});
  b.output(v, "y");
  return std::move(b.finish()).value();
}

TEST(ResourceLimits, LoaderRefusesGraphsDeeperOrLargerThanTheLimits) {
  auto bytes = serializeModel(chain(50));
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(loadModelBuffer(bytes->data(), bytes->size()).ok());
  ModelLimits deep;
  deep.max_depth = 10;
  expectMessage(loadModelBuffer(bytes->data(), bytes->size(), deep).status(),
                {"chain of 11 nodes", "limit of 10", "ModelLimits::max_depth"});
  ModelLimits few_nodes;
  few_nodes.max_nodes = 20;
  expectMessage(loadModelBuffer(bytes->data(), bytes->size(), few_nodes).status(),
                {"50 nodes", "limit of 20", "ModelLimits::max_nodes"});
  ModelLimits few_tensors;
  few_tensors.max_tensors = 30;
  expectMessage(loadModelBuffer(bytes->data(), bytes->size(), few_tensors).status(),
                {"51 tensors", "limit of 30", "ModelLimits::max_tensors"});
}

// A constant whose bytes run past the end of the file: truncated, or its length field
// grown. The verifier refuses both before anything is copied.
TEST(ResourceLimits, ConstantBufferPastTheFileEndIsRefused) {
  GraphBuilder b;
  std::vector<float> w(4096, 0.5f);
  b.output(b.add(b.input("x", DType::kFloat32, {4096}), b.constant("w", DType::kFloat32, {4096}, w.data())), "y");
  auto bytes = serializeModel(*b.finish());
  ASSERT_TRUE(bytes.ok());
  std::vector<uint8_t> cut(bytes->begin(), bytes->begin() + static_cast<long>(bytes->size() / 2));
  expectMessage(loadModelBuffer(cut.data(), cut.size()).status(), {"corrupted or truncated"});
  // The constant's length prefix: the uint32 16384 just before 4096 floats of 0.5.
  std::vector<uint8_t> grown = *bytes;
  const uint32_t len = 16384;
  bool patched = false;
  for (size_t i = 0; i + 8 <= grown.size(); ++i) {
    float first;
    std::memcpy(&first, &grown[i + 4], 4);
    if (std::memcmp(&grown[i], &len, 4) == 0 && first == 0.5f) {
      const uint32_t huge = 0x7ffffff0u;
      std::memcpy(&grown[i], &huge, 4);
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  expectMessage(loadModelBuffer(grown.data(), grown.size()).status(), {"corrupted or truncated"});
}

std::string npyWithHeader(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

TEST(ResourceLimits, NpyClaimingMoreThanItHoldsIsRefusedBeforeAllocating) {
  // 2^40 float32 elements (4 TiB) in 16 bytes.
  auto t = readNpyBytes(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }",
                                      std::string(16, '\0')), "huge.npy");
  expectMessage(t.status(), {"huge.npy", "data is 16 bytes, shape needs 4398046511104"});
  auto ok = readNpyBytes(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                                       std::string(16, '\0')), "ok.npy");
  EXPECT_TRUE(ok.ok()) << ok.status().message();
  auto overflow = readNpyBytes(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
                               "overflow.npy");
  EXPECT_FALSE(overflow.ok());
}

TEST(ResourceLimits, NpyHeaderLongerThanNumpyAllowsIsRefused) {
  std::string bytes("\x93NUMPY\x02\x00", 8);
  const uint32_t len = 1u << 24;
  bytes.append(reinterpret_cast<const char*>(&len), 4);
  bytes += "{'descr': '" + std::string(len, 'f');
  expectMessage(readNpyBytes(bytes, "long.npy").status(), {"header is 16777216 bytes, more than 10000"});
}

}  // namespace
}  // namespace gkrt
