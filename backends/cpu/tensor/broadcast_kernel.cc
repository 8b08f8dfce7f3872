#include "backends/cpu/tensor/broadcast_kernel.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

constexpr size_t kMaxRank = 8;

class BroadcastKernel final : public Kernel {
 public:
  // x right-aligned to y's rank (leading dims of 1); every y dim a multiple of x's.
  BroadcastKernel(const Shape& x, const Shape& y, size_t elem, ThreadPool& pool) : pool_(pool), elem_(elem) {
    const size_t pad = y.size() - x.size();
    Shape xs(pad, 1);
    xs.insert(xs.end(), x.begin(), x.end());
    // The contiguous run: the innermost dims where x and y agree.
    size_t inner = y.size();
    run_ = 1;
    while (inner > 0 && xs[inner - 1] == y[inner - 1]) run_ *= y[--inner];
    rank_ = inner;  // the dims iterated, outer to inner
    int64_t s = run_;
    for (size_t d = inner; d-- > 0;) x_stride_[d] = s, s *= xs[d];
    for (size_t d = 0; d < inner; ++d) x_[d] = xs[d], y_[d] = y[d];
    runs_ = 1;
    for (size_t d = 0; d < inner; ++d) runs_ *= y[d];
  }
  std::string detail() const override { return "gkrt broadcast copy"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    const size_t run_bytes = size_t(run_) * elem_;
    // A run of one element broadcast along the last iterated dim: that dim's copies of
    // it are filled at once (a row of y), not copied one element at a time.
    const bool fill_rows = run_ == 1 && rank_ > 0 && x_[rank_ - 1] == 1;
    const int64_t per_task = fill_rows ? y_[rank_ - 1] : 1;
    const int64_t tasks = runs_ / per_task;
    const size_t task_bytes = size_t(per_task) * run_bytes;
    pool_.parallelFor(tasks, 1, std::max<int64_t>(1, (64 << 10) / std::max<int64_t>(int64_t(task_bytes), 1)),
                      [&](int, int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t r0 = t * per_task;  // the first run of the task
        int64_t off = 0, rem = r0;
        for (size_t d = rank_; d-- > 0;) {
          const int64_t i = rem % y_[d];
          rem /= y_[d];
          off += (i % x_[d]) * x_stride_[d];
        }
        char* dst = y + size_t(r0) * run_bytes;
        const char* src = x + size_t(off) * elem_;
        if (!fill_rows) {
          std::memcpy(dst, src, run_bytes);
          continue;
        }
        std::memcpy(dst, src, elem_);  // then doubling copies of the filled part
        for (size_t have = elem_, want = task_bytes; have < want; have *= 2) {
          std::memcpy(dst + have, dst, std::min(have, want - have));
        }
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  size_t elem_, rank_ = 0;
  int64_t run_ = 1, runs_ = 1;
  std::array<int64_t, kMaxRank> x_{}, y_{}, x_stride_{};
};

}  // namespace

bool canRunBroadcast(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || (std::strcmp(node.op->name, "BroadcastTo") != 0 && std::strcmp(node.op->name, "Tile") != 0)) return false;
  if (node.inputs.empty() || node.inputs[0] < 0 || node.outputs.size() != 1) return false;
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  if (!isStatic(x.shape) || !isStatic(y.shape) || x.dtype != y.dtype || x.shape.size() > y.shape.size() ||
      y.shape.size() > kMaxRank || numElements(y.shape) == 0 || numElements(x.shape) == 0 || dtypeSize(x.dtype) == 0) {
    return false;
  }
  const size_t pad = y.shape.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (y.shape[pad + d] % x.shape[d] != 0) return false;
  }
  return true;
}

std::unique_ptr<Kernel> compileBroadcast(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  return std::make_unique<BroadcastKernel>(x.shape, y.shape, dtypeSize(x.dtype), pool);
}

}  // namespace gkrt::cpu
