#include "backends/cpu/tensor/slice_kernel.h"

#include <array>
#include <cstdint>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

constexpr size_t kMaxRank = 8;

class SliceKernel final : public Kernel {
 public:
  SliceKernel(const Shape& x, const std::vector<ops::SliceWindow>& w, size_t elem, ThreadPool& pool) : pool_(pool) {
    const size_t r = x.size();
    std::array<int64_t, kMaxRank> in_stride{};
    int64_t s = 1;
    for (size_t d = r; d-- > 0;) in_stride[d] = s, s *= x[d];
    // The innermost dims copied as one run: full windows of step 1, then one of step 1.
    // An innermost window of a larger step (YOLOX's Focus, x[..., ::2]) is a strided run:
    // copied element by element, each row at once, not one memcpy per element.
    size_t k = r;
    int64_t run = 1;
    while (k > 0 && w[k - 1].step == 1) {
      --k;
      run *= w[k].count;
      if (w[k].start != 0 || w[k].count != x[k]) break;
    }
    if (k == r && r > 0) {
      --k;
      run = w[k].count;
      inner_step_ = w[k].step;
    }
    elem_ = elem;
    run_bytes_ = size_t(run) * elem;
    base_ = 0;
    for (size_t d = 0; d < r; ++d) base_ += w[d].start * in_stride[d];
    base_ *= int64_t(elem);
    dims_ = k;
    rows_ = 1;
    for (size_t d = 0; d < k; ++d) {
      count_[d] = w[d].count;
      step_bytes_[d] = w[d].step * in_stride[d] * int64_t(elem);
      rows_ *= w[d].count;
    }
  }
  std::string detail() const override { return inner_step_ > 1 ? "gkrt strided slice copy" : "gkrt slice copy"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const char* x = static_cast<const char*>(in[0].data) + base_;
    char* y = static_cast<char*>(out[0].data);
    const int64_t min_rows = int64_t(std::max<size_t>(1, (64 << 10) / std::max<size_t>(run_bytes_, 1)));
    pool_.parallelFor(rows_, 1, min_rows, [&](int, int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t off = 0, rem = row;
        for (size_t d = dims_; d-- > 0;) {
          off += (rem % count_[d]) * step_bytes_[d];
          rem /= count_[d];
        }
        if (inner_step_ > 1) {
          stridedRun(x + off, y + size_t(row) * run_bytes_);
        } else {
          std::memcpy(y + size_t(row) * run_bytes_, x + off, run_bytes_);
        }
      }
    });
    return Status::Ok();
  }

 private:
  // One output row of a strided innermost window: run_bytes_ / elem_ values, inner_step_ apart.
  void stridedRun(const char* x, char* y) const {
    const int64_t n = int64_t(run_bytes_ / elem_), st = inner_step_;
    switch (elem_) {
      case 4: return copyStrided(reinterpret_cast<const uint32_t*>(x), reinterpret_cast<uint32_t*>(y), n, st);
      case 8: return copyStrided(reinterpret_cast<const uint64_t*>(x), reinterpret_cast<uint64_t*>(y), n, st);
      case 2: return copyStrided(reinterpret_cast<const uint16_t*>(x), reinterpret_cast<uint16_t*>(y), n, st);
      case 1: return copyStrided(reinterpret_cast<const uint8_t*>(x), reinterpret_cast<uint8_t*>(y), n, st);
      default:
        for (int64_t i = 0; i < n; ++i) std::memcpy(y + size_t(i) * elem_, x + size_t(i * st) * elem_, elem_);
    }
  }
  template <class T> static void copyStrided(const T* __restrict x, T* __restrict y, int64_t n, int64_t step) {
    if (step == 2) {
      for (int64_t i = 0; i < n; ++i) y[i] = x[2 * i];
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i * step];
    }
  }

  ThreadPool& pool_;
  size_t run_bytes_ = 0, dims_ = 0, elem_ = 1;
  int64_t inner_step_ = 1;
  int64_t base_ = 0, rows_ = 1;
  std::array<int64_t, kMaxRank> count_{}, step_bytes_{};
};

}  // namespace

bool canRunSlice(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || (std::strcmp(node.op->name, "StridedSlice") != 0 && std::strcmp(node.op->name, "Slice") != 0)) return false;
  if (node.inputs.size() != 1 || node.inputs[0] < 0 || node.outputs.size() != 1) return false;
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  if (!isStatic(x.shape) || !isStatic(y.shape) || x.shape.size() > kMaxRank || x.shape.empty() || numElements(y.shape) == 0) return false;
  auto w = ops::sliceWindows(node, x.shape);
  if (!w.ok()) return false;
  for (const ops::SliceWindow& s : *w) if (s.step <= 0) return false;  // reversed windows: the reference kernel
  return true;
}

std::unique_ptr<Kernel> compileSlice(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  const ir::Tensor& x = g.tensors[size_t(node.inputs[0])];
  auto w = ops::sliceWindows(node, x.shape);
  return std::make_unique<SliceKernel>(x.shape, *w, dtypeSize(x.dtype), pool);
}

}  // namespace gkrt::cpu
