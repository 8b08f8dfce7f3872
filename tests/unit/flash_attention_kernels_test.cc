// Every backend's FlashAttention kernel against the reference kernel on one FlashAttention
// node: the cpu kernel (backends/cpu/nn/flash_attention_kernel.cc) at 1 and 2 threads and
// the rendered one (backends/codegen/pattern_kernels.h) on opencl and, where a GPU is
// present, cuda. Every head layout, K stored transposed, query and key lengths that leave
// partial query blocks/groups, partial GEMM panels and several key blocks or tiles (the
// online softmax's rescaling), head dims not a multiple of 16 and up to 256, broadcast
// masks with -inf, rows whose first key block is masked out entirely, and the rows the
// unfused softmax makes NaN (every key masked, a NaN score).
#include <algorithm>
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
  bool nan_rows = false;  // mask row 2 gets a NaN, row 3 -inf everywhere (NaN outputs)
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

void poisonRows(HostTensor& mask) {
  const Shape& s = mask.shape();
  const int64_t keys = s.back(), rows = s[s.size() - 2];
  float* m = mask.as<float>();
  for (int64_t i = 0; i < numElements(s); ++i) {
    const int64_t j = i % keys, row = (i / keys) % rows;
    if (row == 2 && j == keys / 2) m[i] = std::numeric_limits<float>::quiet_NaN();
    if (row == 3) m[i] = -std::numeric_limits<float>::infinity();
  }
}

void expectBackendsMatchReference(const Case& c) {
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
  if (c.nan_rows) poisonRows(feeds.back());
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(*g, feeds, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();
  if (c.nan_rows) {  // the case is only a case if the reference has NaN rows and finite ones
    const std::vector<float> y = (*want)[0].toFloats();
    ASSERT_TRUE(std::any_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
    ASSERT_TRUE(std::any_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }));
  }
  for (const std::string& backend : availableBackends()) {
    if (backend == "reference") continue;
    for (int threads : {1, 2}) {
      if (threads == 2 && backend != "cpu") continue;
      auto got = runGraph(*g, feeds, backend, off, threads);
      ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
      EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-4, 2e-5), "") << backend << ", " << threads << " thread(s)";
    }
  }
}

TEST(FlashAttentionKernels, BnsdWithSeveralKeyBlocksPartialQueryBlocksAndAMaskedFirstBlock) {
  Case c;
  c.b = 2, c.n = 3, c.sq = 70, c.sk = 300, c.d = 20, c.dv = 32;  // V rows read in place
  c.mask = {2, 1, 70, 300};
  expectBackendsMatchReference(c);
}

TEST(FlashAttentionKernels, BshHeadsWithoutMask) {
  Case c;
  c.layout = AttentionLayout::kBSH;
  c.n = 4, c.sq = 128, c.sk = 128, c.d = 32, c.dv = 32;
  expectBackendsMatchReference(c);
}

TEST(FlashAttentionKernels, BsndWithAKeyRowMask) {
  Case c;
  c.layout = AttentionLayout::kBSND;
  c.n = 2, c.sq = 9, c.sk = 513, c.d = 64, c.dv = 40;
  c.mask = {1, 1, 1, 513};
  expectBackendsMatchReference(c);
}

TEST(FlashAttentionKernels, KeyStoredTransposed) {
  Case c;
  c.key_transposed = true;
  c.n = 2, c.sq = 33, c.sk = 17, c.d = 8, c.dv = 5;
  c.mask = {1, 2, 33, 17};
  expectBackendsMatchReference(c);
}

TEST(FlashAttentionKernels, RowsTheSoftmaxMakesNaN) {
  Case c;
  c.n = 2, c.sq = 12, c.sk = 70, c.d = 16, c.dv = 16;
  c.mask = {1, 2, 12, 70};
  c.nan_rows = true;
  expectBackendsMatchReference(c);
}

TEST(FlashAttentionKernels, LargeHeadDimsAndOneQueryRow) {
  Case c;
  c.n = 3, c.sq = 1, c.sk = 77, c.d = 200, c.dv = 256;  // few rows per group, 8-key tiles
  c.mask = {1, 1, 1, 77};
  expectBackendsMatchReference(c);
  Case w;
  w.n = 4, w.sq = 37, w.sk = 130, w.d = 128, w.dv = 128;
  expectBackendsMatchReference(w);
}

}  // namespace
}  // namespace gkrt
