#include "backends/cpu/quantization/conv_zero_points.h"

#include <algorithm>

#include "backends/cpu/quantization/quant_kernels.h"

namespace gkrt::cpu {

ConvWeightZeroPoints::ConvWeightZeroPoints(const ConvGeometry& q, std::vector<int32_t> c, bool x_nhwc, bool y_nhwc)
    : q_(q), c_(std::move(c)), x_nhwc_(x_nhwc), y_nhwc_(y_nhwc) {
  chan_sum_.resize(size_t(q.N * q.G * q.H * q.W));
  win_sum_.resize(size_t(q.N * q.G * q.OH * q.OW));
}

// Row r = (n, g, h) of the channel sums: sum over g's channels of x - xz, per pixel of the row.
template <class T> void ConvWeightZeroPoints::channelSumRow(const T* x, int32_t xz, int64_t r, int32_t* __restrict out) const {
  const ConvGeometry& q = q_;
  const int64_t HW = q.H * q.W, CG = q.C / q.G, h = r % q.H, ng = r / q.H, n = ng / q.G, g = ng % q.G;
  const int32_t base = -static_cast<int32_t>(CG) * xz;
  for (int64_t w = 0; w < q.W; ++w) out[w] = base;
  if (!x_nhwc_) {
    for (int64_t c = g * CG; c < (g + 1) * CG; ++c) {
      const T* xr = x + (n * q.C + c) * HW + h * q.W;
      for (int64_t w = 0; w < q.W; ++w) out[w] += xr[w];
    }
  } else {
    for (int64_t w = 0; w < q.W; ++w) {
      const T* xp = x + ((n * q.H + h) * q.W + w) * q.C + g * CG;
      int32_t acc = 0;
      for (int64_t c = 0; c < CG; ++c) acc += xp[c];
      out[w] += acc;
    }
  }
}

void ConvWeightZeroPoints::apply(const TensorView& x, int32_t xz, const MutableTensorView& y, ThreadPool& pool) {
  const ConvGeometry& q = q_;
  const int64_t HW = q.H * q.W, OHW = q.OH * q.OW, CG = q.C / q.G, OG = q.O / q.G;
  int32_t* s = chan_sum_.data();
  int32_t* win = win_sum_.data();
  pool.parallelFor(q.N * q.G * q.H, 1, std::max<int64_t>(1, kQuantMinPerThread / (q.W * CG)), [&](int, int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if (x.dtype == DType::kUInt8) channelSumRow(x.as<uint8_t>(), xz, r, s + r * q.W);
      else channelSumRow(x.as<int8_t>(), xz, r, s + r * q.W);
    }
  });
  pool.parallelFor(q.N * q.G * q.OH, 1, std::max<int64_t>(1, kQuantMinPerThread / (q.OW * q.KH * q.KW)), [&](int, int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t ng = r / q.OH, oh = r % q.OH;
      const int32_t* sp = s + ng * HW;
      for (int64_t ow = 0; ow < q.OW; ++ow) {
        int32_t acc = 0;
        for (int64_t kh = 0; kh < q.KH; ++kh) {
          const int64_t ih = oh * q.SH - q.PH + kh * q.DH;
          if (ih < 0 || ih >= q.H) continue;
          for (int64_t kw = 0; kw < q.KW; ++kw) {
            const int64_t iw = ow * q.SW - q.PW + kw * q.DW;
            if (iw >= 0 && iw < q.W) acc += sp[ih * q.W + iw];
          }
        }
        win[r * q.OW + ow] = acc;
      }
    }
  });
  int32_t* yo = y.as<int32_t>();
  if (!y_nhwc_) {
    pool.parallelFor(q.N * q.O, 1, std::max<int64_t>(1, kQuantMinPerThread / OHW), [&](int, int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t n = r / q.O, o = r % q.O;
        const int32_t c = c_[o];
        const int32_t* wp = win + (n * q.G + o / OG) * OHW;
        int32_t* yp = yo + r * OHW;
        for (int64_t p = 0; p < OHW; ++p) yp[p] -= c * wp[p];
      }
    });
  } else {
    pool.parallelFor(q.N * OHW, 1, std::max<int64_t>(1, kQuantMinPerThread / q.O), [&](int, int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t n = r / OHW, p = r % OHW;
        int32_t* yp = yo + r * q.O;
        for (int64_t o = 0; o < q.O; ++o) yp[o] -= c_[o] * win[(n * q.G + o / OG) * OHW + p];
      }
    });
  }
}

}  // namespace gkrt::cpu
