#include "backends/cpu/tensor/pad_kernel.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

constexpr size_t kMaxRank = 8;

class PadKernel final : public Kernel {
 public:
  PadKernel(const Shape& x, const Shape& y, const PadAttrs& a, DType dtype, ThreadPool& pool)
      : pool_(pool), mode_(a.mode), rank_(x.size()), elem_(dtypeSize(dtype)) {
    for (size_t d = 0; d < rank_; ++d) x_[d] = x[d], y_[d] = y[d], before_[d] = a.pads[d];
    int64_t s = 1;
    for (size_t d = rank_; d-- > 0;) stride_[d] = s, s *= x[d];
    ops::storeF(value_.data(), dtype, 0, a.value);  // the constant as one element of the dtype
    rows_ = 1;
    for (size_t d = 0; d + 1 < rank_; ++d) rows_ *= y[d];
  }
  std::string detail() const override { return "gkrt pad copy"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    const int64_t W = x_[rank_ - 1], Wy = y_[rank_ - 1];
    const size_t row_bytes = size_t(Wy) * elem_;
    pool_.parallelFor(rows_, 1, std::max<int64_t>(1, (32 << 10) / std::max<int64_t>(int64_t(row_bytes), 1)),
                      [&](int, int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        char* yr = y + size_t(row) * row_bytes;
        int64_t off = 0, rem = row;
        bool inside = true;
        for (size_t d = rank_ - 1; d-- > 0;) {
          const int64_t i = rem % y_[d];
          rem /= y_[d];
          const int64_t s = source(i - before_[d], x_[d], &inside);
          off += s * stride_[d];
        }
        if (!inside) {  // constant mode, a row outside the input
          for (int64_t j = 0; j < Wy; ++j) std::memcpy(yr + size_t(j) * elem_, value_.data(), elem_);
          continue;
        }
        const char* xr = x + size_t(off) * elem_;
        const int64_t pl = before_[rank_ - 1];
        const int64_t j0 = std::max<int64_t>(0, pl), j1 = std::min<int64_t>(Wy, pl + W);  // the middle
        if (j1 > j0) std::memcpy(yr + size_t(j0) * elem_, xr + size_t(j0 - pl) * elem_, size_t(j1 - j0) * elem_);
        for (int64_t j = 0; j < Wy; ++j) {
          if (j == j0 && j1 > j0) j = j1;  // skip the middle
          if (j >= Wy) break;
          bool in_row = true;
          const int64_t s = source(j - pl, W, &in_row);
          std::memcpy(yr + size_t(j) * elem_, in_row ? xr + size_t(s) * elem_ : value_.data(), elem_);
        }
      }
    });
    return Status::Ok();
  }

 private:
  // The input index read for index s of a dim of n (s outside [0, n) in edge and reflect
  // modes); constant mode clears `inside` instead.
  int64_t source(int64_t s, int64_t n, bool* inside) const {
    if (s >= 0 && s < n) return s;
    if (mode_ == PadMode::kConstant) {
      *inside = false;
      return 0;
    }
    if (mode_ == PadMode::kEdge) return std::clamp<int64_t>(s, 0, n - 1);
    return s < 0 ? -s : 2 * (n - 1) - s;  // reflect, excluding the edge
  }

  ThreadPool& pool_;
  PadMode mode_;
  size_t rank_, elem_;
  int64_t rows_ = 1;
  std::array<int64_t, kMaxRank> x_{}, y_{}, before_{}, stride_{};
  std::array<char, 16> value_{};
};

}  // namespace

bool canRunPad(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || std::strcmp(node.op->name, "Pad") != 0 || node.inputs.size() != 1 || node.inputs[0] < 0 ||
      node.outputs.size() != 1) {
    return false;
  }
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  if (!isStatic(x.shape) || !isStatic(y.shape) || x.shape.empty() || x.shape.size() > kMaxRank ||
      numElements(y.shape) == 0 || numElements(x.shape) == 0 || dtypeSize(x.dtype) > 16 || dtypeSize(x.dtype) == 0) {
    return false;
  }
  const auto& a = node.attrs.get<PadAttrs>();
  if (a.pads.size() != 2 * x.shape.size()) return false;
  for (size_t d = 0; d < x.shape.size(); ++d) {  // reflect needs the pads inside the dim (the shape check says so)
    if (a.mode == PadMode::kReflect && (a.pads[d] >= x.shape[d] || a.pads[d + x.shape.size()] >= x.shape[d])) return false;
  }
  return true;
}

std::unique_ptr<Kernel> compilePad(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  return std::make_unique<PadKernel>(x.shape, y.shape, node.attrs.get<PadAttrs>(), x.dtype, pool);
}

}  // namespace gkrt::cpu
