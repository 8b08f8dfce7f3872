// ConvInteger's weight zero points, which oneDNN's int8 convolutions do not take, taken
// off their int32 sums after (onednn_int8.cc): sum (x - xz)(w - wz) = sum (x - xz) w8 -
// c[o] * sum (x - xz), w8 the weights as oneDNN ran them (w - 128 for uint8 weights, then
// c = wz - 128), the second sum over o's window and its group's channels (padding adds
// nothing, as in the reference). Channel sums per input pixel, then window sums per output
// pixel, then y -= c[o] * window sum; NCHW or NHWC activations. Buffers made at compile.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

struct ConvGeometry {
  int64_t N, C, H, W, G, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
};

class ConvWeightZeroPoints {
 public:
  // c[o] per output channel; x and y in NHWC when the flags say so, else NCHW.
  ConvWeightZeroPoints(const ConvGeometry& q, std::vector<int32_t> c, bool x_nhwc, bool y_nhwc);
  // y (int32 sums of (x - xz) w8) -= c[o] * window sum of x - xz.
  void apply(const TensorView& x, int32_t xz, const MutableTensorView& y, ThreadPool& pool);

 private:
  template <class T> void channelSumRow(const T* x, int32_t xz, int64_t r, int32_t* out) const;

  ConvGeometry q_;
  std::vector<int32_t> c_;
  bool x_nhwc_, y_nhwc_;
  std::vector<int32_t> chan_sum_, win_sum_;
};

}  // namespace gkrt::cpu
