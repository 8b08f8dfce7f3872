// The AVX-512 VNNI loops of the block-quant kernel (block_quant_parts.h): the 4-bit decode
// loop (streamInt4Vnni, below), and the prefill GEMM: rows of
// x quantized to int8 per block (the op's int8 precision, as onnxruntime's MatMulNBits at
// accuracy level 4 and llama.cpp's Q8 activations compute a prompt) against 8- or 4-bit
// weights, 16 columns a panel.
//
// A panel's weights are put once per launch into VNNI order (a full panel by loads and
// in-register transposes, a last partial one by vpgatherdd) — for every 32 values
// of K, 8 vectors of [16 columns x 4 bytes] as unsigned bytes u = q + bias (int8: q + 128,
// signed nibbles: q + 8, unsigned nibbles as they are) — and every group of 4 rows then
// runs 8 vpdpbusd a 32 values against x's bytes broadcast 4 at a time; each block's int32
// sums are scaled by the block's column scales times the row's sx once. The bias's and the
// offsets' part, sum over blocks of (offset - bias * scale) * sum(x of the block), is one
// FMA per block and row. Nibbles hold k = 2t and 2t + 1 in byte t, so a gathered int32 of
// nibbles gives the even values of 8 (its low nibbles) and the odd ones (high): x's rows
// are ordered to match, evens then odds in every 8 values (vnniOrderRows).
#include "backends/cpu/cpu_tier.h"

#ifdef GKRT_X86_TIERS
// GCC 12's AVX-512 intrinsics hand an undefined vector to the builtins as the pass-through
// of their unmasked forms, which -W(maybe-)uninitialized reports in every caller.
#ifndef __clang__  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/quantization/block_quant_parts.h"

#define GKRT_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")))

namespace gkrt::cpu::block_quant {
namespace {

constexpr int kMR = 4;  // rows a register tile

int bias(const BlockQuantDims& d) { return !d.nibbles ? 128 : d.signed_nibbles ? 8 : 0; }

// 32 bytes of each of 16 columns (column c at at + c * col_bytes) as 8 vectors of [16
// columns x 4 bytes] (vector g: bytes 4g .. 4g + 3 of every column), xor flip: an 8 x 8
// transpose of 32-bit words in each 256-bit half, columns 0-7 in the low half and 8-15 in
// the high one. Loads and shuffles: AMD's vpgatherdd took a fifth of MiniLM's int8 run
// (and SmolLM2's 8-bit prefill ran 1300 -> 1807 tokens/s at 2 threads without it).
GKRT_TARGET_AVX512_VNNI void transposeChunk(const uint8_t* at, int64_t col_bytes, __m512i flip, uint8_t* out) {
  __m512i z[8];
  for (int i = 0; i < 8; ++i) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + i * col_bytes));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + (i + 8) * col_bytes));
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  // 128-bit lane l of u[k] (k < 4: columns 0-3 / 8-11; k >= 4: 4-7 / 12-15) holds word
  // k % 4 (lanes 0 and 2) or k % 4 + 4 (lanes 1 and 3) of four columns.
  __m512i u[8];
  for (int h = 0; h < 2; ++h) {
    const __m512i t0 = _mm512_unpacklo_epi32(z[4 * h], z[4 * h + 1]), t1 = _mm512_unpackhi_epi32(z[4 * h], z[4 * h + 1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[4 * h + 2], z[4 * h + 3]), t3 = _mm512_unpackhi_epi32(z[4 * h + 2], z[4 * h + 3]);
    u[4 * h + 0] = _mm512_unpacklo_epi64(t0, t2);
    u[4 * h + 1] = _mm512_unpackhi_epi64(t0, t2);
    u[4 * h + 2] = _mm512_unpacklo_epi64(t1, t3);
    u[4 * h + 3] = _mm512_unpackhi_epi64(t1, t3);
  }
  const __m512i low_words = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), high_words = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int k = 0; k < 4; ++k) {
    _mm512_storeu_si512(out + 64 * k, _mm512_xor_si512(_mm512_permutex2var_epi64(u[k], low_words, u[k + 4]), flip));
    _mm512_storeu_si512(out + 64 * (k + 4), _mm512_xor_si512(_mm512_permutex2var_epi64(u[k], high_words, u[k + 4]), flip));
  }
}

// 16 bytes (32 nibbles) of each of 16 columns as 4 vectors of [16 columns x 4 bytes]
// (vector h: bytes 4h .. 4h + 3 of every column): a 4 x 4 transpose of 32-bit words in
// each 128-bit lane, lane l holding columns 4l .. 4l + 3.
GKRT_TARGET_AVX512_VNNI void transposeNibbleChunk(const uint8_t* at, int64_t col_bytes, __m512i words[4]) {
  __m512i z[4];
  for (int i = 0; i < 4; ++i) {
    const auto col = [&](int c) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + c * col_bytes)); };
    z[i] = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(col(i)), col(i + 4), 1), col(i + 8), 2),
                              col(i + 12), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
  words[0] = _mm512_unpacklo_epi64(t0, t2);
  words[1] = _mm512_unpackhi_epi64(t0, t2);
  words[2] = _mm512_unpacklo_epi64(t1, t3);
  words[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Panel p's weights in VNNI order, its scales and its bias/offset coefficients, columns
// past N zero.
GKRT_TARGET_AVX512_VNNI void gatherPanel(const BlockQuantDims& d, const Weights& w, int64_t p, uint8_t* vals, float* scales,
                                         float* coef) {
  const int64_t n0 = p * 16, cols = std::min<int64_t>(16, d.N - n0), col_bytes = d.blocks * d.blob;
  const __mmask16 live = __mmask16((1u << cols) - 1);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i col_off = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(col_bytes)));
  const __m512i blk_off = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(d.blocks)));
  const uint8_t* base = w.w + n0 * col_bytes;
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i flip = _mm512_set1_epi8(char(!d.nibbles ? 0x80 : d.signed_nibbles ? 0x88 : 0));
  const int64_t chunks = d.blocks * d.block / 32;
  for (int64_t j = 0; j < chunks; ++j) {
    const int64_t b = j * 32 / d.block, in_block = j * 32 - b * d.block;  // value offset of the chunk in its block
    uint8_t* out = vals + j * 512;
    if (!d.nibbles && cols == 16) {
      transposeChunk(base + b * d.blob + in_block, col_bytes, flip, out);
    } else if (!d.nibbles) {
      const uint8_t* at = base + b * d.blob + in_block;
      for (int g = 0; g < 8; ++g) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, col_off, at + 4 * g, 1);
        _mm512_storeu_si512(out + 64 * g, _mm512_xor_si512(v, flip));
      }
    } else {
      const uint8_t* at = base + b * d.blob + in_block / 2;
      __m512i words[4];
      if (cols == 16) transposeNibbleChunk(at, col_bytes, words);
      for (int h = 0; h < 4; ++h) {
        __m512i v = cols == 16 ? words[h] : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, col_off, at + 4 * h, 1);
        v = _mm512_maskz_mov_epi32(live, _mm512_xor_si512(v, flip));
        _mm512_storeu_si512(out + 64 * (2 * h), _mm512_and_si512(v, low));
        _mm512_storeu_si512(out + 64 * (2 * h + 1), _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
      }
    }
  }
  const float* sp = w.scales + n0 * d.blocks;
  const float* op = w.offsets ? w.offsets + n0 * d.blocks : nullptr;
  const __m512 bv = _mm512_set1_ps(float(bias(d)));
  for (int64_t b = 0; b < d.blocks; ++b) {
    const __m512 s = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, blk_off, sp + b, 4);
    const __m512 o = op ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, blk_off, op + b, 4) : _mm512_setzero_ps();
    _mm512_storeu_ps(scales + 16 * b, s);
    _mm512_storeu_ps(coef + 16 * b, _mm512_fnmadd_ps(bv, s, o));
  }
}

// R rows (R <= kMR) from row r0 against the gathered panel: y[r][n0 .. n0 + 16).
// Block b's int32 sums of R rows from r0 against C gathered panels (panel k's values at
// vals + k * stride): 8 vpdpbusd a 32 values, x's bytes broadcast 4 at a time.
template <int R, int C>
GKRT_TARGET_AVX512_VNNI __attribute__((always_inline)) inline void blockDots(const BlockQuantDims& d, const Rows& x, int64_t r0,
                                                                              int64_t b, const uint8_t* vals, size_t stride,
                                                                              __m512i (&dot)[R][C]) {
  const int64_t chunks_per_block = d.block / 32;
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < C; ++k) dot[r][k] = _mm512_setzero_si512();
  for (int64_t c = 0; c < chunks_per_block; ++c) {
    const int64_t j = b * chunks_per_block + c;
    for (int g = 0; g < 8; ++g) {
      __m512i v[C];
      for (int k = 0; k < C; ++k) v[k] = _mm512_loadu_si512(vals + k * stride + j * 512 + 64 * g);
      for (int r = 0; r < R; ++r) {
        int32_t four;
        std::memcpy(&four, x.q + (r0 + r) * x.stride + j * 32 + 4 * g, 4);
        const __m512i xv = _mm512_set1_epi32(four);
        for (int k = 0; k < C; ++k) dot[r][k] = _mm512_dpbusd_epi32(dot[r][k], v[k], xv);
      }
    }
  }
}

// R rows (R <= kMR) from row r0 against C gathered panels from p (panel k's values,
// scales and coefficients at vals + k * stride): y[r][16p .. 16(p + C)).
template <int R, int C>
GKRT_TARGET_AVX512_VNNI void panelRows(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t r0, int64_t p,
                                       const uint8_t* vals, size_t stride, float* y) {
  const float* scales[C];
  const float* coef[C];
  for (int k = 0; k < C; ++k) {
    scales[k] = reinterpret_cast<const float*>(vals + k * stride + d.blocks * d.block * 16);
    coef[k] = scales[k] + d.blocks * 16;
  }
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < C; ++k) acc[r][k] = _mm512_setzero_ps();
  for (int64_t b = 0; b < d.blocks; ++b) {
    __m512i dot[R][C];
    blockDots<R, C>(d, x, r0, b, vals, stride, dot);
    for (int r = 0; r < R; ++r) {
      const size_t rb = size_t((r0 + r) * d.blocks + b);
      const __m512 sx = _mm512_set1_ps(x.scale[rb]), sum = _mm512_set1_ps(x.sum[rb]);
      for (int k = 0; k < C; ++k) {
        const __m512 s = _mm512_loadu_ps(scales[k] + 16 * b), o = _mm512_loadu_ps(coef[k] + 16 * b);
        acc[r][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][k]), _mm512_mul_ps(s, sx), acc[r][k]);
        acc[r][k] = _mm512_fmadd_ps(o, sum, acc[r][k]);
      }
    }
  }
  for (int k = 0; k < C; ++k) {
    const int64_t n0 = (p + k) * 16, cols = std::min<int64_t>(16, d.N - n0);
    const __mmask16 live = __mmask16((1u << cols) - 1);
    const __m512 bias_v = w.bias ? _mm512_maskz_loadu_ps(live, w.bias + n0) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (r0 + r) * d.N + n0, live, _mm512_add_ps(acc[r][k], bias_v));
  }
}

// Every column's blocks sharing one scale and one offset (a per-column quantization
// written in blocks, as int8_weight_dynamic_quant writes it): the block's int32 sums then
// need only the row's sx (one conversion and one FMA a block, not four operations), and
// the column scale, the bias and the offsets' part come once at the end:
//   y[r][n] = s[n] * sum_b sx[r][b] * dot[r][b][n] + coef[n] * sum_b sum[r][b] + bias[n].
// R rows against C panels of 16 columns (vals of panel k at vals + k * stride): 2 x R
// independent vpdpbusd chains.
template <int R, int C>
GKRT_TARGET_AVX512_VNNI void uniformRows(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t r0, int64_t p,
                                         const uint8_t* vals, size_t stride, float* y) {
  __m512 acc[R][C];
  float sums[R];
  for (int r = 0; r < R; ++r) {
    sums[r] = 0.0f;
    for (int k = 0; k < C; ++k) acc[r][k] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < d.blocks; ++b) {
    __m512i dot[R][C];
    blockDots<R, C>(d, x, r0, b, vals, stride, dot);
    for (int r = 0; r < R; ++r) {
      const size_t rb = size_t((r0 + r) * d.blocks + b);
      const __m512 sx = _mm512_set1_ps(x.scale[rb]);
      sums[r] += x.sum[rb];
      for (int k = 0; k < C; ++k) acc[r][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][k]), sx, acc[r][k]);
    }
  }
  for (int k = 0; k < C; ++k) {
    const int64_t n0 = (p + k) * 16, cols = std::min<int64_t>(16, d.N - n0);
    const __mmask16 live = __mmask16((1u << cols) - 1);
    // The panel's gathered block-0 scales and coefficients follow its values (gatherPanel).
    const float* scales = reinterpret_cast<const float*>(vals + k * stride + d.blocks * d.block * 16);
    const float* coef = scales + d.blocks * 16;
    const __m512 s = _mm512_loadu_ps(scales), o = _mm512_loadu_ps(coef);
    const __m512 bias_v = w.bias ? _mm512_maskz_loadu_ps(live, w.bias + n0) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_fmadd_ps(acc[r][k], s, _mm512_fmadd_ps(o, _mm512_set1_ps(sums[r]), bias_v));
      _mm512_mask_storeu_ps(y + (r0 + r) * d.N + n0, live, v);
    }
  }
}

template <int C>
void panelsRows(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t p, const uint8_t* vals, size_t stride,
                bool uniform, float* y) {
  int64_t r = 0;
  const auto rows = [&](auto tag) {
    constexpr int R = decltype(tag)::value;
    if (uniform) uniformRows<R, C>(d, w, x, r, p, vals, stride, y);
    else panelRows<R, C>(d, w, x, r, p, vals, stride, y);
  };
  for (; r + kMR <= x.count; r += kMR) rows(std::integral_constant<int, kMR>());
  switch (x.count - r) {
    case 3: rows(std::integral_constant<int, 3>()); break;
    case 2: rows(std::integral_constant<int, 2>()); break;
    case 1: rows(std::integral_constant<int, 1>()); break;
    default: break;
  }
}

constexpr int64_t kStreamGroupsAhead = 2;  // column groups prefetched ahead, as the AVX2 loop

GKRT_TARGET_AVX512_VNNI inline __m256 half(__m512 v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }

// [sum of a, sum of b, sum of c, sum of d].
GKRT_TARGET_AVX512_VNNI inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(half(a), half(b)), _mm256_hadd_ps(half(c), half(d)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// The decode loop of block_quant_avx2.cc's streamInt4UnitsAvx2 on 512-bit vectors: two
// units of 64 values (64 bytes of nibbles, four blocks of 32) a step, the low and high
// nibbles against x's evens and odds (kUnits64 order, two units side by side) by two
// vpdpbusd instead of vpmaddubsw + vpmaddwd per half; each int32 lane holds a quarter of
// one block's sum, rescaled by [block scale x4 ...] times x's [sx x4 ...]. An odd last
// unit and a last half unit take 256-bit vectors. R rows against NC columns.
//
// Blocks of 32 (every GGUF 4-bit type, onnxruntime-genai's int4): the offsets' term
// (the -8 of signed nibbles read as q + 8, the stored offsets) goes into the same
// accumulators, a quarter of each block's sum(x) a lane (an eighth in the half unit:
// powers of two, so exact), instead of a pass over the column's scales after it; with
// the four columns reduced together, that per-column tail was as long as the loop over
// a 576-value column.
template <int R, int NC>
GKRT_TARGET_AVX512_VNNI void streamInt4Columns(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* y) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i flip = _mm512_set1_epi8(d.signed_nibbles ? char(0x88) : 0);
  const __m512i quads = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const int64_t col_bytes = d.blocks * d.blob, full = x.stride / 64;
  const uint8_t* wn = w.w + n * col_bytes;
  const float* sn = w.scales + n * d.blocks;
  const float* on = w.offsets ? w.offsets + n * d.blocks : nullptr;
  const bool fold = d.block == 32;
  const float neg = d.signed_nibbles ? -8.0f : 0.0f;  // the -8 of q + 8, times sum(x)
  __m512 acc[R][NC];
  __m256 tail[R][NC];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps(), tail[r][c] = _mm256_setzero_ps();
  int64_t u = 0;
  for (; u + 2 <= full; u += 2) {
    const int64_t k0 = u * 64;
    __m512i xl[R], xh[R];
    __m512 xs[R], xn[R], xo[R];  // x's scales; sum(x) shares for the -8 and for the offsets
    for (int r = 0; r < R; ++r) {
      const int8_t* xq = x.q + r * x.stride + k0;
      const __m256i* v = reinterpret_cast<const __m256i*>(xq);
      xl[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(v)), _mm256_loadu_si256(v + 2), 1);
      xh[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(v + 1)), _mm256_loadu_si256(v + 3), 1);
      xs[r] = _mm512_loadu_ps(x.scale8 + (r * x.units + u) * 8);
      if (fold) {
        const __m512 sums = _mm512_permutexvar_ps(quads, _mm512_castps128_ps512(_mm_loadu_ps(x.sum + r * d.blocks + 2 * u)));
        xn[r] = _mm512_mul_ps(sums, _mm512_set1_ps(neg * 0.25f));
        xo[r] = _mm512_mul_ps(sums, _mm512_set1_ps(0.25f));
      }
    }
    {
      const int64_t step = NC * 64;
      const char* ahead = reinterpret_cast<const char*>(wn + kStreamGroupsAhead * NC * col_bytes + (u / 2) * step);
      for (int64_t o = 0; o < step; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
    }
    for (int c = 0; c < NC; ++c) {
      const __m512i raw = _mm512_xor_si512(_mm512_loadu_si512(wn + c * col_bytes + k0 / 2), flip);
      const __m512i lo = _mm512_and_si512(raw, low), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
      const float* sc = sn + c * d.blocks;
      const __m128 four = fold ? _mm_loadu_ps(sc + 2 * u)
                               : _mm_setr_ps(sc[k0 / d.block], sc[(k0 + 32) / d.block], sc[(k0 + 64) / d.block],
                                             sc[(k0 + 96) / d.block]);
      const __m512 sv = _mm512_permutexvar_ps(quads, _mm512_castps128_ps512(four));
      const __m512 ov = fold && on ? _mm512_permutexvar_ps(quads, _mm512_castps128_ps512(_mm_loadu_ps(on + c * d.blocks + 2 * u)))
                                   : _mm512_setzero_ps();
      for (int r = 0; r < R; ++r) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xl[r]), hi, xh[r]);
        if (fold) {  // scale * (sx * dot - 8 sum/4) + offset * sum/4
          acc[r][c] = _mm512_fmadd_ps(sv, _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), xs[r], xn[r]), acc[r][c]);
          if (on) acc[r][c] = _mm512_fmadd_ps(ov, xo[r], acc[r][c]);
        } else {
          acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sv, xs[r]), acc[r][c]);
        }
      }
    }
  }
  const __m256i low8 = _mm512_castsi512_si256(low), flip8 = _mm512_castsi512_si256(flip);
  // The tails' offset terms, block by block, when folded: the blocks from first_tail on.
  const int64_t first_tail = fold ? u * 2 : d.blocks;
  if (u < full) {  // an odd last unit: 32 bytes
    const int64_t k0 = u * 64;
    for (int c = 0; c < NC; ++c) {
      const __m256i raw = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wn + c * col_bytes + k0 / 2)), flip8);
      const __m256i lo = _mm256_and_si256(raw, low8), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low8);
      const float* sc = sn + c * d.blocks;
      const __m256 sv = _mm256_set_m128(_mm_set1_ps(sc[(k0 + 32) / d.block]), _mm_set1_ps(sc[k0 / d.block]));
      for (int r = 0; r < R; ++r) {
        const __m256i* v = reinterpret_cast<const __m256i*>(x.q + r * x.stride + k0);
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, _mm256_loadu_si256(v)), hi,
                                                _mm256_loadu_si256(v + 1));
        const __m256 xs = _mm256_loadu_ps(x.scale8 + (r * x.units + u) * 8);
        tail[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(sv, xs), tail[r][c]);
      }
    }
  }
  if (x.stride % 64 != 0) {  // a last 32 values: 16 bytes, lows then highs against x in kChunks32 order
    const int64_t k0 = full * 64;
    for (int c = 0; c < NC; ++c) {
      const __m128i raw = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wn + c * col_bytes + k0 / 2)),
                                        _mm256_castsi256_si128(flip8));
      const __m128i low16 = _mm256_castsi256_si128(low8);
      const __m256i wv = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low16), _mm_and_si128(raw, low16));
      const float s = sn[c * d.blocks + k0 / d.block];
      for (int r = 0; r < R; ++r) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.stride + k0));
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wv, xv);
        tail[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(s * x.scale[r * d.blocks + k0 / d.block]), tail[r][c]);
      }
    }
  }
  float off[NC][R];
  for (int c = 0; c < NC; ++c) {
    if (!fold) {
      offsetTermsAvx2(d, w, x, n + c, off[c]);
      continue;
    }
    for (int r = 0; r < R; ++r) {  // the tail blocks' terms (at most three)
      float t = 0.0f;
      for (int64_t b = first_tail; b < d.blocks; ++b) {
        const float sum = x.sum[r * d.blocks + b];
        t += neg * sn[c * d.blocks + b] * sum + (on ? on[c * d.blocks + b] * sum : 0.0f);
      }
      off[c][r] = t;
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_zextps256_ps512(tail[r][c]));
    if constexpr (NC % 4 == 0) {
      for (int c0 = 0; c0 < NC; c0 += 4) {
        alignas(16) float sums[4];
        _mm_store_ps(sums, reduce4(acc[r][c0], acc[r][c0 + 1], acc[r][c0 + 2], acc[r][c0 + 3]));
        for (int c = c0; c < c0 + 4; ++c) y[r * d.N + n + c] = sums[c - c0] + off[c][r] + (w.bias ? w.bias[n + c] : 0.0f);
      }
    } else {
      for (int c = 0; c < NC; ++c) y[r * d.N + n + c] = _mm512_reduce_add_ps(acc[r][c]) + off[c][r] + (w.bias ? w.bias[n + c] : 0.0f);
    }
  }
}

}  // namespace

bool vnniStreamSuits(const BlockQuantDims& d) {
  return d.nibbles && d.int8_activations && d.block % 32 == 0 && cpuTier().has(CpuIsa::kAvx512Vnni);
}

void streamInt4Vnni(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y) {
  streamRowsAndColumns(x, n0, n1, [&](auto rows, auto cols, int64_t n) {
    streamInt4Columns<decltype(rows)::value, decltype(cols)::value>(d, w, x, n, y);
  });
}

bool vnniSuits(const BlockQuantDims& d) {
  return d.int8_activations && d.block % 32 == 0 && d.N > 0 && cpuTier().has(CpuIsa::kAvx512Vnni) &&
         d.blocks * d.blob * 16 < (int64_t(1) << 31);
}

bool vnniUniformColumns(const BlockQuantDims& d, const float* scales, const float* offsets) {
  for (int64_t n = 0; n < d.N; ++n) {
    const float* sc = scales + n * d.blocks;
    const float* off = offsets ? offsets + n * d.blocks : nullptr;
    for (int64_t b = 1; b < d.blocks; ++b) {
      if (sc[b] != sc[0] || (off && off[b] != off[0])) return false;
    }
  }
  return true;
}

size_t vnniPanelBytes(const BlockQuantDims& d) { return size_t(d.blocks * d.block) * 16 + size_t(d.blocks) * 16 * 2 * sizeof(float); }

// ops::quantizeActivationBlock 16 values at a time, bit for bit: the same max|x|, the same
// product x * (127 / max) rounded to nearest even, the same sums.
GKRT_TARGET_AVX512_VNNI void vnniQuantizeRows(const BlockQuantDims& d, const float* x, int64_t i0, int64_t i1, Rows& r) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m128i evens_odds = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * d.K;
    int8_t* qr = r.q + i * r.stride;
    for (int64_t b = 0; b < d.blocks; ++b) {
      const int64_t k0 = b * d.block, len = std::min(d.block, d.K - k0);
      __m512 m = _mm512_setzero_ps();
      for (int64_t k = 0; k < len; k += 16) {
        const __mmask16 live = len - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (len - k)) - 1);
        m = _mm512_maskz_max_ps(0xFFFF, m, _mm512_andnot_ps(sign, _mm512_maskz_loadu_ps(live, xr + k0 + k)));
      }
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, m);
      float amax = 0.0f;
      for (float v : lanes) amax = std::max(amax, v);
      const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
      __m512i sum = _mm512_setzero_si512();
      for (int64_t k = 0; k < d.block; k += 16) {
        const __mmask16 live = k >= len ? __mmask16(0) : len - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (len - k)) - 1);
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, xr + k0 + k), inv));
        sum = _mm512_add_epi32(sum, q);
        __m128i bytes = _mm512_cvtsepi32_epi8(q);
        if (d.nibbles) bytes = _mm_shuffle_epi8(bytes, evens_odds);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + k0 + k), bytes);
      }
      const size_t rb = size_t(i * d.blocks + b);
      r.scale[rb] = amax / 127.0f;
      r.sum[rb] = r.scale[rb] * float(_mm512_reduce_add_epi32(sum));
    }
  }
}

void gemmVnniPanelPair(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t p, bool uniform, uint8_t* scratch,
                       float* y) {
  const size_t stride = vnniPanelBytes(d);
  const bool two = (p + 1) * 16 < d.N;
  for (int k = 0; k < (two ? 2 : 1); ++k) {
    uint8_t* vals = scratch + k * stride;
    float* scales = reinterpret_cast<float*>(vals + d.blocks * d.block * 16);
    gatherPanel(d, w, p + k, vals, scales, scales + d.blocks * 16);
  }
  if (two && uniform) {
    panelsRows<2>(d, w, x, p, scratch, stride, true, y);
    return;
  }
  // Per-block scales: one panel at a time (two side by side measured 2-5% slower: SmolLM2's
  // int4 prefill, alternating runs).
  for (int k = 0; k < (two ? 2 : 1); ++k) panelsRows<1>(d, w, x, p + k, scratch + k * stride, stride, uniform, y);
}

}  // namespace gkrt::cpu::block_quant
#endif
