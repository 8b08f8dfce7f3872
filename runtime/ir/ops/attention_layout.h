// Where FlashAttention's operands keep element [batch, head, position, dim] in each
// AttentionLayout: shared by the reference kernel and the backends' kernels.
#pragma once

#include "runtime/ir/attrs.h"
#include "runtime/ir/shape.h"
#include "runtime/ir/status.h"

namespace gkrt {

struct AttentionDims {
  int64_t b = 0, n = 0, s = 0, d = 0;                   // batch, heads, positions, head dim
  int64_t sb = 0, sn = 0, ss = 0, sd = 0;               // element strides of each
  int64_t at(int64_t ib, int64_t in, int64_t is, int64_t id) const { return ib * sb + in * sn + is * ss + id * sd; }
};

// Dims and strides of an operand of shape `t` (`transposed`: K stored as K^T).
inline Status attentionDims(const AttentionAttrs& a, const Shape& t, bool transposed, AttentionDims* o) {
  const bool bsh = a.layout == AttentionLayout::kBSH;
  if (t.size() != (bsh ? 3u : 4u)) {
    return makeError(StatusCode::kInvalidArgument, "operand ", shapeToString(t), " must be ", bsh ? "3-D (BSH)" : "4-D (",
                     bsh ? "" : EnumNames<AttentionLayout>::names[static_cast<int>(a.layout)], bsh ? "" : ")");
  }
  if (transposed && a.layout != AttentionLayout::kBNSD) {
    return makeError(StatusCode::kInvalidArgument, "key_transposed needs the BNSD layout");
  }
  switch (a.layout) {
    case AttentionLayout::kBNSD:
      if (transposed) *o = {t[0], t[1], t[3], t[2], t[1] * t[2] * t[3], t[2] * t[3], 1, t[3]};
      else *o = {t[0], t[1], t[2], t[3], t[1] * t[2] * t[3], t[2] * t[3], t[3], 1};
      break;
    case AttentionLayout::kBSND: *o = {t[0], t[2], t[1], t[3], t[1] * t[2] * t[3], t[3], t[2] * t[3], 1}; break;
    case AttentionLayout::kBSH:
      if (a.heads <= 0 || t[2] % a.heads != 0) {
        return makeError(StatusCode::kInvalidArgument, "BSH operand ", shapeToString(t), " needs heads (", a.heads,
                         ") dividing its last dim");
      }
      *o = {t[0], a.heads, t[1], t[2] / a.heads, t[1] * t[2], t[2] / a.heads, t[2], 1};
      break;
  }
  return Status::Ok();
}

// The output's shape in the operands' layout: q's positions, v's head dim.
inline Shape attentionOutputShape(const AttentionAttrs& a, const AttentionDims& q, int64_t dv) {
  switch (a.layout) {
    case AttentionLayout::kBSND: return {q.b, q.s, q.n, dv};
    case AttentionLayout::kBSH: return {q.b, q.s, q.n * dv};
    default: return {q.b, q.n, q.s, dv};
  }
}

}  // namespace gkrt
