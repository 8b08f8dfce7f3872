// Tensor-parallel sharding (Megatron style) of a model for N ranks: each rank's graph
// holds its slice of the weights and sums its partial products with AllReduce, which the
// ranks' communicator (runtime/base/communicator.h: in-process, MPI, NCCL) carries out;
// the fusion engine then makes MatMul + AllReduce + bias one MatMulAllReduce.
//
//   x ─ MatMul(W[:, cols of rank r]) ─ ... per-head / elementwise ... ─ MatMul(W'[rows of r, :]) ─ AllReduce ─ y
//
// A MatMul with a constant 2-D weight (or a BlockQuantMatMul, whose blocks run along K)
// whose input every rank has in full is split by columns; what follows it is split along
// the same dimension as long as each op can be computed on its slice alone — elementwise
// ops (constants sliced, broadcasts kept), Reshape/DynamicReshape (the split dimension
// must map onto an output dimension in one piece per part, as [S, H*D] onto [S, H, D]
// splits the heads), Transpose, StridedSlice and Concat along other axes and Rotary
// (rotary embeddings), a MatMul of two slices along a batch dimension (attention's Q·K^T
// and P·V per head), Softmax over another axis, CachedAttention (the generator's
// attention over its KV cache: query, key and value split by heads together, the cache
// inputs with them) — until a matmul with a constant weight reads the slice along its
// contraction axis: that one is split by rows (a block-quantized one at block
// boundaries) and followed by AllReduce. A packed weight (Q/K/V or gate/up in one, cut by
// one Split or by StridedSlices) splits piece by piece. A column split whose slice would
// reach anything else (a norm over it, a graph output, ...) is not made; those matmuls
// stay whole on every rank.
//
// Parts need not be equal: a dimension splits into units (the ranks, else the smallest
// divisor that every op on the way keeps whole), given out as evenly as they go — 9 query
// heads on 3 KV heads split by KV groups on 2 ranks (1 group to rank 0, 2 to rank 1).
// Dims other than the split ones may be dynamic (a decoder's sequence and cache lengths).
//
//   ShardReport report;
//   ASSIGN_OR_RETURN(ir::Graph g1, shardForRank(model, /*rank=*/1, /*ranks=*/2, &report));
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

struct ShardReport {
  std::vector<std::string> column_split;  // MatMul nodes split by columns
  std::vector<std::string> row_split;     // MatMul nodes split by rows, each followed by AllReduce
  std::vector<std::string> kept_whole;    // candidate MatMuls left whole, with the reason
};

// Rank `rank`'s graph of `ranks`. kInvalidArgument when ranks < 2, rank is out of range,
// or nothing in the model can be split.
StatusOr<ir::Graph> shardForRank(const ir::Graph& model, int rank, int ranks, ShardReport* report = nullptr);

}  // namespace gkrt
