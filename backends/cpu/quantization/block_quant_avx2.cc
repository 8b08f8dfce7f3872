// The AVX2+FMA loops of the block-quant kernel (block_quant_parts.h), built for that
// tier only (GKRT_TARGET_AVX2) and picked by the kernel when the CPU tier has it.
#include "backends/cpu/cpu_tier.h"

#ifdef GKRT_X86_TIERS
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/math/gemm.h"
#include "backends/cpu/quantization/block_quant_parts.h"

namespace gkrt::cpu::block_quant {
namespace {

GKRT_TARGET_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The offsets' term of column n for the rows: sum over blocks of offset * (sum of the
// block of x), the int4 values' -8 (read as u = q + 8) included, 8 blocks a vector.
template <int R>
GKRT_TARGET_AVX2 void offsetTerm(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* off) {
  if (!w.offsets && !d.signed_nibbles) {  // symmetric int8, or unsigned nibbles with no offsets
    for (int r = 0; r < R; ++r) off[r] = 0.0f;
    return;
  }
  const float* s = w.scales + n * d.blocks;
  const float* o = w.offsets ? w.offsets + n * d.blocks : nullptr;
  for (int r = 0; r < R; ++r) {
    const float* sum = x.sum + r * d.blocks;
    __m256 vs = _mm256_setzero_ps(), vo = _mm256_setzero_ps();
    float ts = 0.0f, to = 0.0f;
    int64_t b = 0;
    for (; b + 8 <= d.blocks; b += 8) {
      const __m256 xs = _mm256_loadu_ps(sum + b);
      if (d.signed_nibbles) vs = _mm256_fmadd_ps(_mm256_loadu_ps(s + b), xs, vs);
      if (o) vo = _mm256_fmadd_ps(_mm256_loadu_ps(o + b), xs, vo);
    }
    for (; b < d.blocks; ++b) {
      if (d.signed_nibbles) ts += s[b] * sum[b];
      if (o) to += o[b] * sum[b];
    }
    off[r] = hsum(vo) + to - 8.0f * (hsum(vs) + ts);
  }
}

// 32 nibbles (16 bytes) as 32 unsigned bytes: lows (evens) then highs (odds).
GKRT_TARGET_AVX2 inline __m256i nibbles32(const uint8_t* p, __m128i flip, __m128i low) {
  const __m128i raw = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), flip);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low), _mm_and_si128(raw, low));
}

// AVX2, B a multiple of 32: R rows against NC columns at once (NC independent chains;
// x's loads shared). Nibbles: 16 bytes = 32 values (lows = evens, highs = odds, x
// permuted to match); int8 values: 32 bytes = 32 values.
constexpr int64_t kGroupsAhead = 2;

template <int R, int NC, bool kInt8Acts>
GKRT_TARGET_AVX2 void streamColumnsAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n,
                                                             float* y) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m128i low = _mm_set1_epi8(0x0F), flip = _mm_set1_epi8(d.signed_nibbles ? char(0x88) : 0);
  const int64_t chunks = d.block / 32, col_bytes = d.blocks * d.blob;
  const uint8_t* wn = w.w + n * col_bytes;
  const float* sn = w.scales + n * d.blocks;
  __m256 acc[R][NC];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < d.blocks; ++b) {
    const int64_t at = b * d.block;
    // The NC columns are one contiguous run of NC * col_bytes, read as NC short streams
    // that hardware prefetchers barely train on: prefetch the run kGroupsAhead groups on
    // linearly, its share of it each block (SmolLM2's 8-bit decode: 2.1x at 1 thread).
    {
      const int64_t step = NC * d.blob;
      const char* ahead = reinterpret_cast<const char*>(wn + kGroupsAhead * NC * col_bytes + b * step);
      for (int64_t o = 0; o < step; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
    }
    if (kInt8Acts) {
      __m256i dot[R][NC];
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) dot[r][c] = _mm256_setzero_si256();
      for (int64_t k = 0; k < chunks; ++k) {
        __m256i xv[R];
        for (int r = 0; r < R; ++r) xv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.stride + at + k * 32));
        for (int c = 0; c < NC; ++c) {
          const uint8_t* p = wn + c * col_bytes + b * d.blob;
          if (d.nibbles) {
            const __m256i wv = nibbles32(p + k * 16, flip, low);
            for (int r = 0; r < R; ++r) dot[r][c] = _mm256_add_epi32(dot[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(wv, xv[r]), ones));
          } else {  // signed bytes: |w| times x with w's sign
            const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k * 32));
            const __m256i aw = _mm256_sign_epi8(wv, wv);
            for (int r = 0; r < R; ++r) {
              dot[r][c] = _mm256_add_epi32(dot[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[r], wv)), ones));
            }
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256 sx = _mm256_broadcast_ss(x.scale + r * d.blocks + b);
        for (int c = 0; c < NC; ++c) {
          const __m256 sc = _mm256_mul_ps(_mm256_broadcast_ss(sn + c * d.blocks + b), sx);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][c]), sc, acc[r][c]);
        }
      }
    } else {
      __m256 t[R][NC];
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) t[r][c] = _mm256_setzero_ps();
      for (int64_t k = 0; k < chunks; ++k) {
        for (int c = 0; c < NC; ++c) {
          const uint8_t* p = wn + c * col_bytes + b * d.blob;
          __m256 f[4];
          if (d.nibbles) {
            const __m128i raw = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k * 16)), flip);
            const __m128i lo = _mm_and_si128(raw, low), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), low);
            f[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
            f[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
            f[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
            f[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
          } else {
            for (int j = 0; j < 4; ++j) {
              f[j] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + k * 32 + 8 * j))));
            }
          }
          for (int r = 0; r < R; ++r) {
            const float* xr = x.f + r * x.stride + at + k * 32;
            __m256 u = _mm256_mul_ps(f[0], _mm256_loadu_ps(xr));
            u = _mm256_fmadd_ps(f[1], _mm256_loadu_ps(xr + 8), u);
            u = _mm256_fmadd_ps(f[2], _mm256_loadu_ps(xr + 16), u);
            t[r][c] = _mm256_add_ps(t[r][c], _mm256_fmadd_ps(f[3], _mm256_loadu_ps(xr + 24), u));
          }
        }
      }
      for (int c = 0; c < NC; ++c) {
        const __m256 sv = _mm256_broadcast_ss(sn + c * d.blocks + b);
        for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(t[r][c], sv, acc[r][c]);
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    float off[R];
    offsetTerm<R>(d, w, x, n + c, off);
    for (int r = 0; r < R; ++r) y[r * d.N + n + c] = hsum(acc[r][c]) + off[r] + (w.bias ? w.bias[n + c] : 0.0f);
  }
}

// AVX2, int8 activations against 4-bit values, B a multiple of 32: 64 values (32 bytes of
// a column: value k sits in byte k / 2) a step, R rows against NC columns. The low and
// high nibbles of the 32 bytes are two vectors of unsigned bytes against x in kUnits64
// order; the int32 sums of the first 32 values land in lanes 0-3, of the second in 4-7,
// which the scale vector [s0 x4, s1 x4] times x's [sx0 x4, sx1 x4] rescales in one FMA.
template <int R, int NC>
GKRT_TARGET_AVX2 void streamInt4UnitsAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n,
                                                               float* y) {
  const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(0x0F);
  const __m256i flip = _mm256_set1_epi8(d.signed_nibbles ? char(0x88) : 0);
  const __m256i pairs = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const int64_t col_bytes = d.blocks * d.blob, full = x.stride / 64;
  const uint8_t* wn = w.w + n * col_bytes;
  const float* sn = w.scales + n * d.blocks;
  __m256 acc[R][NC];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t u = 0; u < full; ++u) {
    const int64_t k0 = u * 64;
    __m256i xl[R], xh[R];
    __m256 xs[R];
    for (int r = 0; r < R; ++r) {
      const int8_t* xq = x.q + r * x.stride + k0;
      xl[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
      xh[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32));
      xs[r] = _mm256_loadu_ps(x.scale8 + (r * x.units + u) * 8);
    }
    {  // the run of columns kGroupsAhead groups on, linearly (see streamColumnsAvx2)
      const int64_t step = NC * 32;
      const char* ahead = reinterpret_cast<const char*>(wn + kGroupsAhead * NC * col_bytes + u * step);
      for (int64_t o = 0; o < step; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
    }
    for (int c = 0; c < NC; ++c) {
      const uint8_t* p = wn + c * col_bytes + k0 / 2;
      const __m256i raw = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), flip);
      const __m256i lo = _mm256_and_si256(raw, low), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
      const float* sc = sn + c * d.blocks;
      __m256 sv;
      if (d.block == 32) {  // the scales of blocks 2u and 2u + 1, side by side
        sv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 2 * u)))),
                                      pairs);
      } else {
        sv = _mm256_set_m128(_mm_broadcast_ss(sc + (k0 + 32) / d.block), _mm_broadcast_ss(sc + k0 / d.block));
      }
      for (int r = 0; r < R; ++r) {
        const __m256i dot = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, xl[r]), ones),
                                             _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xh[r]), ones));
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(sv, xs[r]), acc[r][c]);
      }
    }
  }
  if (x.stride % 64 != 0) {  // a last 32 values: 16 bytes, kChunks32 order
    const int64_t k0 = full * 64;
    const __m128i low16 = _mm_set1_epi8(0x0F), flip16 = _mm256_castsi256_si128(flip);
    for (int c = 0; c < NC; ++c) {
      const __m256i wv = nibbles32(wn + c * col_bytes + k0 / 2, flip16, low16);
      const float s = sn[c * d.blocks + k0 / d.block];
      for (int r = 0; r < R; ++r) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.stride + k0));
        const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, xv), ones);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(s * x.scale[r * d.blocks + k0 / d.block]), acc[r][c]);
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    float off[R];
    offsetTerm<R>(d, w, x, n + c, off);
    for (int r = 0; r < R; ++r) y[r * d.N + n + c] = hsum(acc[r][c]) + off[r] + (w.bias ? w.bias[n + c] : 0.0f);
  }
}

// 32 values of one column's block (from value c of the block) widened: v[q] = values
// c + 8q .. c + 8q + 7, as q * scale + offset.
GKRT_TARGET_AVX2 inline void widen32(const BlockQuantDims& d, const uint8_t* blk, int64_t c, __m256 s, __m256 o, __m256* v) {
  __m256i t[4];
  if (d.nibbles) {
    const __m128i low = _mm_set1_epi8(0x0F), flip = _mm_set1_epi8(d.signed_nibbles ? char(0x88) : 0);
    const __m128i raw = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + c / 2)), flip);
    const __m128i lo = _mm_and_si128(raw, low), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), low);
    const __m128i a = _mm_unpacklo_epi8(lo, hi), z = _mm_unpackhi_epi8(lo, hi);  // k order
    t[0] = _mm256_cvtepu8_epi32(a), t[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(a, 8));
    t[2] = _mm256_cvtepu8_epi32(z), t[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(z, 8));
  } else {
    for (int q = 0; q < 4; ++q) t[q] = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + c + 8 * q)));
  }
  for (int q = 0; q < 4; ++q) v[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t[q]), s, o);
}

// Block b of column n widened: value k of the block at out[k * stride] (stride 1: whole
// vectors stored; else, and a last partial 32, through a buffer).
GKRT_TARGET_AVX2 inline void widenBlock(const BlockQuantDims& d, const Weights& w, int64_t n, int64_t b, float* out,
                                        int64_t stride) {
  const uint8_t* blk = w.w + (n * d.blocks + b) * d.blob;
  const __m256 s = _mm256_set1_ps(w.scales[n * d.blocks + b]), o = _mm256_set1_ps(offsetOf(d, w, n, b, true));
  const int64_t len = std::min(d.block, d.K - b * d.block);
  alignas(32) float vals[32];
  for (int64_t c = 0; c < len; c += 32) {
    __m256 v[4];
    widen32(d, blk, c, s, o, v);
    if (stride == 1 && c + 32 <= len) {
      for (int q = 0; q < 4; ++q) _mm256_storeu_ps(out + c + 8 * q, v[q]);
      continue;
    }
    for (int q = 0; q < 4; ++q) _mm256_store_ps(vals + 8 * q, v[q]);
    for (int64_t k = 0; k < std::min<int64_t>(32, len - c); ++k) out[(c + k) * stride] = vals[k];
  }
}

// r[i] = column i of the 8 x 8 block m (rows m[0..7]).
GKRT_TARGET_AVX2 inline void transpose8(const __m256* m, __m256* r) {
  const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
  const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
  const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
  const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

}  // namespace

// B a multiple of 32: eight columns at a time, 32 values of each widened in vectors and
// transposed 8 x 8 into panel rows (8 lanes a store); a last group of fewer than eight
// columns value by value.
GKRT_TARGET_AVX2 void widenPanelsAvx2(const BlockQuantDims& d, const Weights& w, int64_t n0, int64_t cols, float* panels) {
  zeroSpareLanes(d, cols, panels);
  const int64_t full = cols / 8 * 8;
  for (int64_t j = 0; j < full; j += 8) {
    float* lanes = panels + (j / kGemmNR) * d.K * kGemmNR + j % kGemmNR;
    for (int64_t b = 0; b < d.blocks; ++b) {
      const int64_t k0 = b * d.block, len = std::min(d.block, d.K - k0);
      __m256 sv[8], ov[8];
      const uint8_t* blk[8];
      for (int i = 0; i < 8; ++i) {
        const int64_t n = n0 + j + i;
        blk[i] = w.w + (n * d.blocks + b) * d.blob;
        sv[i] = _mm256_set1_ps(w.scales[n * d.blocks + b]);
        ov[i] = _mm256_set1_ps(offsetOf(d, w, n, b, true));
      }
      for (int64_t c = 0; c < len; c += 32) {
        __m256 v[8][4];
        for (int i = 0; i < 8; ++i) widen32(d, blk[i], c, sv[i], ov[i], v[i]);
        const int64_t keep = std::min<int64_t>(32, len - c);
        for (int q = 0; q < 4 && 8 * q < keep; ++q) {
          const __m256 m[8] = {v[0][q], v[1][q], v[2][q], v[3][q], v[4][q], v[5][q], v[6][q], v[7][q]};
          __m256 r[8];
          transpose8(m, r);
          float* dst = lanes + (k0 + c + 8 * q) * kGemmNR;
          for (int64_t k = 0; k < std::min<int64_t>(8, keep - 8 * q); ++k) _mm256_storeu_ps(dst + k * kGemmNR, r[k]);
        }
      }
    }
  }
  for (int64_t j = full; j < cols; ++j) {
    float* lane = panels + (j / kGemmNR) * d.K * kGemmNR + j % kGemmNR;
    for (int64_t b = 0; b < d.blocks; ++b) widenBlock(d, w, n0 + j, b, lane + b * d.block * kGemmNR, kGemmNR);
  }
}

// Column by column, each column's values contiguous: no transpose, 32 values a step.
GKRT_TARGET_AVX2 void widenColumnsAvx2(const BlockQuantDims& d, const Weights& w, int64_t n0, int64_t cols, float* dst) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t b = 0; b < d.blocks; ++b) widenBlock(d, w, n0 + j, b, dst + j * d.K + b * d.block, 1);
  }
}

void offsetTermsAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* off) {
  switch (x.count) {
    case 1: return offsetTerm<1>(d, w, x, n, off);
    case 2: return offsetTerm<2>(d, w, x, n, off);
    case 3: return offsetTerm<3>(d, w, x, n, off);
    default: return offsetTerm<4>(d, w, x, n, off);
  }
}

void streamAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y) {
  streamRowsAndColumns(x, n0, n1, [&](auto rows, auto cols, int64_t n) {
    constexpr int R = decltype(rows)::value, NC = decltype(cols)::value;
    if (d.nibbles && d.int8_activations) return streamInt4UnitsAvx2<R, NC>(d, w, x, n, y);
    if (d.int8_activations) return streamColumnsAvx2<R, NC, true>(d, w, x, n, y);
    streamColumnsAvx2<R, NC, false>(d, w, x, n, y);
  });
}

}  // namespace gkrt::cpu::block_quant
#endif
