// Parts the block-quant kernel (block_quant_matmul_kernel.cc) shares with its AVX2
// loops (block_quant_avx2.cc): a launch's operands, the rows of x as the streaming loops
// read them, and the value and offset of a stored weight.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/ir/ops/block_quant_matmul.h"

namespace gkrt::cpu::block_quant {

using ops::BlockQuantDims;
constexpr int64_t kMaxRows = 4;           // rows of the streaming kernels
// Rows streamed (kMaxRows a pass) before the prefill GEMM pays (SmolLM2's int4 prompt on
// an AVX2 EPYC, 2 threads: 9 rows 56 ms streamed vs 78 ms GEMM, 16 rows 86 vs 71).
constexpr int64_t kMaxStreamRows = 12;
// The same for float activations, which each pass widens again: 8 rows of 768 x 3072
// took 0.81 ms streamed against 0.72 on the packed panels (AVX-512 EPYC, 1 thread;
// 0.44 against 0.37 at 2); 6 rows 0.69 against 0.72, 5 rows 0.59 against 0.71.
constexpr int64_t kMaxFloatStreamRows = 6;

struct Weights {  // one launch's constant operands
  const uint8_t* w = nullptr;
  const float* scales = nullptr;
  const float* offsets = nullptr;
  const float* bias = nullptr;
};

// The rows of x prepared for the streaming kernels, each padded with zeros to blocks * B
// values, in the order the kernel reads the nibbles (Order):
//  kChunks32: every 32 values evens then odds (a 16-byte group's low and high nibbles);
//  kUnits64: every 64 values [evens of the first 32, evens of the second 32, odds of the
//            first, odds of the second] (a 32-byte group's low and high nibbles), a last
//            odd 32 as kChunks32.
enum class Order { kNatural, kChunks32, kUnits64 };
struct Rows {
  int64_t count = 0, stride = 0;
  int8_t* q = nullptr;      // precision int8: the quantized values
  float* f = nullptr;       // precision float32: the values
  float* scale = nullptr;   // int8: sx per row and block
  float* sum = nullptr;     // per row and block: sum of the block (int8: sx * sum(qx))
  float* scale8 = nullptr;  // kUnits64: per row and unit of 64, sx of its halves x4 each
  int64_t units = 0;        // units of 64 a row (the last may be half)
};

// The streaming loops' shape, one place for every tier: `loop(rows, cols, n)` (rows and
// cols std::integral_constant) for R = x.count rows (at most kMaxRows) against output
// columns n .. n + cols, cols 4 for one row, 2 for two, 1 for more while they last, then
// one at a time up to n1.
template <int R, class Loop>
inline void streamColumnGroups(int64_t n0, int64_t n1, Loop&& loop) {
  constexpr int NC = R == 1 ? 4 : R == 2 ? 2 : 1;
  int64_t n = n0;
  for (; n + NC <= n1; n += NC) loop(std::integral_constant<int, R>{}, std::integral_constant<int, NC>{}, n);
  for (; n < n1; ++n) loop(std::integral_constant<int, R>{}, std::integral_constant<int, 1>{}, n);
}
template <class Loop>
inline void streamRowsAndColumns(const Rows& x, int64_t n0, int64_t n1, Loop&& loop) {
  switch (x.count) {
    case 1: return streamColumnGroups<1>(n0, n1, loop);
    case 2: return streamColumnGroups<2>(n0, n1, loop);
    case 3: return streamColumnGroups<3>(n0, n1, loop);
    default: return streamColumnGroups<4>(n0, n1, loop);
  }
}

// The stored value k of a block as the integer it stands for.
inline int storedValue(const BlockQuantDims& d, const uint8_t* blk, int64_t k) {
  if (!d.nibbles) return static_cast<int8_t>(blk[k]);
  const int u = (blk[k / 2] >> (4 * (k % 2))) & 15;
  return d.signed_nibbles ? (u ^ 8) - 8 : u;
}

inline float offsetOf(const BlockQuantDims& d, const Weights& w, int64_t n, int64_t b, bool unsigned_view) {
  const float o = w.offsets ? w.offsets[n * d.blocks + b] : 0.0f;
  // The AVX2 kernels read int4 nibbles as u = q + 8: the -8 becomes part of the offset.
  return unsigned_view && d.signed_nibbles ? o - 8.0f * w.scales[n * d.blocks + b] : o;
}

// Columns [n0, n0 + cols) widened into 16-column float panels [ceil(cols/16)][K][16]
// for the packed GEMM (gemm.h): the spare lanes of the last panel zeroed first.
void zeroSpareLanes(const BlockQuantDims& d, int64_t cols, float* panels);

// AVX2+FMA loops (block_quant_avx2.cc; x86-64 builds only, B a multiple of 32): output
// columns [n0, n1) of x.count rows (rows prepared in Order kUnits64 for int8 activations
// against 4-bit values, kChunks32 for float activations against them, kNatural for 8-bit
// values); the panels for columns [n0, n0 + cols).
void streamAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y);
void widenPanelsAvx2(const BlockQuantDims& d, const Weights& w, int64_t n0, int64_t cols, float* panels);
// The same columns with each column's K values contiguous (column j at dst + j * K:
// oneDNN's transposed weights, block_quant_onednn.h).
void widenColumnsAvx2(const BlockQuantDims& d, const Weights& w, int64_t n0, int64_t cols, float* dst);
// The offsets' term of column n for each of x.count rows (the -8 of signed nibbles read
// as q + 8 included): off[r] = sum over blocks of (offset - 8 scale) * sum of the block of x.
void offsetTermsAvx2(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n, float* off);

// The aarch64 decode loops (block_quant_neon.cc), B a multiple of 32: whether they run
// here (int8 activations: the CPU tier has dotprod; float activations: NEON), and output
// columns [n0, n1) of x.count rows (x in Order kChunks32 for 4-bit values, kNatural for
// 8-bit ones).
bool neonStreamSuits(const BlockQuantDims& d);
void streamNeon(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y);

// The AVX-512 VNNI prefill GEMM (block_quant_vnni.cc), int8 activations and B a multiple
// of 32: whether it runs here (the CPU tier has avx512_vnni), the scratch a panel of 16
// columns takes, rows i0 .. i1 of x quantized into r (q, scale, sum) in its order, and
// panel p's 16 columns of y for every row of x.
bool vnniSuits(const BlockQuantDims& d);
// The 4-bit decode loop on AVX-512 VNNI (int8 activations, B a multiple of 32): as
// streamAvx2 for 4-bit values, two units of 64 values a step (block_quant_vnni.cc).
bool vnniStreamSuits(const BlockQuantDims& d);
void streamInt4Vnni(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y);
size_t vnniPanelBytes(const BlockQuantDims& d);
void vnniQuantizeRows(const BlockQuantDims& d, const float* x, int64_t i0, int64_t i1, Rows& r);
// Weights whose blocks share their column's scale and offset (`uniform`: checked once at
// compile on the constant scales and offsets) have the scales applied once, not per block.
bool vnniUniformColumns(const BlockQuantDims& d, const float* scales, const float* offsets);
// Panels p and p + 1 (p alone when it is the last), 2 x vnniPanelBytes of scratch.
void gemmVnniPanelPair(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t p, bool uniform, uint8_t* scratch,
                       float* y);

}  // namespace gkrt::cpu::block_quant
