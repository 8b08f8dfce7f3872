#include "backends/codegen/index_exprs.h"

#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {

std::string affineIndex(const std::string& at, const Shape& out, const std::vector<int64_t>& coef, int64_t base) {
  std::string expr;
  int64_t div = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (coef[d] != 0 && out[d] != 1) {
      std::string term = div == 1 ? at : "(" + at + " / " + std::to_string(div) + ")";
      if (d > 0) term = "(" + term + " % " + std::to_string(out[d]) + ")";
      if (coef[d] != 1) term += " * " + std::to_string(coef[d]);
      expr += (expr.empty() ? "" : " + ") + term;
    }
    div *= out[d];
  }
  if (base != 0) expr += (expr.empty() ? "" : " + ") + std::to_string(base);
  return expr.empty() ? "0" : "(" + expr + ")";
}

std::optional<std::string> movedIndex(const ir::Node& n, const Shape& in, const Shape& out, const std::string& at) {
  const std::vector<int64_t> in_strides = contiguousStrides(in);
  std::vector<int64_t> coef(out.size(), 0);
  int64_t base = 0;
  if (std::strcmp(n.op->name, "Transpose") == 0) {
    const Ints& perm = n.attrs.get<PermAttrs>().perm;
    if (perm.size() != out.size() || in.size() != out.size()) return std::nullopt;
    for (size_t d = 0; d < out.size(); ++d) coef[d] = in_strides[static_cast<size_t>(perm[d])];
  } else if (std::strcmp(n.op->name, "Slice") == 0 || std::strcmp(n.op->name, "StridedSlice") == 0) {
    auto w = ops::sliceWindows(n, in);
    if (!w.ok() || in.size() != out.size()) return std::nullopt;
    for (size_t d = 0; d < out.size(); ++d) {
      coef[d] = (*w)[d].step * in_strides[d];
      base += (*w)[d].start * in_strides[d];
    }
  } else {
    return std::nullopt;
  }
  return affineIndex(at, out, coef, base);
}

std::optional<PadIndex> padIndex(const ir::Node& n, const Shape& in, const Shape& out, const std::string& at) {
  if (std::strcmp(n.op->name, "Pad") != 0) return std::nullopt;
  const auto& a = n.attrs.get<PadAttrs>();
  const size_t r = in.size();
  if (a.mode != PadMode::kConstant || a.pads.size() != 2 * r || out.size() != r) return std::nullopt;
  const std::vector<int64_t> in_strides = contiguousStrides(in);
  PadIndex p;
  std::vector<int64_t> unit(r, 0);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) {
    unit.assign(r, 0);
    unit[d] = 1;
    const std::string i_d = "(" + affineIndex(at, out, unit) + " - " + std::to_string(a.pads[d]) + ")";
    if (a.pads[d] != 0 || a.pads[r + d] != 0) {
      p.inside += std::string(p.inside.empty() ? "" : " && ") + i_d + " >= 0 && " + i_d + " < " + std::to_string(in[d]);
    }
    base -= a.pads[d] * in_strides[d];
  }
  if (p.inside.empty()) p.inside = "1";
  p.index = "((" + p.inside + ") ? " + affineIndex(at, out, in_strides, base) + " : 0)";
  return p;
}

}  // namespace gkrt::codegen
