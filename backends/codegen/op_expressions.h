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

// The expression of `node` (an elementwise op) on operands of element types `types`
// giving `out`, or nullopt when the renderer has none. Float32 math covers every op
// of the table below; bool and integers cover comparisons, logic, Select, Cast,
// copies and integer Add/Sub/Mul/Neg/Abs/Square/Maximum/Minimum.
std::optional<std::string> opExpression(const ir::Node& node, const std::vector<std::string>& args,
                                        const std::vector<DType>& types, DType out, const KernelDialect& d);

// x ^ c for a compile-time float exponent: products for small integer powers, sqrt,
// reciprocal, pown for other integers (OpenCL), pow otherwise.
std::string powConstExpression(const std::string& x, float c, const KernelDialect& d);

// A scalar constant of element type `t` as a literal.
std::string scalarLiteral(DType t, const void* data);

// Whether `node` changes only the shape, not the flat order of elements.
bool isReshapeOp(const ir::Node& node);

}  // namespace gkrt::codegen
