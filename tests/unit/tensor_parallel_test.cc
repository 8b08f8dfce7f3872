// Tensor parallelism on the cpu backend: N threads act as N ranks over an in-process
// communicator. A two-layer MLP y = relu(x W1 + b1) W2 + b2 is split Megatron-style (W1
// by columns, W2 by rows); each rank's partial product is summed by AllReduce, and every
// rank's y equals the unsplit model's. With fusion on, the MatMulAllReduce pass and
// inference_qbmm_allreduce_add_fusion turn MatMul -> AllReduce -> Add into one kernel.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/tensor_parallel_mlp.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::makeWeights;
using testing::Weights;
using testing::randomTensor;
using testing::rankGraph;
using testing::kIn;
using testing::kRows;

#ifdef GKRT_HAVE_DNNL
constexpr bool kFusedKernel = true;
#else  // the cpu MatMulAllReduce kernel needs oneDNN: boards run MatMul, then the AllReduce kernel
constexpr bool kFusedKernel = false;
#endif

// `backend`: where each rank's session runs; a device backend sends the sums over ranks
// (AllReduce, MatMulAllReduce) to its cpu fallback, which holds the communicator.
void runRanks(int ranks, const char* given_flags, const std::string& backend = "cpu") {
  const std::string flags = std::string(given_flags) + (kFusedKernel ? "" : " --disable_pass=MatMulAllReduce,inference_qbmm_allreduce_add_fusion");
  const Weights w = makeWeights();
  const HostTensor x = randomTensor({kRows, kIn}, 9);
  FusionOptions off;
  off.opt_level = 0;
  auto want = testing::runGraph(rankGraph(w, -1, 1), {x}, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();

  InProcessGroup group(ranks);
  std::vector<std::unique_ptr<Session>> sessions;
  for (int r = 0; r < ranks; ++r) {
    SessionOptions opts;
    opts.backend = backend;
    opts.backend_options.num_threads = 1;
    opts.backend_options.communicator = group.communicator(r);
    auto fusion = parseFusionFlags(flags);
    ASSERT_TRUE(fusion.ok()) << fusion.status().message();
    opts.fusion = *fusion;
    auto s = Session::create(rankGraph(w, r, ranks), opts);
    ASSERT_TRUE(s.ok()) << s.status().message();
    int fused = 0, sums = 0;
    const auto infos = (*s)->kernelInfos();
    const ir::Graph& compiled = (*s)->compiledGraph();
    for (size_t k = 0; k < compiled.nodes.size(); ++k) {
      const std::string op = compiled.nodes[k].op->name;
      if (op != "MatMulAllReduce" && op != "AllReduce") continue;
      ++sums;
      fused += op == "MatMulAllReduce";
      EXPECT_EQ(infos[k].backend, "cpu") << "rank " << r << ": the sum over ranks needs the communicator";
    }
    EXPECT_EQ(sums, 1) << "rank " << r;
    if (fusion->opt_level > 0 && kFusedKernel) {
      EXPECT_EQ(fused, 1) << "rank " << r;
    }
    sessions.push_back(std::move(*s));
  }
  std::vector<Status> status(ranks, Status::Ok());
  std::vector<HostTensor> got(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Session& s = *sessions[r];
      status[r] = s.setInput("x", x);
      if (status[r].ok()) status[r] = s.run();
      if (!status[r].ok()) return;
      auto y = s.output("y");
      if (y.ok()) got[r] = std::move(*y);
      else status[r] = y.status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].message();
    // Partial sums add in another order than the unsplit dot products: float rounding.
    EXPECT_EQ(compareTensors(got[r], (*want)[0], 1e-5, 1e-5), "") << "rank " << r;
  }
}

TEST(TensorParallel, TwoRanksMatchTheUnsplitModel) { runRanks(2, ""); }
TEST(TensorParallel, FourRanksMatchTheUnsplitModel) { runRanks(4, ""); }
TEST(TensorParallel, FourRanksWithoutFusionUseTheAllReduceKernel) { runRanks(4, "--opt_level=0"); }

bool openClPresent() {
  for (const std::string& b : availableBackends()) if (b == "opencl") return true;
  return false;
}

// (the GPU column leaves the pattern passes off unless asked)
TEST(TensorParallel, TwoRanksOnOpenClSumOnTheCpuFallback) {
  if (!openClPresent()) GTEST_SKIP() << "no opencl device";
  runRanks(2, "--enable_pass=MatMulAllReduce", "opencl");
  runRanks(2, "--opt_level=0", "opencl");
}

// One device: AllReduce is the identity, MatMulAllReduce a MatMul + bias, on every
// backend; the device backends run them themselves (a copy, their GEMM).
TEST(TensorParallel, OneDeviceAllReduceIsTheIdentity) {
  const Weights w = makeWeights();
  const HostTensor x = randomTensor({kRows, kIn}, 9);
  FusionOptions off;
  off.opt_level = 0;
  auto want = testing::runGraph(rankGraph(w, -1, 1), {x}, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const std::string& backend : availableBackends()) {
    for (const char* flags : {"--enable_pass=MatMulAllReduce", "--opt_level=0"}) {
      FusionOptions fusion = *parseFusionFlags(flags);
      auto got = testing::runGraph(rankGraph(w, 0, 1), {x}, backend, fusion);
      ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
      EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-5, 1e-6), "") << backend << " " << flags;
      if (backend == "reference" || backend == "cpu") continue;
      const std::string op = fusion.opt_level > 0 && kFusedKernel ? "MatMulAllReduce" : "AllReduce";
      auto on = testing::backendsRunning(rankGraph(w, 0, 1), op, backend, flags);
      ASSERT_TRUE(on.ok()) << on.status().message();
      EXPECT_EQ(*on, std::vector<std::string>{backend}) << op << " " << flags;
    }
  }
}

}  // namespace
}  // namespace gkrt
