// A transformer encoder block as exporters write it (the zoo's transformer_block, smaller):
// Q/K/V projections with biases, heads by Reshape/Transpose, scaled Softmax attention,
// the output projection, residual + LayerNorm, a GeLU feed-forward, residual +
// LayerNorm. The tensor-parallel sharding tests split it (fusion/tensor_parallel_shard.h).
//
//   ir::Graph g = testing::blockGraph();   // input x float32 [1, kSeq, kModel], output y
#pragma once

#include <vector>

#include "runtime/builder.h"
#include "tests/unit/test_support.h"

namespace gkrt::testing {

inline constexpr int64_t kSeq = 12, kModel = 32, kHeads = 4, kHeadDim = 8, kFfn = 64;

inline ir::Graph blockGraph() {
  GraphBuilder b;
  uint32_t seed = 40;
  auto w = [&](const Shape& s) {
    std::vector<float> v = randomTensor(s, seed++).toFloats();
    for (float& f : v) f *= 0.2f;
    return b.constant(s, v);
  };
  auto linear = [&](Value x, int64_t in, int64_t out) {
    return b.add(b.op1("BatchMatMul", {x, w({in, out})}, MatMulAttrs{}), w({out}));
  };
  auto heads = [&](Value t, const Ints& perm) {
    return b.op1("Transpose", {b.op1("Reshape", {t}, ShapeAttrs{{1, kSeq, kHeads, kHeadDim}})}, PermAttrs{perm});
  };
  Value x = b.input("x", DType::kFloat32, {1, kSeq, kModel});
  Value q = heads(linear(x, kModel, kModel), {0, 2, 1, 3});
  Value k = heads(linear(x, kModel, kModel), {0, 2, 3, 1});
  Value v = heads(linear(x, kModel, kModel), {0, 2, 1, 3});
  Value p = b.op1("Softmax", {b.mul(b.op1("BatchMatMul", {q, k}, MatMulAttrs{}), 0.35355339f)}, AxisAttrs{-1, false});
  Value a = b.op1("BatchMatMul", {p, v}, MatMulAttrs{});
  a = b.op1("Reshape", {b.op1("Transpose", {a}, PermAttrs{{0, 2, 1, 3}})}, ShapeAttrs{{1, kSeq, kModel}});
  Value h = b.op1("LayerNorm", {b.add(x, linear(a, kModel, kModel)), w({kModel}), w({kModel})}, NormAttrs{-1, 1e-5f});
  Value f = linear(b.op1("GeLU", {linear(h, kModel, kFfn)}, GeluAttrs{GeluApprox::kNone}), kFfn, kModel);
  b.output(b.op1("LayerNorm", {b.add(h, f), w({kModel}), w({kModel})}, NormAttrs{-1, 1e-5f}), "y");
  return *b.finish();
}

}  // namespace gkrt::testing
