// Tensor-parallel sharding (fusion/tensor_parallel_shard.h): a transformer block split
// for 2 and 4 ranks — Q/K/V and the first feed-forward matmul by columns, the output
// projection and the second feed-forward matmul by rows, each with its AllReduce, the
// head count in the reshapes divided — runs rank by rank on threads over an in-process
// communicator and every rank's y equals the unsplit model's, with fusion off and on
// (MatMul + AllReduce + bias as MatMulAllReduce). What cannot be split stays whole, and
// a model with nothing to split or a bad rank is a clear error.
#include <gtest/gtest.h>

#include <thread>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/tensor_parallel_block.h"

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
  std::vector<std::unique_ptr<Session>> sessions;
  for (int r = 0; r < ranks; ++r) {
    ShardReport report;
    auto g = shardForRank(model, r, ranks, &report);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(report.column_split.size(), 4u);  // Q, K, V, the first feed-forward matmul
    EXPECT_EQ(report.row_split.size(), 2u);     // the output projection, the second one
    int sums = 0;
    for (const ir::Node& n : g->nodes) sums += std::string(n.op->name) == "AllReduce";
    EXPECT_EQ(sums, 2);
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = 1;
    o.backend_options.communicator = group.communicator(r);
    o.fusion = *parseFusionFlags(flags);
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    sessions.push_back(std::move(*s));
  }
  std::vector<Status> status(ranks, Status::Ok());
  std::vector<HostTensor> got(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      status[r] = sessions[r]->setInput("x", x);
      if (status[r].ok()) status[r] = sessions[r]->run();
      if (!status[r].ok()) return;
      auto y = sessions[r]->output("y");
      if (y.ok()) got[r] = std::move(*y);
      else status[r] = y.status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].message();
    EXPECT_EQ(compareTensors(got[r], (*want)[0], 1e-4, 1e-5), "") << "rank " << r;
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
