// Convolutions with every epilogue form the GPU backends run differently
// (tests: CudaBackend.ConvolutionEpilogues*, CudaDialect.ConvolutionEpiloguePlans,
// OpenClBackend.ConvolutionEpiloguesMatchReference): conv + bias + ReLU, conv + bias +
// residual Add + ReLU (ResNet's block), conv without bias + ReLU, conv + HSwish
// (MobileNet-v3), conv + residual Add alone, and a plain 1x1 conv as the output.
//
//   auto g = testing::convEpilogueGraph();   // input x float32 [1, 8, 10, 10]
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/builder.h"

namespace gkrt::testing {

inline StatusOr<ir::Graph> convEpilogueGraph() {
  GraphBuilder b;
  uint32_t seed = 1;
  auto weights = [&](const Shape& s) {
    std::vector<float> v(static_cast<size_t>(numElements(s)));
    for (float& f : v) f = static_cast<float>(int((seed++ * 2654435761u) >> 24) - 128) / 1024.0f;
    return b.constant(s, v);
  };
  auto conv = [&](Value x, int64_t k, bool bias) {
    Conv2DAttrs a;
    a.pads = {k / 2, k / 2, k / 2, k / 2};
    std::vector<Value> in{x, weights({8, 8, k, k})};
    if (bias) in.push_back(weights({8}));
    return b.op1("Conv2D", in, a);
  };
  Value x = b.input("x", DType::kFloat32, {1, 8, 10, 10});
  Value stem = b.relu(conv(x, 3, true));
  Value y = b.relu(b.add(conv(stem, 3, true), stem));   // residual + ReLU
  y = b.relu(conv(y, 3, false));                        // no bias
  y = b.op1("HSwish", {conv(y, 3, true)});              // an activation cuDNN has no fused form for
  y = b.add(conv(y, 1, true), stem);                    // residual without an activation
  b.output(conv(y, 1, true), "y");
  return b.finish();
}

}  // namespace gkrt::testing
