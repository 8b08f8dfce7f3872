// Index arithmetic of the ops that move elements (Transpose, Slice/StridedSlice, Pad,
// Concat), as C expressions over a flat output index: the renderer places them.
#pragma once

#include <optional>
#include <string>

#include "runtime/ir/graph.h"

namespace gkrt::codegen {

// sum over dims d of out-dim index (from flat `at` in shape `out`) * `coef[d]`, + `base`.
std::string affineIndex(const std::string& at, const Shape& out, const std::vector<int64_t>& coef, int64_t base = 0);

// The input's flat index for output index `at` of Transpose or Slice/StridedSlice node
// `n` (`in`/`out`: its input and output shapes); nullopt when the node is not one.
std::optional<std::string> movedIndex(const ir::Node& n, const Shape& in, const Shape& out, const std::string& at);

// Pad (constant mode): {condition that `at` lies inside the input, the input's flat
// index there (0 outside, so reads stay in bounds)}; nullopt for other modes.
struct PadIndex {
  std::string inside, index;
};
std::optional<PadIndex> padIndex(const ir::Node& n, const Shape& in, const Shape& out, const std::string& at);

}  // namespace gkrt::codegen
