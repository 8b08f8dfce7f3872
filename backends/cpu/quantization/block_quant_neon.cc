// The aarch64 loops of the block-quant kernel (block_quant_parts.h), B a multiple of 32:
// int8 activations on CPUs with the dot-product instructions (Armv8.2 FEAT_DotProd), where
// SDOT adds four int8 products into each int32 lane, so a block's integer dot product is
// exact, as the portable loop's, and the block's scales then apply in float; float
// activations on NEON, the values widened to float in registers. Only the SDOT loop is
// built for armv8.2-a+dotprod (a target attribute), and the kernel calls it only where
// the CPU tier includes dotprod.
#include "backends/cpu/quantization/block_quant_parts.h"

#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#include <arm_neon.h>

#include "backends/cpu/cpu_tier.h"

namespace gkrt::cpu::block_quant {
namespace {

#define GKRT_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

// 16 bytes of nibbles (32 values, value k in byte k / 2) as two vectors of int8 values:
// the low nibbles (the even values) and the high ones (the odd values). Signed nibbles
// are sign-extended by shifts; unsigned ones stay 0..15.
inline void nibblesNeon(const uint8_t* p, bool is_signed, int8x16_t* evens, int8x16_t* odds) {
  const uint8x16_t raw = vld1q_u8(p);
  if (is_signed) {
    const int8x16_t s = vreinterpretq_s8_u8(raw);
    *evens = vshrq_n_s8(vshlq_n_s8(s, 4), 4);
    *odds = vshrq_n_s8(s, 4);
  } else {
    *evens = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0F)));
    *odds = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
  }
}
// A column's 32 values of chunk k in block b as two vectors of int8 values, the pairs of
// x's 32 values [0, 16) and [16, 32) in x's order (Order kChunks32 for nibbles: the even
// values then the odd ones; kNatural for 8-bit values).
inline void chunkValues(const BlockQuantDims& d, const uint8_t* blk, int64_t k, int8x16_t* wa, int8x16_t* wb) {
  if (d.nibbles) {
    nibblesNeon(blk + k * 16, d.signed_nibbles, wa, wb);
  } else {
    *wa = vld1q_s8(reinterpret_cast<const int8_t*>(blk + k * 32));
    *wb = vld1q_s8(reinterpret_cast<const int8_t*>(blk + k * 32 + 16));
  }
}

// One block's sums for R rows against NC columns from column n, as floats in four lanes,
// and the factor each row's sums take beside the column's scale (x's block scale for int8
// activations, 1 for float ones): SDOT on int8 x, or the values widened to float.
struct DotProdBlock {
  template <int R, int NC>
  GKRT_TARGET_DOTPROD static inline void sums(const BlockQuantDims& d, const Rows& x, const uint8_t* wn, int64_t b,
                                              float32x4_t (&t)[R][NC], float (&sx)[R]) {
    const int64_t col_bytes = d.blocks * d.blob, at = b * d.block;
    int32x4_t dot[R][NC];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < NC; ++c) dot[r][c] = vdupq_n_s32(0);
    for (int64_t k = 0; k < d.block / 32; ++k) {
      int8x16_t xa[R], xb[R];
      for (int r = 0; r < R; ++r) {
        const int8_t* xq = x.q + r * x.stride + at + k * 32;
        xa[r] = vld1q_s8(xq);
        xb[r] = vld1q_s8(xq + 16);
      }
      for (int c = 0; c < NC; ++c) {
        int8x16_t wa, wb;
        chunkValues(d, wn + c * col_bytes + b * d.blob, k, &wa, &wb);
        for (int r = 0; r < R; ++r) dot[r][c] = vdotq_s32(vdotq_s32(dot[r][c], wa, xa[r]), wb, xb[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      sx[r] = x.scale[size_t(r * d.blocks + b)];
      for (int c = 0; c < NC; ++c) t[r][c] = vcvtq_f32_s32(dot[r][c]);
    }
  }
};

// 16 int8 values times 16 floats of x, added into four lanes.
inline float32x4_t dot16(int8x16_t v, const float* xr, float32x4_t t) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_s8(vget_high_s8(v));
  t = vfmaq_f32(t, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(xr));
  t = vfmaq_f32(t, vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), vld1q_f32(xr + 4));
  t = vfmaq_f32(t, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(xr + 8));
  return vfmaq_f32(t, vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), vld1q_f32(xr + 12));
}

struct FloatBlock {
  template <int R, int NC>
  static inline void sums(const BlockQuantDims& d, const Rows& x, const uint8_t* wn, int64_t b, float32x4_t (&t)[R][NC],
                          float (&sx)[R]) {
    const int64_t col_bytes = d.blocks * d.blob, at = b * d.block;
    for (int r = 0; r < R; ++r) {
      sx[r] = 1.0f;
      for (int c = 0; c < NC; ++c) t[r][c] = vdupq_n_f32(0.0f);
    }
    for (int64_t k = 0; k < d.block / 32; ++k) {
      for (int c = 0; c < NC; ++c) {
        int8x16_t wa, wb;
        chunkValues(d, wn + c * col_bytes + b * d.blob, k, &wa, &wb);
        for (int r = 0; r < R; ++r) {
          const float* xr = x.f + r * x.stride + at + k * 32;
          t[r][c] = dot16(wb, xr + 16, dot16(wa, xr, t[r][c]));
        }
      }
    }
  }
};

// R rows against NC columns from column n: each block's sums scaled by the column's scale
// (and the row's factor) into a float accumulator, the offsets' term (offset times the
// block's sum of x) added per block; then the lanes, that term and the bias into y.
template <class Block, int R, int NC>
__attribute__((always_inline)) inline void streamColumns(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n,
                                                         float* y) {
  const uint8_t* wn = w.w + n * d.blocks * d.blob;
  float32x4_t acc[R][NC];
  float off[R][NC] = {};
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < d.blocks; ++b) {
    float32x4_t t[R][NC];
    float sx[R];
    Block::template sums<R, NC>(d, x, wn, b, t, sx);
    for (int c = 0; c < NC; ++c) {
      const float s = w.scales[(n + c) * d.blocks + b];
      const float o = w.offsets ? w.offsets[(n + c) * d.blocks + b] : 0.0f;
      for (int r = 0; r < R; ++r) {
        acc[r][c] = vfmaq_n_f32(acc[r][c], t[r][c], s * sx[r]);
        off[r][c] += o * x.sum[size_t(r * d.blocks + b)];
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    const float bias = w.bias ? w.bias[n + c] : 0.0f;
    for (int r = 0; r < R; ++r) y[r * d.N + n + c] = vaddvq_f32(acc[r][c]) + off[r][c] + bias;
  }
}

// The SDOT loop is its own function built for dotprod; the float loop runs on any NEON.
template <int R, int NC>
GKRT_TARGET_DOTPROD void streamColumnsDotProd(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* y) {
  streamColumns<DotProdBlock, R, NC>(d, w, x, n, y);
}
template <int R, int NC>
void streamColumnsFloat(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* y) {
  streamColumns<FloatBlock, R, NC>(d, w, x, n, y);
}

}  // namespace

bool neonStreamSuits(const BlockQuantDims& d) {
  return d.block % 32 == 0 && cpuTier().has(d.int8_activations ? CpuIsa::kDotProd : CpuIsa::kNeon);
}

void streamNeon(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y) {
  streamRowsAndColumns(x, n0, n1, [&](auto rows, auto cols, int64_t n) {
    constexpr int R = decltype(rows)::value, NC = decltype(cols)::value;
    if (d.int8_activations) {
      streamColumnsDotProd<R, NC>(d, w, x, n, y);
    } else {
      streamColumnsFloat<R, NC>(d, w, x, n, y);
    }
  });
}

}  // namespace gkrt::cpu::block_quant

#else

namespace gkrt::cpu::block_quant {
bool neonStreamSuits(const BlockQuantDims&) { return false; }
void streamNeon(const BlockQuantDims&, const Weights&, const Rows&, int64_t, int64_t, float*) {}
}  // namespace gkrt::cpu::block_quant

#endif
