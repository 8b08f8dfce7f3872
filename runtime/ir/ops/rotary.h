// Rotary: rotary position embedding in the "rotate half" form LLM exporters write,
//
//   Rotary(x [..., D], cos, sin) -> y = x * cos + rotate_half(x) * sin,
//   rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])
//
// cos and sin broadcast to x with a last dim of D, or of D/2 (the same angles for both
// halves, as onnxruntime's and opset 23's RotaryEmbedding keep them). gkrt's own op
// (fusion/passes/rotary_fusion.cc makes it of the exported subgraphs).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ir/shape.h"
#include "runtime/ir/status.h"

namespace gkrt::ops {

struct RotaryRows {
  int64_t rows = 0, dim = 0, angles = 0;  // rows of x, its last dim D, cos/sin's last dim (D or D/2)
  std::vector<int64_t> angle_row;         // per row of x: the element offset of its cos/sin row
};
StatusOr<RotaryRows> rotaryRows(const Shape& x, const Shape& cos, const Shape& sin);

// One row: y = x * c + rotate_half(x) * s (c, s with `angles` values).
inline void rotaryRow(const float* x, const float* c, const float* s, float* y, int64_t dim, int64_t angles) {
  const int64_t h = dim / 2;
  if (angles == h) {
    for (int64_t j = 0; j < h; ++j) y[j] = x[j] * c[j] - x[j + h] * s[j];
    for (int64_t j = 0; j < h; ++j) y[j + h] = x[j + h] * c[j] + x[j] * s[j];
  } else {
    for (int64_t j = 0; j < h; ++j) y[j] = x[j] * c[j] - x[j + h] * s[j];
    for (int64_t j = h; j < dim; ++j) y[j] = x[j] * c[j] + x[j - h] * s[j];
  }
}

}  // namespace gkrt::ops
