// Tensor-parallel sharding of a decoder layer as the generator runs it (fusion/
// tensor_parallel_shard.h): grouped-query attention with 9 query heads on 3 KV heads
// (SmolLM2's ratio) over a KV cache, Q/K/V in one packed weight and gate/up in another,
// rotary on the heads. 9 and 3 heads do not divide by 2 ranks: the attention splits by
// KV groups (3 parts: 1 on rank 0, 2 on rank 1), the caches with it, the feed-forward
// evenly; on 3 ranks one group each; on 4 ranks the attention cannot split and stays
// whole while the feed-forward splits. Each rank runs two decode-like steps (positions
// 0-3, then 4-7, the caches kept in place) on threads over an in-process communicator,
// and every rank's output equals the unsplit layer's, on the cpu and reference backends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/communicator.h"
#include "runtime/builder.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/tensor_parallel_ranks.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;

constexpr int64_t kS = 4, kHq = 9, kHkv = 3, kD = 8, kE = kHq * kD, kF = 48, kC = 16;

// genai_form: Q/K/V cut out of the packed output by StridedSlices and rotary written as
// halves, products and a Concat, as onnxruntime-genai's builder writes them; else one
// Split and gkrt's Rotary.
ir::Graph decoderLayer(bool genai_form = false) {
  GraphBuilder b;
  uint32_t seed = 1;
  auto w = [&](const Shape& s) {
    const HostTensor t = randomTensor(s, seed++);
    std::vector<float> v(static_cast<const float*>(t.data()), static_cast<const float*>(t.data()) + numElements(s));
    for (float& f : v) f *= 0.3f;
    return b.constant(s, v);
  };
  const Value x = b.input("x", DType::kFloat32, {1, kS, kE});
  const Value cache_k = b.input("cache_k", DType::kFloat32, {1, kHkv, kC, kD});
  const Value cache_v = b.input("cache_v", DType::kFloat32, {1, kHkv, kC, kD});
  const Value past = b.input("past", DType::kInt64, {1});
  const Value cosv = b.input("cos", DType::kFloat32, {1, kS, 1, kD / 2});
  const Value sinv = b.input("sin", DType::kFloat32, {1, kS, 1, kD / 2});
  const Value h = b.op1("RmsNorm", {x, w({kE})}, NormAttrs{-1, 1e-5f});
  const Value qkv = b.op1("BatchMatMul", {h, w({kE, kE + 2 * kHkv * kD})}, MatMulAttrs{});
  std::vector<Value> parts;
  if (genai_form) {
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, kE}, {kE, kE + kHkv * kD}, {kE + kHkv * kD, kE + 2 * kHkv * kD}}) {
      parts.push_back(b.op1("StridedSlice", {qkv}, StridedSliceAttrs{{begin}, {end}, {2}, {1}}));
    }
  } else {
    parts = b.op("Split", {qkv}, SplitAttrs{-1, {kE, kHkv * kD, kHkv * kD}}, 3);
  }
  auto rotary = [&](Value x) {
    if (!genai_form) return b.op1("Rotary", {x, cosv, sinv});
    const Value x1 = b.op1("StridedSlice", {x}, StridedSliceAttrs{{0}, {kD / 2}, {3}, {1}});
    const Value x2 = b.op1("StridedSlice", {x}, StridedSliceAttrs{{kD / 2}, {kD}, {3}, {1}});
    return b.op1("Concat", {b.sub(b.mul(x1, cosv), b.mul(x2, sinv)), b.add(b.mul(x2, cosv), b.mul(x1, sinv))}, AxisAttrs{3, false});
  };
  const int64_t shape_k[] = {1, -1, kHkv, kD};
  auto heads = [&](Value t, int64_t n, bool rope, bool dynamic) {
    Value r = dynamic ? b.op1("DynamicReshape", {t, b.constant("shape_k", DType::kInt64, {4}, shape_k)})
                      : b.op1("Reshape", {t}, ShapeAttrs{{1, kS, n, kD}});
    if (rope) r = rotary(r);
    return b.op1("Transpose", {r}, PermAttrs{{0, 2, 1, 3}});
  };
  AttentionAttrs at;
  at.scale = 0.35f;
  Value a = b.op1("CachedAttention", {heads(parts[0], kHq, true, false), heads(parts[1], kHkv, true, true),
                                      heads(parts[2], kHkv, false, false), cache_k, cache_v, past}, at);
  a = b.op1("Reshape", {b.op1("Transpose", {a}, PermAttrs{{0, 2, 1, 3}})}, ShapeAttrs{{1, kS, kE}});
  const Value x2 = b.add(x, b.op1("BatchMatMul", {a, w({kE, kE})}, MatMulAttrs{}));
  const Value h2 = b.op1("RmsNorm", {x2, w({kE})}, NormAttrs{-1, 1e-5f});
  const std::vector<Value> gu = b.op("Split", {b.op1("BatchMatMul", {h2, w({kE, 2 * kF})}, MatMulAttrs{})}, SplitAttrs{-1, {kF, kF}}, 2);
  const Value f = b.mul(b.op1("SiLU", {gu[0]}), gu[1]);
  b.output(b.add(x2, b.op1("BatchMatMul", {f, w({kF, kE})}, MatMulAttrs{})), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : ir::Graph{};
}

// Two steps of kS positions: the inputs of step `step`.
std::vector<std::pair<std::string, HostTensor>> stepInputs(int step) {
  HostTensor past(DType::kInt64, {1});
  *static_cast<int64_t*>(past.data()) = step * kS;
  HostTensor c(DType::kFloat32, {1, kS, 1, kD / 2}), s(DType::kFloat32, {1, kS, 1, kD / 2});
  for (int64_t p = 0; p < kS; ++p) {
    for (int64_t j = 0; j < kD / 2; ++j) {
      const double angle = double(step * kS + p) / std::pow(100.0, double(j) / (kD / 2));
      static_cast<float*>(c.data())[p * kD / 2 + j] = float(std::cos(angle));
      static_cast<float*>(s.data())[p * kD / 2 + j] = float(std::sin(angle));
    }
  }
  return {{"x", randomTensor({1, kS, kE}, 40 + uint32_t(step))}, {"past", past}, {"cos", c}, {"sin", s}};
}

// Sets the caches to zeros, runs both steps; y of each.
Status runSteps(Session& s, std::vector<HostTensor>* ys) {
  for (const char* cache : {"cache_k", "cache_v"}) {
    const TensorInfo& info = s.inputs()[size_t(s.inputIndex(cache))];
    HostTensor z(DType::kFloat32, info.shape);
    std::memset(z.data(), 0, z.bytes());
    RETURN_IF_ERROR(s.setInput(cache, z));
  }
  for (int step = 0; step < 2; ++step) {
    for (const auto& [name, t] : stepInputs(step)) RETURN_IF_ERROR(s.setInput(name, t));
    RETURN_IF_ERROR(s.run());
    ASSIGN_OR_RETURN(HostTensor y, s.output("y"));
    ys->push_back(std::move(y));
  }
  return Status::Ok();
}

void expectDecoderRanksMatch(int ranks, const char* flags, size_t columns, int64_t rank0_kv_heads, const char* backend = "cpu",
                             bool genai_form = false) {
  SCOPED_TRACE(std::to_string(ranks) + " ranks, " + flags + ", " + backend + (genai_form ? ", genai form" : ""));
  const ir::Graph model = decoderLayer(genai_form);
  SessionOptions whole;
  whole.backend = "reference";
  whole.fusion = *parseFusionFlags("--opt_level=0");
  auto ws = Session::create(model, whole);
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  std::vector<HostTensor> want;
  ASSERT_TRUE(runSteps(**ws, &want).ok());
  InProcessGroup group(ranks);
  auto rs = testing::makeRankSessions(model, group, backend, *parseFusionFlags(flags));
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(rs->reports[size_t(r)].column_split.size(), columns);
    EXPECT_EQ(rs->reports[size_t(r)].row_split.size(), columns);
    const int ck = rs->graphs[size_t(r)].findTensor("cache_k");
    ASSERT_GE(ck, 0);
    if (r == 0) {
      EXPECT_EQ(rs->graphs[0].tensors[size_t(ck)].shape[1], rank0_kv_heads);
    }
  }
  std::vector<std::vector<HostTensor>> got(static_cast<size_t>(ranks));
  const std::vector<Status> status =
      testing::runOnRanks(ranks, [&](int r) { return runSteps(*rs->sessions[size_t(r)], &got[size_t(r)]); });
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(status[size_t(r)].ok()) << "rank " << r << ": " << status[size_t(r)].message();
    for (int step = 0; step < 2; ++step) {
      EXPECT_EQ(compareTensors(got[size_t(r)][size_t(step)], want[size_t(step)], 1e-4, 1e-5), "") << "rank " << r << " step " << step;
    }
  }
}

TEST(TensorParallelDecoder, GroupedQueryAttentionSplitsByKvGroupsOnTwoRanks) {
  expectDecoderRanksMatch(2, "--opt_level=0", 2, 1);  // rank 0: 1 of the 3 KV heads (3 query heads), rank 1: 2
  expectDecoderRanksMatch(2, "--opt_level=2", 2, 1);
  // The reference backend sums over the communicator too (AllReduce, and MatMulAllReduce
  // with its bias after the sum), as the oracle of a tensor-parallel run.
  expectDecoderRanksMatch(2, "--opt_level=2", 2, 1, "reference");
}

TEST(TensorParallelDecoder, OneKvGroupEachOnThreeRanks) { expectDecoderRanksMatch(3, "--opt_level=2", 2, 1); }

TEST(TensorParallelDecoder, PackedWeightCutByStridedSlicesAndRotaryAsHalvesSplitToo) {
  expectDecoderRanksMatch(2, "--opt_level=0", 2, 1, "cpu", true);
  expectDecoderRanksMatch(2, "--opt_level=2", 2, 1, "cpu", true);
}

TEST(TensorParallelDecoder, AttentionStaysWholeWhereGroupsCannotSplitAndTheFeedForwardSplits) {
  ShardReport report;
  auto g = shardForRank(decoderLayer(), 1, 4, &report);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(report.row_split.size(), 1u);  // the feed-forward's down projection
  EXPECT_EQ(g->tensors[size_t(g->findTensor("cache_k"))].shape[1], kHkv);
  bool named = false;
  for (const std::string& why : report.kept_whole) named = named || why.find("part") != std::string::npos;
  EXPECT_TRUE(named) << "the packed Q/K/V parts kept whole are named";
  expectDecoderRanksMatch(4, "--opt_level=2", 1, kHkv);
}

}  // namespace
}  // namespace gkrt

namespace gkrt {
namespace {

// A feed-forward of block-quantized weights (BlockQuantMatMul: gate and up by columns,
// down by rows, whole blocks to each rank) on 2 ranks equals the unsplit one.
ir::Graph quantFeedForward(DType to, bool offsets, DType precision) {
  constexpr int64_t E = 96, F = 128, B = 32;
  GraphBuilder b;
  std::mt19937 rng(5);
  auto weight = [&](int64_t n, int64_t k) {
    const int64_t blocks = k / B, blob = to == DType::kInt8 ? B : B / 2;
    std::vector<uint8_t> w(size_t(n * blocks * blob));
    for (uint8_t& v : w) v = uint8_t(rng());
    std::vector<float> s(size_t(n * blocks)), o(s.size());
    for (float& v : s) v = 0.002f + 0.01f * float(rng() % 100) / 100.0f;
    for (float& v : o) v = -0.02f * float(rng() % 100) / 100.0f;
    QuantAttrs a;
    a.block_size = B;
    a.to = to;
    a.precision = precision;
    return std::make_pair(std::vector<Value>{b.constant("w", to == DType::kInt8 ? DType::kInt8 : DType::kUInt8, {n, blocks, blob}, w.data()),
                                             b.constant("s", DType::kFloat32, {n, blocks}, s.data()),
                                             offsets ? b.constant("o", DType::kFloat32, {n, blocks}, o.data()) : Value{}},
                          a);
  };
  auto bqmm = [&](Value x, int64_t n, int64_t k) {
    auto [w, a] = weight(n, k);
    return b.op1("BlockQuantMatMul", {x, w[0], w[1], w[2]}, a);
  };
  const Value x = b.input("x", DType::kFloat32, {1, 5, E});
  const Value g = bqmm(x, F, E), u = bqmm(x, F, E);
  const Value f = b.mul(b.mul(g, b.op1("Sigmoid", {g})), u);
  b.output(b.add(x, bqmm(f, E, F)), "y");
  auto graph = b.finish();
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return graph.ok() ? std::move(*graph) : ir::Graph{};
}

TEST(TensorParallelDecoder, BlockQuantizedFeedForwardSplitsByWholeBlocks) {
  for (auto [to, offsets, precision] : {std::tuple{DType::kUInt4, true, DType::kInt8}, std::tuple{DType::kInt4, false, DType::kInt8},
                                        std::tuple{DType::kInt8, false, DType::kFloat32}}) {
    SCOPED_TRACE(std::string(dtypeName(to)) + (offsets ? " offsets " : " ") + dtypeName(precision));
    const ir::Graph model = quantFeedForward(to, offsets, precision);
    const HostTensor x = randomTensor({1, 5, 96}, 3);
    auto want = testing::runGraph(model, {x}, "reference", testing::optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().message();
    InProcessGroup group(2);
    auto rs = testing::makeRankSessions(model, group, "reference", testing::optLevel(0));
    ASSERT_TRUE(rs.ok()) << rs.status().message();
    for (const ShardReport& report : rs->reports) {
      EXPECT_EQ(report.column_split.size(), 2u);
      EXPECT_EQ(report.row_split.size(), 1u);
    }
    std::vector<HostTensor> got(2);
    const std::vector<Status> status = testing::runOnRanks(2, [&](int r) -> Status {
      Session& s = *rs->sessions[size_t(r)];
      RETURN_IF_ERROR(s.setInput("x", x));
      RETURN_IF_ERROR(s.run());
      ASSIGN_OR_RETURN(got[size_t(r)], s.output("y"));
      return Status::Ok();
    });
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(status[size_t(r)].ok()) << status[size_t(r)].message();
      EXPECT_EQ(compareTensors(got[size_t(r)], (*want)[0], 1e-4, 1e-5), "") << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace gkrt
