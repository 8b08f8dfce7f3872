// Winograd F(4x4, 3x3) convolution on channel-blocked float32 activations (nChw8c or
// nChw16c: 8 or 16 channels innermost), the cpu backend's own kernel for 3x3, stride-1,
// undilated, ungrouped convolutions. oneDNN 2.6 has Winograd only for AVX-512 machines,
// and there only F(2x2, 3x3) (2.25x fewer multiplications than direct; F(4x4) 4x); on
// AVX2 its direct convolution does them all. The transforms and the GEMM micro-kernel
// work on 8-float vectors (a 16-channel block is two of them): on CPUs whose AVX-512
// runs as two 256-bit halves (AMD Zen 4) that is the FMA peak (a 12x16 zmm GEMM kernel
// measured 15% slower there); CPUs with two 512-bit FMA units get half of theirs.
//
// Per block of output tile rows (one task of the pool): the 6x6 input tiles are
// transformed (B^T d B) into V[36][tiles][C], 36 GEMMs multiply them by the weights
// transformed at compile (U[36][C][K], G g G^T computed in double), and the output
// transform (A^T m A) adds the bias and writes 4x4 output tiles; then the epilogue
// (activations, residual or per-channel operands) runs over the rows just written,
// still in cache. Arithmetic is in float32; the transforms' rounding makes results
// differ from a direct convolution by a few ulps of the largest partial sums
// (tests/unit/cpu_winograd_test.cc states the tolerance).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// Channels innermost in the activations it reads and writes: kWinogradBlock (nChw8c,
// AVX2) or 16 (nChw16c, AVX-512's blocked plans): WinogradShape::block.
constexpr int kWinogradBlock = 8;

// One step of the epilogue, applied in order to the output (after the bias).
struct WinogradStep {
  enum Kind : uint8_t {
    kRelu,         // x > 0 ? x : alpha x
    kClip,         // min(max(x, alpha), beta)
    kLinear,       // alpha x + beta
    kSigmoid,      // 1 / (1 + exp(-x))
    kSwish,        // x / (1 + exp(-alpha x))
    kHardSwish,    // x * min(max(x + 3, 0), 6) / 6
    kHardSigmoid,  // min(max(alpha x + beta, 0), 1)
    kTanh,
    kGeluErf,
    kGeluTanh,
    kAbs,
    kSquare,
    kSqrt,
    kExp,
    kBinary,  // with another operand: `op`, read as `operand`
  };
  enum Op : uint8_t { kAdd, kSub, kMul, kMax, kMin };
  enum Operand : uint8_t {
    kFull,     // same shape and (blocked) layout as the output: input `input` of the launch
    kChannel,  // one value per output channel: `channel` (constant) or input `input` (K floats)
    kScalar,   // `alpha`
  };
  Kind kind = kRelu;
  float alpha = 0, beta = 0;
  Op op = kAdd;
  Operand operand = kFull;
  int input = -1;
  const float* channel = nullptr;
};

struct WinogradShape {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input, C % block == 0
  int64_t K = 0, OH = 0, OW = 0;       // output, K % block == 0
  int64_t pad_top = 0, pad_left = 0;   // bottom/right padding follows from OH/OW
  // 4x4 output tiles over the batch.
  int64_t outputTiles() const { return (OH + 3) / 4 * ((OW + 3) / 4) * N; }
  int64_t block = kWinogradBlock;      // 8 or 16
};

class WinogradConv {
 public:
  // How the work is split over the pool (see the constructor); kAuto picks by size.
  enum class Split { kAuto, kWholeImage, kTileBlocks };
  // `weights`: [K, C, 3, 3] float32; `bias`: K floats or null.
  WinogradConv(const WinogradShape& s, const float* weights, const float* bias, std::vector<WinogradStep> steps,
               int threads, Split split = Split::kAuto);

  // Scratch the run needs (per thread of the pool).
  size_t workspaceBytes() const;
  // x: [N, C/block, H, W, block]; y: [N, K/block, OH, OW, block]; `inputs`: the launch's operands that
  // steps refer to by index (full-size ones in y's layout, channel ones K floats).
  void run(const float* x, float* y, const std::vector<const float*>& inputs, void* workspace, ThreadPool& pool) const;

  // Whether Winograd is expected to beat a direct convolution on this shape (enough
  // output tiles and channels for the transforms and the weight traffic to pay off).
  static bool worthIt(const WinogradShape& s);

  // Tile columns one task of the pool takes (all of a row unless a row is split).
  int64_t tileColsPerTask() const { return cols_per_task_; }
  bool wholeImage() const { return whole_image_; }

 private:
  size_t perThreadFloats() const;
  void epilogue(int64_t n, int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1, int64_t kb0, int64_t kb1, float* y,
                const std::vector<const float*>& inputs, float* tmp) const;

  WinogradShape s_;
  int64_t tiles_h_ = 0, tiles_w_ = 0, k_panels_ = 0, rows_per_task_ = 1, cols_per_task_ = 1;
  int threads_ = 1;
  bool whole_image_ = false;  // see the constructor
  std::vector<float> u_;     // [36][k_panels][C][16], zero-padded past K
  std::vector<float> bias_;  // K floats (zeros without a bias)
  std::vector<WinogradStep> steps_;
  size_t v_floats_ = 0, m_floats_ = 0, tmp_floats_ = 0;
};

}  // namespace gkrt::cpu
