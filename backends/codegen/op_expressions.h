// One elementwise op as a C expression over its operands, in a kernel dialect. Operands
// are variable names or literals (safe to repeat). Float32 semantics match the
// reference kernels (NaN-propagating Maximum/Minimum, ReLU passing NaN, numpy's mod).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/codegen/kernel_dialect.h"
#include "runtime/ir/graph.h"

namespace gkrt::codegen {

// The expression of `node` (an elementwise op), or nullopt when the renderer has none.
std::optional<std::string> opExpression(const ir::Node& node, const std::vector<std::string>& args,
                                        const KernelDialect& d);

// Whether `node` changes only the shape, not the flat order of elements.
bool isReshapeOp(const ir::Node& node);

}  // namespace gkrt::codegen
