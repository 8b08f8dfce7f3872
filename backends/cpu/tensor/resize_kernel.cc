#include "backends/cpu/tensor/resize_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

// One output axis: for each output index, the two source indices and the weight of
// the second (nearest: both the same index, weight 0).
struct AxisTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> f;
};

AxisTaps tapsFor(const ResizeAttrs& a, int64_t in_len, int64_t out_len, float scale) {
  AxisTaps t;
  for (int64_t o = 0; o < out_len; ++o) {
    const double s = ops::resizeSourceCoord(a.coordinate_transformation, o, in_len, out_len, scale);
    if (a.mode == ResizeMode::kNearest) {
      const int64_t k = ops::resizeNearestIndex(a.nearest_mode, s, in_len);
      t.i0.push_back(k);
      t.i1.push_back(k);
      t.f.push_back(0.0f);
      continue;
    }
    const double c = std::clamp(s, 0.0, static_cast<double>(in_len - 1));
    const int64_t k0 = static_cast<int64_t>(c);
    t.i0.push_back(k0);
    t.i1.push_back(std::min(k0 + 1, in_len - 1));
    t.f.push_back(static_cast<float>(c - static_cast<double>(k0)));
  }
  return t;
}

class ResizeKernel final : public Kernel {
 public:
  // Each pixel is `pixel` consecutive floats: 1 in NCHW, the block in channel-blocked
  // layouts (planes are then (n, channel block) pairs).
  ResizeKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block) : pool_(pool) {
    const auto& a = node.attrs.get<ResizeAttrs>();
    const Shape& x = g.tensors[node.inputs[0]].shape;
    pixel_ = block > 0 ? block : 1;
    planes_ = x[0] * x[1] / pixel_;
    ih_ = x[2];
    iw_ = x[3];
    oh_ = a.sizes[0];
    ow_ = a.sizes[1];
    nearest_ = a.mode == ResizeMode::kNearest;
    rows_ = tapsFor(a, ih_, oh_, a.scale_h);
    cols_ = tapsFor(a, iw_, ow_, a.scale_w);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t P = pixel_;
    pool_.parallelFor(planes_ * oh_, 1, 4, [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t p = r / oh_, h = r % oh_;
        const float* src0 = x + (p * ih_ + rows_.i0[h]) * iw_ * P;
        float* dst = y + r * ow_ * P;
        if (nearest_) {
          // The row above read the same source row (an upsample): copy it.
          if (r > begin && h > 0 && rows_.i0[h] == rows_.i0[h - 1]) {
            std::memcpy(dst, dst - ow_ * P, size_t(ow_ * P) * sizeof(float));
            continue;
          }
          switch (P) {
            case 1: nearestRow<1>(src0, dst); break;
            case 8: nearestRow<8>(src0, dst); break;
            case 16: nearestRow<16>(src0, dst); break;
            default:
              for (int64_t w = 0; w < ow_; ++w) std::memcpy(dst + w * P, src0 + cols_.i0[w] * P, P * sizeof(float));
          }
          continue;
        }
        const float* src1 = x + (p * ih_ + rows_.i1[h]) * iw_ * P;
        const float fy = rows_.f[h];
        for (int64_t w = 0; w < ow_; ++w) {
          const int64_t x0 = cols_.i0[w] * P, x1 = cols_.i1[w] * P;
          const float fx = cols_.f[w];
          for (int64_t c = 0; c < P; ++c) {
            const float top = src0[x0 + c] + fx * (src0[x1 + c] - src0[x0 + c]);
            const float bottom = src1[x0 + c] + fx * (src1[x1 + c] - src1[x0 + c]);
            dst[w * P + c] = top + fy * (bottom - top);
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  // One output row of nearest taps, pixels of P floats (a compile-time size: the copies inline).
  template <int P> void nearestRow(const float* __restrict src, float* __restrict dst) const {
    const int64_t* i0 = cols_.i0.data();
    for (int64_t w = 0; w < ow_; ++w) {
      const float* s = src + i0[w] * P;
      for (int c = 0; c < P; ++c) dst[w * P + c] = s[c];
    }
  }

  ThreadPool& pool_;
  int64_t planes_ = 0, ih_ = 0, iw_ = 0, oh_ = 0, ow_ = 0, pixel_ = 1;
  bool nearest_ = true;
  AxisTaps rows_, cols_;
};

}  // namespace

bool canRunResize(const ir::Graph& g, const ir::Node& node) {
  if (std::string(node.op->name) != "Resize" || node.inputs.empty() || node.outputs.size() != 1) return false;
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  const auto& a = node.attrs.get<ResizeAttrs>();
  return x.dtype == DType::kFloat32 && y.dtype == DType::kFloat32 && x.shape.size() == 4 && isStatic(x.shape) &&
         numElements(x.shape) > 0 && a.sizes.size() == 2 && (a.mode == ResizeMode::kNearest || a.mode == ResizeMode::kLinear);
}

StatusOr<std::unique_ptr<Kernel>> compileResize(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                int block) {
  return std::unique_ptr<Kernel>(new ResizeKernel(g, node, pool, block));
}

}  // namespace gkrt::cpu
