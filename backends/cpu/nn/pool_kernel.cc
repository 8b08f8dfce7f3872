#include "backends/cpu/nn/pool_kernel.h"

#include <cstdint>
#include <limits>
#include <string>

namespace gkrt::cpu {
namespace {

constexpr int64_t kMinWorkPerTask = 8192;  // window reads a task takes at least

template <class T> T lowest() { return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest(); }

// y[c] = max(y[c], x[c]) over distinct rows: vectorises without alias checks.
template <class T>
void maxInto(T* __restrict y, const T* __restrict x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] = x[c] > y[c] ? x[c] : y[c];
}

template <class T, bool kMax>
class PoolKernel final : public Kernel {
 public:
  PoolKernel(const PoolAttrs& a, bool nhwc, ThreadPool& pool) : a_(a), nhwc_(nhwc), pool_(pool) {}

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    // The views carry the logical NCHW shapes in either layout.
    const Shape &xs = in[0].shape, &ys = out[0].shape;
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
    const int64_t window = std::max<int64_t>(a_.kernel[0] * a_.kernel[1], 1);
    if (kMax && nhwc_) {  // one output row (n, oh) a task, every channel at once (max only: makePoolKernel)
      pool_.parallelFor(N * OH, 1, std::max<int64_t>(1, kMinWorkPerTask / std::max<int64_t>(OW * C * window, 1)),
                        [&](int, int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t n = r / OH, oh = r % OH;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const PoolWindow p = PoolWindow::at(a_, H, W, oh, ow);
            T* yr = y + ((n * OH + oh) * OW + ow) * C;
            std::fill(yr, yr + C, lowest<T>());
            for (int64_t h = p.hb; h < p.he; ++h) {
              for (int64_t w = p.wb; w < p.we; ++w) maxInto(yr, x + ((n * H + h) * W + w) * C, C);
            }
          }
        }
      });
      return Status::Ok();
    }
    pool_.parallelFor(N * C, 1, std::max<int64_t>(1, kMinWorkPerTask / std::max<int64_t>(OH * OW * window, 1)),
                      [&](int, int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const T* xp = x + plane * H * W;
        T* yp = y + plane * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const PoolWindow p = PoolWindow::at(a_, H, W, oh, ow);
            if (kMax) {
              T m = lowest<T>();
              for (int64_t h = p.hb; h < p.he; ++h) {
                for (int64_t w = p.wb; w < p.we; ++w) m = xp[h * W + w] > m ? xp[h * W + w] : m;  // NaN skipped
              }
              yp[oh * OW + ow] = m;
            } else {
              float acc = 0.0f;
              for (int64_t h = p.hb; h < p.he; ++h) {
                for (int64_t w = p.wb; w < p.we; ++w) acc += static_cast<float>(xp[h * W + w]);
              }
              yp[oh * OW + ow] = static_cast<T>(acc / static_cast<float>(p.count));
            }
          }
        }
      }
    });
    return Status::Ok();
  }
  std::string detail() const override {
    return std::string(sizeof(T) == 1 ? "own int8 max pool" : "own") + (nhwc_ ? ", nhwc" : "");
  }

 private:
  PoolAttrs a_;
  bool nhwc_;
  ThreadPool& pool_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> makePoolKernel(const ir::Node& node, DType dtype, bool max, bool nhwc, ThreadPool& pool) {
  const PoolAttrs& a = node.attrs.get<PoolAttrs>();
  if ((nhwc && !max) || (!max && dtype != DType::kFloat32)) {
    return makeError(StatusCode::kInternal, "cpu: ", node.name, ": no own ", max ? "max" : "average", " pooling of ",
                     dtypeName(dtype), nhwc ? " in NHWC" : "");
  }
  std::unique_ptr<Kernel> k;
  if (dtype == DType::kInt8) k = std::make_unique<PoolKernel<int8_t, true>>(a, nhwc, pool);
  else if (dtype == DType::kUInt8) k = std::make_unique<PoolKernel<uint8_t, true>>(a, nhwc, pool);
  else if (max) k = std::make_unique<PoolKernel<float, true>>(a, nhwc, pool);
  else k = std::make_unique<PoolKernel<float, false>>(a, nhwc, pool);
  return k;
}

}  // namespace gkrt::cpu
