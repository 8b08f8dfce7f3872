// The cpu backend's own loops for the per-tensor quantization ops around int8 kernels:
// QuantizeLinear (float32 -> int8/uint8), DequantizeLinear (int8/uint8 -> float32) and
// QLinearAdd / QLinearMul whose operands repeat over the output (same shape, a scalar, a
// bias row), with results equal to
// the reference kernels' (the same float32 operations, in the same order: x / scale, not
// x * (1 / scale)). Per-axis, blocked and other types run the reference kernels.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace gkrt::cpu {

bool canRunQuantElementwise(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileQuantElementwise(const ir::Graph& g, const ir::Node& node);

}  // namespace gkrt::cpu
