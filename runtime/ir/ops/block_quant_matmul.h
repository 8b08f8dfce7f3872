// BlockQuantMatMul: a matmul against weights quantized in blocks along K and kept in
// their blocks (4 or 8 bits a weight, a float scale and offset per block), the form of
// onnxruntime's MatMulNBits and of GGUF's Q4_0, Q4_1, Q8_0, Q4_K and Q6_K:
//
//   BlockQuantMatMul(x [..., K] float32, w [N, blocks, blob] uint8 or int8,
//                    scales [N, blocks] float32, offsets [N, blocks] float32 (optional),
//                    bias [N] float32 (optional)) -> y [..., N]
//   weight(n, k) = q(n, k) * scales[n, k / B] + offsets[n, k / B]   (no offsets: + 0)
//
// Attributes (QuantAttrs): block_size B; `to` the stored values: kUInt4 (0..15) or kInt4
// (-8..7, two's complement) two a byte, the even k in the low nibble (blob = B / 2), or
// kInt8 (blob = B); `precision`
// kFloat32 (x as it is) or kInt8: x may be quantized per block of B values of a row to
// int8 with scale max|x| / 127 (round to nearest even), the accuracy onnxruntime's
// MatMulNBits accuracy_level 4 and llama.cpp's Q8 activations allow. The reference
// kernel and the small-M cpu kernels then compute exactly that:
//   y = sum over blocks of sx * (scale * sum(qx * q) + offset * sum(qx)) + bias;
// kernels may compute more exactly (the cpu's float prefill GEMM, on CPUs without
// avx512_vnni, does).
// Rows k >= K of the last block (K need not be a multiple of B) are ignored. gkrt's own
// op; the ONNX importer writes it for MatMulNBits (offset = -zero_point * scale).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/ir/attrs.h"
#include "runtime/ir/shape.h"
#include "runtime/ir/status.h"

namespace gkrt::ops {

struct BlockQuantDims {
  int64_t M = 0, K = 0, N = 0;      // rows of x, its last dim, output columns
  int64_t block = 0, blocks = 0;    // B and ceil(K / B)
  int64_t blob = 0;                 // bytes of one block of one column
  bool nibbles = false;             // 4-bit values (else int8)
  bool signed_nibbles = false;      // kInt4: a nibble u holds u - 16 when u >= 8
  bool int8_activations = false;    // precision kInt8
  bool offsets = false, bias = false;
};

// Checks the shapes against the attributes (messages name the input and the rule).
StatusOr<BlockQuantDims> blockQuantDims(const Shape& x, const Shape& w, const Shape& scales, const Shape* offsets,
                                        const Shape* bias, const QuantAttrs& a);

// Quantizes n (<= B) values of x to int8 (q = round_half_even(x * 127 / max|x|)) and
// returns the scale max|x| / 127 (0 for a block of zeros). The one definition every
// kernel uses, so the int8 paths agree bit for bit on the quantized values.
inline float quantizeActivationBlock(const float* x, int64_t n, int8_t* q, int32_t* qsum) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));  // a NaN skipped, as fmax would (no libm call)
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  int32_t s = 0;
  for (int64_t i = 0; i < n; ++i) {
    // x * inv (|v| <= 127) to the nearest integer, ties to even, as std::nearbyint in the
    // default rounding mode: adding and taking away 1.5 * 2^23 rounds there without a libm
    // call, so the loop vectorises (nearbyintf a value was 6% of a SmolLM2 decode step).
    // Callers compile without FMA contraction (-ffp-contract=off): v must be rounded first.
    const float v = x[i] * inv;
    q[i] = static_cast<int8_t>((v + 12582912.0f) - 12582912.0f);
    s += q[i];
  }
  *qsum = s;
  return amax / 127.0f;
}

}  // namespace gkrt::ops
