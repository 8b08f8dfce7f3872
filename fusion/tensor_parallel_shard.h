// Tensor-parallel sharding (Megatron style) of a model for N ranks: each rank's graph
// holds its slice of the weights and sums its partial products with AllReduce, which the
// ranks' communicator (runtime/base/communicator.h: in-process, MPI, NCCL) carries out;
// the fusion engine then makes MatMul + AllReduce + bias one MatMulAllReduce.
//
//   x ─ MatMul(W[:, cols of rank r]) ─ ... per-head / elementwise ... ─ MatMul(W'[rows of r, :]) ─ AllReduce ─ y
//
// A MatMul with a constant 2-D weight whose input every rank has in full is split by
// columns; what follows it is split along the same dimension as long as each op can be
// computed on its slice alone — elementwise ops (constants sliced, broadcasts kept),
// Reshape (the split dimension must map onto an output dimension rank-divisible, as
// [S, H*D] onto [S, H, D] splits the heads), Transpose, a MatMul of two slices along a
// batch dimension (attention's Q·K^T and P·V per head), Softmax over another axis —
// until a MatMul with a constant weight reads the slice along its contraction axis: that
// one is split by rows and followed by AllReduce. A column split whose slice would reach
// anything else (LayerNorm over it, a Concat, a graph output, ...) is not made; those
// MatMuls stay whole on every rank. Static shapes only.
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
// a shape is dynamic, or nothing in the model can be split.
StatusOr<ir::Graph> shardForRank(const ir::Graph& model, int rank, int ranks, ShardReport* report = nullptr);

}  // namespace gkrt
