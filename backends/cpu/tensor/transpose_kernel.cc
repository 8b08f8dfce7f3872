#include "backends/cpu/tensor/transpose_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

// A permutation copy, planned at compile: input axes that stay adjacent and in order
// are merged, so [1,128,12,64] -> perm (0,2,1,3) becomes a copy of 64-element runs in
// a 2-D loop. Output rows (all axes but the last) are split across threads; the last
// axis is a memcpy when it is contiguous in the input, a strided gather otherwise.
class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : pool_(pool) {
    const ir::Tensor& x = g.tensors[node.inputs[0]];
    elem_ = dtypeSize(x.dtype);
    const Shape& s = x.shape;
    const Ints& perm = node.attrs.get<PermAttrs>().perm;
    std::vector<int64_t> in_stride(s.size(), 1);
    for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * s[d + 1];
    // Output axes in order with their extents and input strides; size-1 axes dropped,
    // neighbours merged when the input walks them contiguously.
    for (int64_t p : perm) {
      if (s[p] == 1) continue;
      if (!dims_.empty() && dims_.back().stride == in_stride[p] * s[p]) {
        dims_.back().extent *= s[p];
        dims_.back().stride = in_stride[p];
      } else {
        dims_.push_back({s[p], in_stride[p]});
      }
    }
    if (dims_.empty()) dims_.push_back({1, 1});
    rows_ = 1;
    for (size_t d = 0; d + 1 < dims_.size(); ++d) rows_ *= dims_[d].extent;
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    const Dim last = dims_.back();
    const int64_t row_bytes = last.extent * static_cast<int64_t>(elem_);
    pool_.parallelFor(rows_, 1, std::max<int64_t>(1, (32 << 10) / std::max<int64_t>(row_bytes, 1)),
                      [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, offset = 0;
        for (int64_t d = static_cast<int64_t>(dims_.size()) - 2; d >= 0; --d) {
          offset += rem % dims_[d].extent * dims_[d].stride;
          rem /= dims_[d].extent;
        }
        const char* src = x + offset * static_cast<int64_t>(elem_);
        char* dst = y + r * row_bytes;
        if (last.stride == 1) {
          std::memcpy(dst, src, static_cast<size_t>(row_bytes));
        } else {
          gather(dst, src, last.extent, last.stride);
        }
      }
    });
    return Status::Ok();
  }

 private:
  struct Dim { int64_t extent, stride; };

  template <class T> static void gatherAs(char* dst, const char* src, int64_t n, int64_t stride) {
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
  }
  void gather(char* dst, const char* src, int64_t n, int64_t stride) const {
    switch (elem_) {
      case 1: return gatherAs<uint8_t>(dst, src, n, stride);
      case 2: return gatherAs<uint16_t>(dst, src, n, stride);
      case 4: return gatherAs<uint32_t>(dst, src, n, stride);
      case 8: return gatherAs<uint64_t>(dst, src, n, stride);
      default:
        for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * elem_, src + i * stride * elem_, elem_);
    }
  }

  ThreadPool& pool_;
  size_t elem_ = 4;
  std::vector<Dim> dims_;
  int64_t rows_ = 1;
};

}  // namespace

bool canRunTranspose(const ir::Graph& g, const ir::Node& node) {
  return std::string(node.op->name) == "Transpose" &&
         node.attrs.get<PermAttrs>().perm.size() == g.tensors[node.inputs[0]].shape.size();
}

StatusOr<std::unique_ptr<Kernel>> compileTranspose(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::unique_ptr<Kernel>(new TransposeKernel(g, node, pool));
}

}  // namespace gkrt::cpu
