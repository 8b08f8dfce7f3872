// The cpu FlashAttention kernel (backends/cpu/flash_attention_kernel.cc) against the
// reference kernel on one FlashAttention node: every head layout, K stored transposed,
// query and key lengths that leave partial query blocks, partial GEMM panels and
// several key blocks (the online softmax's rescaling), head dims not a multiple of 16,
// broadcast masks with -inf, and rows whose first key block is masked out entirely.
#include <cmath>
#include <limits>

#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;
using testing::runGraph;

struct Case {
  AttentionLayout layout = AttentionLayout::kBNSD;
  int64_t b = 1, n = 2, sq = 16, sk = 16, d = 16, dv = 16;
  bool key_transposed = false;
  Shape mask;  // empty: none
};

Shape operand(const Case& c, int64_t s, int64_t d, bool transposed = false) {
  switch (c.layout) {
    case AttentionLayout::kBNSD: return transposed ? Shape{c.b, c.n, d, s} : Shape{c.b, c.n, s, d};
    case AttentionLayout::kBSND: return {c.b, s, c.n, d};
    case AttentionLayout::kBSH: return {c.b, s, c.n * d};
  }
  return {};
}

// Mask values: 0, -3 or -inf; with -inf over the first 256 keys of query row 1 (so
// its first key block contributes nothing and the second one starts its softmax).
HostTensor maskTensor(const Shape& s) {
  HostTensor t(DType::kFloat32, s);
  float* m = t.as<float>();
  const int64_t keys = s.back(), rows = s[s.size() - 2];
  for (int64_t i = 0; i < numElements(s); ++i) {
    const int64_t j = i % keys, row = (i / keys) % rows;
    m[i] = (i * 7919) % 11 == 0 ? -std::numeric_limits<float>::infinity() : (i % 5 == 0 ? -3.0f : 0.0f);
    if (row == 1 && rows > 1 && keys > 256 && j < 256) m[i] = -std::numeric_limits<float>::infinity();
    if (j == keys - 1) m[i] = 0.0f;  // every row keeps one key
  }
  return t;
}

void expectCpuMatchesReference(const Case& c) {
  GraphBuilder b;
  AttentionAttrs a;
  a.layout = c.layout;
  a.heads = c.layout == AttentionLayout::kBSH ? c.n : 0;
  a.key_transposed = c.key_transposed;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  std::vector<Value> in = {b.input("q", DType::kFloat32, operand(c, c.sq, c.d)),
                           b.input("k", DType::kFloat32, operand(c, c.sk, c.d, c.key_transposed)),
                           b.input("v", DType::kFloat32, operand(c, c.sk, c.dv))};
  if (!c.mask.empty()) in.push_back(b.input("mask", DType::kFloat32, c.mask));
  b.output(b.op("FlashAttention", in, a)[0], "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<HostTensor> feeds;
  for (size_t k = 0; k < 3; ++k) feeds.push_back(randomTensor(g->tensors[g->inputs[k]].shape, 11 + uint32_t(k)));
  if (!c.mask.empty()) feeds.push_back(maskTensor(c.mask));
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(*g, feeds, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (int threads : {1, 2}) {
    auto got = runGraph(*g, feeds, "cpu", off, threads);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-4, 2e-5), "") << threads << " thread(s)";
  }
}

TEST(CpuFlashAttention, BnsdWithSeveralKeyBlocksPartialQueryBlocksAndAMaskedFirstBlock) {
  Case c;
  c.b = 2, c.n = 3, c.sq = 70, c.sk = 300, c.d = 20, c.dv = 32;  // V rows read in place
  c.mask = {2, 1, 70, 300};
  expectCpuMatchesReference(c);
}

TEST(CpuFlashAttention, BshHeadsWithoutMask) {
  Case c;
  c.layout = AttentionLayout::kBSH;
  c.n = 4, c.sq = 128, c.sk = 128, c.d = 32, c.dv = 32;
  expectCpuMatchesReference(c);
}

TEST(CpuFlashAttention, BsndWithAKeyRowMask) {
  Case c;
  c.layout = AttentionLayout::kBSND;
  c.n = 2, c.sq = 9, c.sk = 513, c.d = 64, c.dv = 40;
  c.mask = {1, 1, 1, 513};
  expectCpuMatchesReference(c);
}

TEST(CpuFlashAttention, KeyStoredTransposed) {
  Case c;
  c.key_transposed = true;
  c.n = 2, c.sq = 33, c.sk = 17, c.d = 8, c.dv = 5;
  c.mask = {1, 2, 33, 17};
  expectCpuMatchesReference(c);
}

}  // namespace
}  // namespace gkrt
