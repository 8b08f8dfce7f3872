// 2-D max and average pooling on plain tensors: float32 (NCHW) and int8/uint8 max
// pooling (NCHW or NHWC: the int8 layout plan keeps a quantized CNN's activations NHWC),
// and the window arithmetic every cpu pooling kernel shares (the channel-blocked one in
// blocked_pool.cc too). NaN is skipped by max as by the reference.
//
//   PoolWindow w = PoolWindow::at(attrs, H, W, oh, ow);   // rows [hb, he), columns [wb, we)
//   auto k = makePoolKernel(node, DType::kInt8, /*max=*/true, /*nhwc=*/true, pool);
#pragma once

#include <algorithm>
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/ir/attrs.h"

namespace gkrt::cpu {

// One output position's window inside an H x W input, and an average's divisor
// (count_include_pad counts the padded cells up to H + pad_end, W + pad_end).
struct PoolWindow {
  int64_t hb, he, wb, we, count;
  static PoolWindow at(const PoolAttrs& a, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    const int64_t h0 = oh * a.strides[0] - a.pads[0], h1 = std::min(h0 + a.kernel[0], H + a.pads[2]);
    const int64_t w0 = ow * a.strides[1] - a.pads[1], w1 = std::min(w0 + a.kernel[1], W + a.pads[3]);
    PoolWindow p{std::max<int64_t>(h0, 0), std::min(h1, H), std::max<int64_t>(w0, 0), std::min(w1, W), 1};
    p.count = std::max<int64_t>(a.count_include_pad ? (h1 - h0) * (w1 - w0) : (p.he - p.hb) * (p.we - p.wb), 1);
    return p;
  }
};

// `node`: MaxPool or AvgPool (2-D, 4-D tensors). `dtype`: float32, or int8/uint8 with
// `max`. `nhwc`: activations channels-last (max only). kInternal for other asks.
StatusOr<std::unique_ptr<Kernel>> makePoolKernel(const ir::Node& node, DType dtype, bool max, bool nhwc, ThreadPool& pool);

}  // namespace gkrt::cpu
