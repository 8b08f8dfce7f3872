// The decoder-LLM kernels of the GPU backends (backends/codegen/llm_kernels.h) against the
// reference kernels, on opencl (PoCL in CI) and, where a GPU is present, cuda; each case
// also checks the op ran on the device backend, not on its cpu fallback. RmsNorm with
// and without its rstd output; Rotary with half- and full-size angles in BNSD and BSND;
// CachedAttention with grouped-query heads at SmolLM2's shape (9 on 3, head dim 64) and
// head dim 40, one and five new positions, a past of 0 and one that spans several key
// chunks, and a past that would overflow the cache (NaN rows); BlockQuantMatMul of int4,
// uint4 with offsets and bias, int8, float and int8 activations, one and five rows, K with
// a partial last block and N with a partial column tile; an int64 ReduceSum (a mask's
// length) through the cluster renderer.
#include <cmath>
#include <cstring>
#include <random>

#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::backendsRunning;
using testing::compareTensors;
using testing::randomTensor;
using testing::runGraph;

std::vector<std::string> deviceBackends() {
  std::vector<std::string> out;
  for (const std::string& b : availableBackends()) {
    if (b == "opencl" || b == "cuda") out.push_back(b);
  }
  return out;
}

// Runs `g` on the reference and on every device backend (fusion off, so the op is its own
// kernel) and compares output `out` (every output when -1).
void expectDevicesMatchReference(const ir::Graph& g, const std::vector<HostTensor>& feeds, const std::string& op,
                                 double rtol = 1e-4, double atol = 2e-5) {
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(g, feeds, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const std::string& backend : deviceBackends()) {
    auto on = backendsRunning(g, op, backend, "--opt_level=0");
    ASSERT_TRUE(on.ok()) << on.status().message();
    ASSERT_FALSE(on->empty());
    for (const std::string& b : *on) EXPECT_EQ(b, backend) << op << " fell back";
    auto got = runGraph(g, feeds, backend, off);
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
    for (size_t k = 0; k < want->size(); ++k) {
      EXPECT_EQ(compareTensors((*got)[k], (*want)[k], rtol, atol), "") << backend << ", output " << k;
    }
  }
}

TEST(LlmGpuKernels, RmsNormWithAndWithoutRstd) {
  for (int outputs : {1, 2}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {3, 5, 576});
    Value gamma = b.input("gamma", DType::kFloat32, {576});
    auto y = b.op("RmsNorm", {x, gamma}, NormAttrs{-1, 1e-5f}, outputs);
    for (int k = 0; k < outputs; ++k) b.output(y[k], "y" + std::to_string(k));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    expectDevicesMatchReference(*g, {randomTensor({3, 5, 576}, 1), randomTensor({576}, 2)}, "RmsNorm");
  }
}

TEST(LlmGpuKernels, RotaryHalfAndFullAnglesBnsdAndBsnd) {
  struct Case { Shape x, angles; };
  for (const Case& c : {Case{{1, 9, 5, 64}, {1, 1, 5, 32}}, Case{{1, 9, 5, 64}, {5, 64}}, Case{{1, 5, 9, 64}, {1, 5, 1, 32}},
                        Case{{2, 3, 4, 8}, {2, 1, 4, 8}}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, c.x);
    b.output(b.op1("Rotary", {x, b.input("cos", DType::kFloat32, c.angles), b.input("sin", DType::kFloat32, c.angles)}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    expectDevicesMatchReference(*g, {randomTensor(c.x, 3), randomTensor(c.angles, 4), randomTensor(c.angles, 5)}, "Rotary");
  }
}

struct AttentionCase { int64_t hq, hkv, s, d, past, capacity; };

void expectCachedAttention(const AttentionCase& c) {
  GraphBuilder b;
  AttentionAttrs a;
  a.scale = 0;  // 1 / sqrt(d)
  const Shape q{1, c.hq, c.s, c.d}, kv{1, c.hkv, c.s, c.d}, cache{1, c.hkv, c.capacity, c.d};
  std::vector<Value> in = {b.input("q", DType::kFloat32, q), b.input("k", DType::kFloat32, kv), b.input("v", DType::kFloat32, kv),
                           b.input("ck", DType::kFloat32, cache), b.input("cv", DType::kFloat32, cache),
                           b.input("past", DType::kInt64, {1})};
  b.output(b.op("CachedAttention", in, a)[0], "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor past(DType::kInt64, {1});
  std::memcpy(past.data(), &c.past, sizeof c.past);
  std::vector<HostTensor> feeds = {randomTensor(q, 6), randomTensor(kv, 7), randomTensor(kv, 8), randomTensor(cache, 9),
                                   randomTensor(cache, 10), past};
  if (c.past + c.s <= c.capacity) {
    expectDevicesMatchReference(*g, feeds, "CachedAttention");
    return;
  }
  // A past the cache cannot take: the device kernel writes nothing and gives NaN rows
  // (the reference kernel's error; the generator never gets here: it checks first).
  FusionOptions off;
  off.opt_level = 0;
  for (const std::string& backend : deviceBackends()) {
    auto got = runGraph(*g, feeds, backend, off);
    ASSERT_TRUE(got.ok()) << got.status().message();
    for (float v : (*got)[0].toFloats()) ASSERT_TRUE(std::isnan(v)) << backend;
  }
}

TEST(LlmGpuKernels, CachedAttentionDecodeAndPrefillWithGroupedHeads) {
  for (const AttentionCase& c : {AttentionCase{9, 3, 1, 64, 0, 64}, AttentionCase{9, 3, 1, 64, 40, 64},
                                 AttentionCase{9, 3, 5, 64, 0, 64}, AttentionCase{9, 3, 5, 64, 37, 64},
                                 AttentionCase{4, 2, 7, 40, 70, 80}, AttentionCase{2, 2, 3, 256, 33, 48}}) {
    SCOPED_TRACE("hq " + std::to_string(c.hq) + " s " + std::to_string(c.s) + " d " + std::to_string(c.d) + " past " +
                 std::to_string(c.past));
    expectCachedAttention(c);
  }
}

TEST(LlmGpuKernels, CachedAttentionPastBeyondTheCacheGivesNaN) { expectCachedAttention({9, 3, 5, 64, 60, 64}); }

struct QuantCase { DType to, precision; int64_t m, k, n; bool offsets, bias; };

void expectBlockQuant(const QuantCase& c) {
  constexpr int64_t B = 32;
  const int64_t blocks = (c.k + B - 1) / B, blob = c.to == DType::kInt8 ? B : B / 2;
  std::mt19937 rng(12);
  HostTensor w(c.to == DType::kInt8 ? DType::kInt8 : DType::kUInt8, {c.n, blocks, blob});
  for (int64_t i = 0; i < c.n * blocks * blob; ++i) static_cast<uint8_t*>(w.data())[i] = static_cast<uint8_t>(rng());
  HostTensor scales = randomTensor({c.n, blocks}, 13);
  float* sv = static_cast<float*>(scales.data());
  for (int64_t i = 0; i < c.n * blocks; ++i) sv[i] = 0.01f + std::fabs(sv[i]) * 0.05f;
  GraphBuilder b;
  QuantAttrs a;
  a.block_size = B, a.to = c.to, a.precision = c.precision;
  std::vector<Value> in = {b.input("x", DType::kFloat32, {1, c.m, c.k}), b.input("w", w.dtype(), w.shape()),
                           b.input("scales", DType::kFloat32, {c.n, blocks})};
  std::vector<HostTensor> feeds = {randomTensor({1, c.m, c.k}, 14), w, scales};
  in.push_back(c.offsets ? b.input("offsets", DType::kFloat32, {c.n, blocks}) : Value{});
  if (c.offsets) feeds.push_back(randomTensor({c.n, blocks}, 15));
  if (c.bias) {
    in.push_back(b.input("bias", DType::kFloat32, {c.n}));
    feeds.push_back(randomTensor({c.n}, 16));
  }
  b.output(b.op1("BlockQuantMatMul", in, a), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  expectDevicesMatchReference(*g, feeds, "BlockQuantMatMul", 1e-4, 1e-4);
}

TEST(LlmGpuKernels, BlockQuantMatMulEveryValueLayoutAndPrecision) {
  for (const QuantCase& c : {QuantCase{DType::kInt4, DType::kInt8, 1, 576, 37, false, false},
                             QuantCase{DType::kInt4, DType::kFloat32, 5, 576, 64, false, true},
                             QuantCase{DType::kUInt4, DType::kFloat32, 1, 80, 37, true, true},
                             QuantCase{DType::kUInt4, DType::kInt8, 5, 80, 9, true, false},
                             QuantCase{DType::kInt8, DType::kFloat32, 1, 1536, 16, false, true},
                             QuantCase{DType::kInt8, DType::kInt8, 3, 100, 11, false, false}}) {
    SCOPED_TRACE(std::string(dtypeName(c.to)) + " " + dtypeName(c.precision) + " m " + std::to_string(c.m) + " k " +
                 std::to_string(c.k) + " n " + std::to_string(c.n));
    expectBlockQuant(c);
  }
}

TEST(LlmGpuKernels, Int64ReduceSumOfAMask) {
  GraphBuilder b;
  Value m = b.input("mask", DType::kInt64, {1, 300});
  b.output(b.op1("ReduceSum", {m}, AxesAttrs{{1}, false}), "len");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor mask(DType::kInt64, {1, 300});
  for (int64_t i = 0; i < 300; ++i) static_cast<int64_t*>(mask.data())[i] = i < 217 ? 1 : 0;
  expectDevicesMatchReference(*g, {mask}, "ReduceSum");
}

}  // namespace
}  // namespace gkrt
