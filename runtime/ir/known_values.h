// Values known at compile time: the shape arithmetic of models with dynamic dims
// (Shape -> Gather -> Concat -> Reshape's shape operand, ...) computed once input
// shapes are known, by running the ops' reference kernels on small tensors.
#pragma once

#include <memory>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {
struct OpDef;
}

namespace gkrt::ir {

// Ops whose outputs are not a function of their inputs (Dropout, StandardNormal,
// UniformReal): never computed ahead of a run, neither here nor by converters folding.
bool isRandomOp(const OpDef& op);

// Outputs of more elements than this are never computed at compile time.
constexpr int64_t kKnownValueMaxElements = 64;

// The values of node `n`'s outputs (with these dtypes and static shapes) when each is
// small and computable now: every present input is a constant or has a known value,
// or the op reads only its inputs' shapes. `values` gets one entry per output (null
// when not computed); a node that cannot be computed leaves every entry null.
Status computeKnownValues(const Graph& g, const Node& n, const std::vector<DType>& dtypes,
                          const std::vector<Shape>& shapes, std::vector<std::shared_ptr<const ConstData>>* values);

}  // namespace gkrt::ir
