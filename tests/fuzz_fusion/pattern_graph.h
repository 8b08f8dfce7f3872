// Random transformer-like graphs for the differential fuzzer's `--patterns` mode: chains
// of the subgraphs the Appendix 3 pattern passes look for, as exporters write them and as
// near-misses, so that each pass's rewrite (and each backend's pattern kernel) is checked
// against the unfused graph on random shapes:
//  - attention: Q/K/V projections (MatMul, optional bias), heads split by Reshape and
//    Transpose (or 4-D inputs), K^T by Transpose or transpose_b, the scale by Mul or
//    RealDiv on the scores or on Q, an optional additive mask (0, -10000 or -inf, every
//    row keeps a key) broadcast over batch/heads/rows, Softmax, P V, heads merged back;
//    near-misses: Softmax over another axis, the scores also read elsewhere;
//  - residual Add + LayerNorm / RmsNorm (last axis or several), with the sum read again
//    later or not, and LayerNorm decomposed as exporters write it (ReduceMean, Sub, Pow,
//    Add eps, Sqrt, RealDiv, Mul, Add);
//  - feed-forward: MatMul + bias (+ ReLU, GeLU erf/tanh, or GeLU as its Erf formula),
//    MatMul + residual, or SwiGLU (Split of a doubled projection, SiLU or x * Sigmoid(x), Mul);
//  - a Split + Concat that split_concat_fusion turns into Reshape/Transpose.
// One seed gives one graph on every machine (std::mt19937_64, integer choices); float32,
// or float16 for one seed in ten.
#pragma once

#include <cstdint>

#include "tests/fuzz_fusion/random_graph.h"

namespace gkrt::fuzz {

StatusOr<RandomGraph> makePatternGraph(uint64_t seed);

}  // namespace gkrt::fuzz
