// Readable text form of a graph, for dumps and `gkrt dump`:
//
//   graph(%0 x: float32[4x4]) -> (%4 result) {
//     %4 result: float32[4x4] = Fused 'fused_0'(%0 x) {
//       %2: float32[4x4] = Mul(%0 x, %1 const=2)
//       ...
//     }
//   }
#pragma once

#include <string>

#include "runtime/ir/graph.h"

namespace gkrt {

std::string graphToText(const ir::Graph& g);

}  // namespace gkrt
