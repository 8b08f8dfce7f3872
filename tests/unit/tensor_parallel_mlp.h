// The two-layer MLP of the tensor-parallel tests (tensor_parallel_test.cc: ranks as
// threads; mpi_tensor_parallel_test.cc: ranks as processes under mpirun), y = relu(x W1 +
// b1) W2 + b2, split Megatron-style: W1 by columns, W2 by rows, AllReduce of the partial
// products before b2.
//
//   const Weights w = testing::makeWeights();
//   ir::Graph g = testing::rankGraph(w, rank, ranks);   // rank -1: the unsplit model
#pragma once

#include <vector>

#include "runtime/builder.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt::testing {

inline constexpr int64_t kRows = 4, kIn = 16, kHidden = 32, kOut = 16;

struct Weights {
  std::vector<float> w1, b1, w2, b2;  // row-major [kIn, kHidden], [kHidden], [kHidden, kOut], [kOut]
};

inline Weights makeWeights() {
  auto scaled = [](const Shape& s, uint32_t seed) {
    std::vector<float> v = randomTensor(s, seed).toFloats();
    for (float& x : v) x *= 0.25f;
    return v;
  };
  return {scaled({kIn, kHidden}, 1), scaled({kHidden}, 2), scaled({kHidden, kOut}, 3), scaled({kOut}, 4)};
}

// Rank `rank` of `ranks`: its hidden columns [h0, h1); ranks == 1 and rank < 0: the unsplit
// model without AllReduce.
inline ir::Graph rankGraph(const Weights& w, int rank, int ranks) {
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

}  // namespace gkrt::testing
