// Integer tensors that differ by a constant: `ends` = `starts` + k, where both come from
// one tensor only known at run (a loop counter) through Add/Sub of constants and moves
// that keep element order (ExpandDims, Squeeze, Reshape, Identity, integer Cast). Lets a
// slice whose bounds are read at run still have a static length (SliceAtRun).
//
//   // i: the loop counter; starts = ExpandDims(i), ends = ExpandDims(Add(i, 1))
//   std::optional<Ints> k = ir::constantDifference(g, starts, ends);   // {1}
#pragma once

#include <optional>

#include "runtime/ir/attrs.h"
#include "runtime/ir/graph.h"

namespace gkrt::ir {

// to - from, element by element (one value per element of the larger; a value shared by
// every element is repeated), when both are integer tensors of at most 64 elements
// and the same run-time tensor plus constants; nullopt otherwise.
std::optional<Ints> constantDifference(const Graph& g, int from, int to);

}  // namespace gkrt::ir
