// DynamicQuantizeLSTM (onnxruntime's com.microsoft op, as its dynamic quantizer writes
// every LSTM): an LSTM with int8/uint8 W [dirs, input, 4*hidden] and R [dirs, hidden,
// 4*hidden] (transposed against ONNX's LSTM), their scales and zero points per direction
// or per column, computed as onnxruntime computes it: X quantized to uint8 once over the
// whole sequence (DynamicQuantizeLinear's rule), h quantized to uint8 before every step
// over all batch rows, each product summed exactly in integers and rescaled by
// float(x_scale * w_scale[column]); gates, bias, peepholes and activations as LSTM's.
// Inputs: X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale,
// W_zero_point, R_scale, R_zero_point. Outputs Y, Y_h, Y_c as LSTM.
//
//   U8Quant q = dynamicU8(h, n);            // scale, zero point
//   quantizeU8(h, n, q, hq);                // hq[i] = sat(round(h[i] / scale) + zp)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gkrt::ops {

constexpr int kQlstmWScale = 8, kQlstmWZp = 9, kQlstmRScale = 10, kQlstmRZp = 11;

struct U8Quant {
  float scale = 1.0f;
  int zp = 0;
};

// DynamicQuantizeLinear's parameters: the range widened to include 0, scale = range /
// 255, zp = round(clamp(-min / scale, 0, 255)), in float32.
inline U8Quant dynamicU8(const float* x, int64_t n) {
  float maxx = 0.0f, minx = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    maxx = std::max(maxx, x[i]);
    minx = std::min(minx, x[i]);
  }
  U8Quant q;
  q.scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
  q.zp = static_cast<int>(std::nearbyint(std::clamp(0.0f - minx / q.scale, 0.0f, 255.0f)));
  return q;
}

// round(x / scale) + zp saturated, NaN as 0: rounded half to even by adding and taking
// off 1.5 * 2^23 (exact in float32's default rounding, as nearbyint; no libm call), the
// quotient first clamped to +-2^22 (the result saturates long before).
inline void quantizeU8(const float* x, int64_t n, U8Quant q, uint8_t* out) {
  const float zp = static_cast<float>(q.zp);
  constexpr float kRound = 12582912.0f, kClamp = 4194304.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / q.scale;
    v = v == v ? std::min(std::max(v, -kClamp), kClamp) : -kClamp;
    v = ((v + kRound) - kRound) + zp;
    out[i] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(v, 0.0f), 255.0f)));
  }
}

}  // namespace gkrt::ops
