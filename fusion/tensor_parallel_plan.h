// The analysis behind tensor-parallel sharding (fusion/tensor_parallel_shard.h), internal
// to it: column sources (a constant-weight matmul's columns, or one piece of a packed one),
// the unit counts they split into, and where their slices go op by op
// (propagateSplits) until a matmul reads them along K and is split by rows.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::tp {

constexpr int kWhole = -1;

// A product of dims, or -1 when one of them is unknown.
int64_t product(const Shape& s, size_t from, size_t to);
// Rank r's units of `units` (contiguous, as even as they go): [first, last).
std::pair<int64_t, int64_t> unitRange(int rank, int ranks, int64_t units);
// Rank r's elements of a dim of `dim` in `units` units: [begin, end).
std::pair<int64_t, int64_t> elementRange(int64_t dim, int64_t units, int rank, int ranks);
// A matmul x · W with W constant: [K, N] for MatMul (no transposes); [N, blocks, blob]
// (with its scales, offsets and bias along N) for BlockQuantMatMul. Its weight, else -1.
int constantWeight(const ir::Graph& g, const ir::Node& n);
bool blockQuant(const ir::Node& n);
int64_t columnsOf(const ir::Graph& g, const ir::Node& n);  // N of a constantWeight matmul
std::vector<int> consumersOf(const ir::Graph& g, int t);
struct Root;
// How the readers of packed matmul output `y` ([..., N]) cut it into pieces along its last
// axis: one Split (root->split_node), or StridedSlices of contiguous column ranges that
// cover it (root->slice_nodes, in column order). The piece sizes; empty when not packed.
std::vector<int64_t> packedPieces(const ir::Graph& g, int y, Root* root);

// A column source: one weight matmul's columns, or one piece of a packed one (the
// matmul's only reader a Split along its columns: QKV, gate and up in one weight),
// with the unit counts it may be split into, tried in order: the ranks first, then
// larger divisors, so that heads which do not divide by the ranks split by KV groups
// (SmolLM2's 9 query heads on 3 KV heads: 3 units, 1 on rank 0 and 2 on rank 1).
struct Source {
  int node = -1, piece = 0;
  int64_t offset = 0, size = 0;  // its columns in the weight
  std::vector<int64_t> candidates;
  size_t at = 0;
  bool active = true;
  int64_t units() const { return candidates[at]; }
};
struct Root {
  std::vector<int> sources;  // one per piece
  int split_node = -1;       // the Split of a packed weight, else -1
  std::vector<int> slice_nodes;  // or the StridedSlices that cut it into its pieces, in column order
};

struct TensorSplit {
  int axis = kWhole;
  int64_t units = 0;     // 0 on a packed matmul's output (its pieces split each on their own)
  std::set<int> sources;
};

struct Propagation {
  std::vector<TensorSplit> t;
  std::set<int> columns, rows;  // weight matmuls split by columns / by rows (each then AllReduce)
  std::set<int> failed;         // sources to retry with more units (retry) or to keep whole
  bool retry = false;
  std::string why;
};

// The split of every tensor for the active sources at their current unit counts, or the
// first failure: the sources to retry with more units (retry) or to keep whole.
Propagation propagateSplits(const ir::Graph& g, const std::vector<Source>& sources, const std::map<int, Root>& roots, int ranks);

}  // namespace gkrt::tp
