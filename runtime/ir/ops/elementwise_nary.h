// A float elementwise kernel over N broadcast inputs: y = F(x0, ..., xN-1), computed
// in float32. Shared by the arithmetic, activation-gradient and optimizer families.
#pragma once

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

template <size_t N, class F> Status floatNaryKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const MutableTensorView& y = c.out(0);
  std::array<const Shape*, N> shapes;
  for (size_t k = 0; k < N; ++k) shapes[k] = &c.in(k).shape;
  forEachBroadcast<N>(y.shape, shapes, [&](int64_t i, const std::array<int64_t, N>& o) {
    float v[N];
    for (size_t k = 0; k < N; ++k) v[k] = loadF(c.in(k).data, c.in(k).dtype, o[k]);
    storeF(y.data, y.dtype, i, f(v));
  });
  return Status::Ok();
}

}  // namespace gkrt::ops
