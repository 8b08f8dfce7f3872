// Tensor parallelism on the cpu backend: N threads act as N ranks over an in-process
// communicator. A two-layer MLP y = relu(x W1 + b1) W2 + b2 is split Megatron-style (W1
// by columns, W2 by rows); each rank's partial product is summed by AllReduce, and every
// rank's y equals the unsplit model's. With fusion on, the MatMulAllReduce pass and
// inference_qbmm_allreduce_add_fusion turn MatMul -> AllReduce -> Add into one kernel.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/communicator.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;

constexpr int64_t kRows = 4, kIn = 16, kHidden = 32, kOut = 16;

struct Weights {
  std::vector<float> w1, b1, w2, b2;  // row-major [kIn, kHidden], [kHidden], [kHidden, kOut], [kOut]
};

Weights makeWeights() {
  auto scaled = [](const Shape& s, uint32_t seed) {
    std::vector<float> v = randomTensor(s, seed).toFloats();
    for (float& x : v) x *= 0.25f;
    return v;
  };
  return {scaled({kIn, kHidden}, 1), scaled({kHidden}, 2), scaled({kHidden, kOut}, 3), scaled({kOut}, 4)};
}

// Rank `rank` of `ranks`: its hidden columns [h0, h1); ranks == 1 and rank < 0: the unsplit
// model without AllReduce.
ir::Graph rankGraph(const Weights& w, int rank, int ranks) {
  const int64_t part = kHidden / ranks, h0 = rank < 0 ? 0 : rank * part;
  std::vector<float> w1, b1, w2;
  for (int64_t i = 0; i < kIn; ++i) for (int64_t j = h0; j < h0 + part; ++j) w1.push_back(w.w1[i * kHidden + j]);
  for (int64_t j = h0; j < h0 + part; ++j) b1.push_back(w.b1[j]);
  for (int64_t j = h0; j < h0 + part; ++j) for (int64_t o = 0; o < kOut; ++o) w2.push_back(w.w2[j * kOut + o]);
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {kRows, kIn});
  Value h = b.relu(b.add(b.op1("MatMul", {x, b.constant({kIn, part}, w1)}, MatMulAttrs{}), b.constant({part}, b1)));
  Value p = b.op1("MatMul", {h, b.constant({part, kOut}, w2)}, MatMulAttrs{});
  if (rank >= 0) p = b.op1("AllReduce", {p});
  b.output(b.add(p, b.constant({kOut}, w.b2)), "y");
  return *b.finish();
}

#ifdef GKRT_HAVE_DNNL
constexpr bool kFusedKernel = true;
#else  // the cpu MatMulAllReduce kernel needs oneDNN: boards run MatMul, then the AllReduce kernel
constexpr bool kFusedKernel = false;
#endif

void runRanks(int ranks, const char* given_flags) {
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
    opts.backend = "cpu";
    opts.backend_options.num_threads = 1;
    opts.backend_options.communicator = group.communicator(r);
    auto fusion = parseFusionFlags(flags);
    ASSERT_TRUE(fusion.ok()) << fusion.status().message();
    opts.fusion = *fusion;
    auto s = Session::create(rankGraph(w, r, ranks), opts);
    ASSERT_TRUE(s.ok()) << s.status().message();
    if (fusion->opt_level > 0 && kFusedKernel) {
      int fused = 0;
      for (const ir::Node& n : (*s)->compiledGraph().nodes) fused += std::string(n.op->name) == "MatMulAllReduce";
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

TEST(TensorParallel, OneDeviceAllReduceIsTheIdentity) {
  const Weights w = makeWeights();
  const HostTensor x = randomTensor({kRows, kIn}, 9);
  FusionOptions off;
  off.opt_level = 0;
  auto want = testing::runGraph(rankGraph(w, -1, 1), {x}, "reference", off);
  for (const char* backend : {"reference", "cpu"}) {
    auto got = testing::runGraph(rankGraph(w, 0, 1), {x}, backend);
    ASSERT_TRUE(got.ok() && want.ok()) << got.status().message();
    EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-5, 1e-6), "") << backend;
  }
}

}  // namespace
}  // namespace gkrt
