// Tensor-parallel sharding (fusion/tensor_parallel_shard.h): a transformer block split
// for 2 and 4 ranks — Q/K/V and the first feed-forward matmul by columns, the output
// projection and the second feed-forward matmul by rows, each with its AllReduce, the
// head count in the reshapes divided — runs rank by rank on threads over an in-process
// communicator and every rank's y equals the unsplit model's, with fusion off and on
// (MatMul + AllReduce + bias as MatMulAllReduce). What cannot be split stays whole, and
// a model with nothing to split or a bad rank is a clear error.
#include <gtest/gtest.h>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/tensor_parallel_block.h"
#include "tests/unit/tensor_parallel_ranks.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;

void expectRanksMatchTheModel(int ranks, const char* flags) {
  SCOPED_TRACE(std::to_string(ranks) + " ranks, " + flags);
  const ir::Graph model = testing::blockGraph();
  const HostTensor x = randomTensor({1, testing::kSeq, testing::kModel}, 7);
  auto want = testing::runGraph(model, {x}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  InProcessGroup group(ranks);
  auto rs = testing::makeRankSessions(model, group, "cpu", *parseFusionFlags(flags));
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(rs->reports[size_t(r)].column_split.size(), 4u);  // Q, K, V, the first feed-forward matmul
    EXPECT_EQ(rs->reports[size_t(r)].row_split.size(), 2u);     // the output projection, the second one
    int sums = 0;
    for (const ir::Node& n : rs->graphs[size_t(r)].nodes) sums += std::string(n.op->name) == "AllReduce";
    EXPECT_EQ(sums, 2);
  }
  std::vector<HostTensor> got(static_cast<size_t>(ranks));
  const std::vector<Status> status = testing::runOnRanks(ranks, [&](int r) -> Status {
    Session& s = *rs->sessions[size_t(r)];
    RETURN_IF_ERROR(s.setInput("x", x));
    RETURN_IF_ERROR(s.run());
    ASSIGN_OR_RETURN(got[size_t(r)], s.output("y"));
    return Status::Ok();
  });
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(status[size_t(r)].ok()) << "rank " << r << ": " << status[size_t(r)].message();
    EXPECT_EQ(compareTensors(got[size_t(r)], (*want)[0], 1e-4, 1e-5), "") << "rank " << r;
  }
}

TEST(TensorParallelShard, BlockOnTwoRanksMatchesTheModel) {
  expectRanksMatchTheModel(2, "--opt_level=0");
  expectRanksMatchTheModel(2, "--opt_level=2");
}

TEST(TensorParallelShard, BlockOnFourRanksMatchesTheModel) { expectRanksMatchTheModel(4, "--opt_level=2"); }

// The head count divides the reshapes: rank graphs hold [1, S, H / ranks, D] heads and a
// quarter of each projection's weights on 4 ranks.
TEST(TensorParallelShard, RankGraphsHoldTheirSliceOfHeadsAndWeights) {
  const ir::Graph model = testing::blockGraph();
  auto g = shardForRank(model, 3, 4);
  ASSERT_TRUE(g.ok()) << g.status().message();
  int heads = 0;
  for (const ir::Node& n : g->nodes) {
    if (std::string(n.op->name) != "Reshape") continue;
    const Shape& s = g->tensors[n.outputs[0]].shape;
    if (s.size() == 4) {
      EXPECT_EQ(s, (Shape{1, testing::kSeq, testing::kHeads / 4, testing::kHeadDim})) << n.name;
      ++heads;
    }
  }
  EXPECT_EQ(heads, 3);
  EXPECT_EQ(g->metadata.at("tensor_parallel"), "rank 3 of 4");
}

// A column slice that would reach a LayerNorm over it: that MatMul stays whole; with
// nothing else, the model cannot be split, and says so.
TEST(TensorParallelShard, WhatCannotBeSplitStaysWholeOrIsAClearError) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 16});
  Value h = b.op1("MatMul", {x, b.constant({16, 16}, std::vector<float>(256, 0.1f))}, MatMulAttrs{});
  h = b.op1("LayerNorm", {h, b.constant({16}, std::vector<float>(16, 1.0f)), b.constant({16}, std::vector<float>(16, 0.0f))},
            NormAttrs{-1, 1e-5f});
  b.output(b.op1("MatMul", {h, b.constant({16, 8}, std::vector<float>(128, 0.1f))}, MatMulAttrs{}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  ShardReport report;
  auto r = shardForRank(*g, 0, 2, &report);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing in the model splits"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("LayerNorm"), std::string::npos) << r.status().message();
  EXPECT_FALSE(shardForRank(testing::blockGraph(), 2, 2).ok());
  EXPECT_FALSE(shardForRank(testing::blockGraph(), 0, 1).ok());
}

}  // namespace
}  // namespace gkrt
