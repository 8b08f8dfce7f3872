// Tensor parallelism across processes: run under `mpirun -np N`, each process is one rank
// of the MLP of tensor_parallel_mlp.h, its AllReduce summed by MPI_Allreduce through
// MpiCommunicator (runtime/base/mpi_communicator.h). Every rank's y equals the unsplit
// model's on the reference backend, and with fusion on the sum runs as MatMulAllReduce
// on the cpu backend (MatMul -> AllReduce -> Add as one kernel); a transformer block
// sharded by fusion/tensor_parallel_shard.h likewise. ctest runs it with 2 ranks
// (mpi_tensor_parallel_2).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/mpi_communicator.h"
#include "runtime/model_io.h"
#ifdef GKRT_HAVE_ONNX
#include "tools/onnx/onnx_import.h"
#endif
#include "tests/unit/tensor_parallel_block.h"
#include "tests/unit/tensor_parallel_mlp.h"

namespace gkrt {
namespace {

TEST(MpiTensorParallel, EveryRankMatchesTheUnsplitModel) {
  auto comm = MpiCommunicator::create();
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  const int rank = (*comm)->rank(), ranks = (*comm)->size();
  ASSERT_EQ(testing::kHidden % ranks, 0) << "run with a rank count that divides " << testing::kHidden;
  const testing::Weights w = testing::makeWeights();
  const HostTensor x = testing::randomTensor({testing::kRows, testing::kIn}, 9);
  auto want = testing::runGraph(testing::rankGraph(w, -1, 1), {x}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (int level : {0, 2}) {
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = 1;
    o.backend_options.communicator = *comm;
    o.fusion = testing::optLevel(level);
    auto s = Session::create(testing::rankGraph(w, rank, ranks), o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    int sums = 0;
    for (const ir::Node& n : (*s)->compiledGraph().nodes) {
      const std::string op = n.op->name;
      sums += op == "AllReduce" || op == "MatMulAllReduce";
    }
    EXPECT_EQ(sums, 1) << "rank " << rank << ", opt_level " << level;
    for (int run = 0; run < 2; ++run) {  // the second run reuses the sessions' buffers
      ASSERT_TRUE((*s)->setInput("x", x).ok());
      const Status st = (*s)->run();
      ASSERT_TRUE(st.ok()) << "rank " << rank << ": " << st.message();
      auto y = (*s)->output("y");
      ASSERT_TRUE(y.ok());
      EXPECT_EQ(testing::compareTensors(*y, (*want)[0], 1e-5, 1e-5), "") << "rank " << rank << " of " << ranks;
    }
  }
}

// A transformer block sharded for this rank (fusion/tensor_parallel_shard.h): the test's
// own block, and the zoo's transformer_block.onnx converted when GKRT_TP_BLOCK names it
// (ctest does, in builds with the ONNX importer); y equals the unsplit model's on every rank.
void expectShardedModelMatches(const ir::Graph& model, const std::shared_ptr<Communicator>& comm, const std::string& what) {
  const int rank = comm->rank(), ranks = comm->size();
  ASSERT_EQ(model.inputs.size(), 1u);
  const ir::Tensor& in = model.tensors[model.inputs[0]];
  const HostTensor x = testing::randomTensor(in.shape, 5);
  auto want = testing::runGraph(model, {x}, "cpu", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  ShardReport report;
  auto g = shardForRank(model, rank, ranks, &report);
  ASSERT_TRUE(g.ok()) << what << ": " << g.status().message();
  EXPECT_EQ(report.row_split.size(), 2u) << what;
  for (int level : {0, 2}) {
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = 1;
    o.backend_options.communicator = comm;
    o.fusion = testing::optLevel(level);
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->setInput(in.name, x).ok());
    const Status st = (*s)->run();
    ASSERT_TRUE(st.ok()) << "rank " << rank << ": " << st.message();
    auto y = (*s)->output((*s)->outputs()[0].name);
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(testing::compareTensors(*y, (*want)[0], 1e-4, 1e-5), "") << what << ", rank " << rank << " of " << ranks
                                                                      << ", opt_level " << level;
  }
}

TEST(MpiTensorParallel, ShardedTransformerBlockMatchesTheModel) {
  auto comm = MpiCommunicator::create();
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  expectShardedModelMatches(testing::blockGraph(), *comm, "the test's block");
#ifdef GKRT_HAVE_ONNX
  const char* zoo = std::getenv("GKRT_TP_BLOCK");
  if (!zoo) return;
  auto model = importOnnxFile(zoo);
  ASSERT_TRUE(model.ok()) << zoo << ": " << model.status().message();
  expectShardedModelMatches(*model, *comm, zoo);
#endif
}

}  // namespace
}  // namespace gkrt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const int failed = RUN_ALL_TESTS();
  int any = 0;  // every rank exits non-zero when one failed
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
