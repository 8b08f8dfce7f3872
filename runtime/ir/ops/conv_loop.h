// The direct NCHW Conv2D loop of the reference kernels (linear.cc: float Conv2D;
// quant_linear.cc: ConvInteger/QLinearConv): for each output element, the (input,
// weight) flat index pairs of its window that fall inside the input (padding skipped).
//
//   directConv2D(a, x.shape, w.shape, y.shape,
//                [&](int64_t o) { return init(o); },               // the accumulator of channel o
//                [&](auto& acc, int64_t xi, int64_t wi) { ... },   // one tap
//                [&](int64_t out, auto acc, int64_t o) { ... });   // the finished element
#pragma once

#include <cstdint>

#include "runtime/ir/attrs.h"
#include "runtime/ir/shape.h"

namespace gkrt::ops {

template <class Init, class Tap, class Store>
void directConv2D(const Conv2DAttrs& a, const Shape& xs, const Shape& ws, const Shape& ys, Init&& init, Tap&& tap,
                  Store&& store) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = ys[2], OW = ys[3], OG = O / a.groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          auto acc = init(o);
          for (int64_t ci = 0; ci < CG; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * a.strides[0] - a.pads[0] + kh * a.dilations[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * a.strides[1] - a.pads[1] + kw * a.dilations[1];
                if (iw < 0 || iw >= W) continue;
                tap(acc, ((n * C + g * CG + ci) * H + ih) * W + iw, ((o * CG + ci) * KH + kh) * KW + kw);
              }
            }
          store(((n * O + o) * OH + oh) * OW + ow, acc, o);
        }
    }
}

}  // namespace gkrt::ops
