#include "backends/cpu/nn/winograd_conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/vector_math.h"

// V8 values cross only always-inlined helpers; the ABI note for non-AVX callers does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gkrt::cpu {
namespace {

constexpr int64_t kNR = 16;  // output channels per GEMM panel (two 8-float vectors)
constexpr int64_t kMR = 6;   // tiles per micro-kernel call (12 accumulators + 2 panel vectors + 1 broadcast)
// Tile blocks of about 1 MiB of V + M (measured on a 2-core AVX2 VM with 512 KiB L2:
// larger blocks keep the micro-kernel's rows full and read U less often, which
// outweighed staying inside L2).
constexpr int64_t kTaskBytes = 1 << 20;

#define GKRT_INLINE inline __attribute__((always_inline))

// Each hot function is compiled twice on x86-64 GCC, for AVX2+FMA and for the baseline,
// and picked by the CPU tier (cpu_tier.h).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GKRT_WINO_DISPATCH(name, params, args)                                       \
  __attribute__((target("avx2,fma"))) void name##Fma params { name##Body args; }     \
  void name##Base params { name##Body args; }                                        \
  void name params {                                                                 \
    if (cpuTier().has(CpuIsa::kAvx2)) {                                              \
      name##Fma args;                                                                \
    } else {                                                                         \
      name##Base args;                                                               \
    }                                                                                \
  }
#else
#define GKRT_WINO_DISPATCH(name, params, args) \
  void name params { name##Body args; }
#endif

typedef float V8 __attribute__((vector_size(32)));

GKRT_INLINE V8 load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
GKRT_INLINE void store8(float* p, V8 v) { std::memcpy(p, &v, sizeof v); }
GKRT_INLINE V8 splat(float f) { return V8{} + f; }
GKRT_INLINE V8 vmax(V8 a, V8 b) { return a > b ? a : b; }
GKRT_INLINE V8 vmin(V8 a, V8 b) { return a < b ? a : b; }

// B^T d for one column of six vectors (Lavin and Gray's F(4x4, 3x3), points 0, +-1, +-2).
GKRT_INLINE void inputColumn(const V8 d[6], V8 r[6]) {
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
  r[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
  r[3] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
  r[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// A^T m for one column of six vectors.
GKRT_INLINE void outputColumn(const V8 m[6], V8 o[4]) {
  const V8 s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
  o[0] = m[0] + s12 + s34;
  o[1] = d12 + 2.0f * d34;
  o[2] = s12 + 4.0f * s34;
  o[3] = d12 + 8.0f * d34 + m[5];
}

template <int R>
GKRT_INLINE void microKernel(int64_t C, const float* a, int64_t lda, const float* b, float* c, int64_t ldc) {
  V8 acc0[R] = {}, acc1[R] = {};
  for (int64_t k = 0; k < C; ++k) {
    const V8 b0 = load8(b + k * kNR), b1 = load8(b + k * kNR + 8);
    for (int r = 0; r < R; ++r) {
      const float av = a[r * lda + k];
      acc0[r] += av * b0;
      acc1[r] += av * b1;
    }
  }
  for (int r = 0; r < R; ++r) {
    store8(c + r * ldc, acc0[r]);
    store8(c + r * ldc + 8, acc1[r]);
  }
}

GKRT_INLINE void microKernelRows(int64_t rows, int64_t C, const float* a, int64_t lda, const float* b, float* c,
                                 int64_t ldc) {
  switch (rows) {
    case 6: return microKernel<6>(C, a, lda, b, c, ldc);
    case 5: return microKernel<5>(C, a, lda, b, c, ldc);
    case 4: return microKernel<4>(C, a, lda, b, c, ldc);
    case 3: return microKernel<3>(C, a, lda, b, c, ldc);
    case 2: return microKernel<2>(C, a, lda, b, c, ldc);
    default: return microKernel<1>(C, a, lda, b, c, ldc);
  }
}

struct TaskArgs {
  const WinogradShape* s;
  const float* x;
  float* y;
  const float* u;
  const float* bias;
  int64_t k_panels;
  int64_t n, tr0, trn, tc0, tcn;  // the task's tile rectangle
  float* v;                       // [36][T][C]
  float* m;                       // [36][T][k_panels * 16]
};

// Input transform of tiles [i0, i1) of the rectangle into V.
GKRT_INLINE void inputTilesBody(const TaskArgs& t, int64_t i0, int64_t i1) {
  const WinogradShape& s = *t.s;
  const int64_t C = s.C, CB = C / 8, T = t.trn * t.tcn, B = s.block, halves = B / 8;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t th = t.tr0 + i / t.tcn, tw = t.tc0 + i % t.tcn;
    const int64_t ih0 = th * 4 - s.pad_top, iw0 = tw * 4 - s.pad_left;
    const bool inside = ih0 >= 0 && iw0 >= 0 && ih0 + 6 <= s.H && iw0 + 6 <= s.W;
    for (int64_t cb = 0; cb < CB; ++cb) {  // 8 channels at a time: a block or half of one
      const float* plane = t.x + (t.n * (C / B) + cb / halves) * s.H * s.W * B + (cb % halves) * 8;
      V8 rows[6][6];
      for (int j = 0; j < 6; ++j) {
        V8 d[6];
        const int64_t iw = iw0 + j;
        for (int r = 0; r < 6; ++r) {
          const int64_t ih = ih0 + r;
          d[r] = inside || (ih >= 0 && ih < s.H && iw >= 0 && iw < s.W) ? load8(plane + (ih * s.W + iw) * B) : V8{};
        }
        V8 col[6];
        inputColumn(d, col);
        for (int r = 0; r < 6; ++r) rows[r][j] = col[r];
      }
      for (int r = 0; r < 6; ++r) {
        V8 out[6];
        inputColumn(rows[r], out);
        for (int j = 0; j < 6; ++j) store8(t.v + ((r * 6 + j) * T + i) * C + cb * 8, out[j]);
      }
    }
  }
}

// GEMMs [j0, j1) of the 36 * k_panels (transform point, 16-channel panel) pairs: M = V U.
GKRT_INLINE void gemmPanels8Body(const TaskArgs& t, int64_t j0, int64_t j1) {
  const int64_t C = t.s->C, T = t.trn * t.tcn, ldm = t.k_panels * kNR;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t xi = j / t.k_panels, p = j % t.k_panels;
    const float* b = t.u + j * C * kNR;
    for (int64_t r0 = 0; r0 < T; r0 += kMR) {
      microKernelRows(std::min(kMR, T - r0), C, t.v + (xi * T + r0) * C, C, b, t.m + (xi * T + r0) * ldm + p * kNR,
                      ldm);
    }
  }
}

// Output transform (A^T m A, plus the bias) of tiles [i0, i1) of the rectangle into y.
GKRT_INLINE void outputTilesBody(const TaskArgs& t, int64_t i0, int64_t i1) {
  const WinogradShape& s = *t.s;
  const int64_t KB = s.K / 8, ldm = t.k_panels * kNR, T = t.trn * t.tcn, B = s.block, halves = B / 8;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t th = t.tr0 + i / t.tcn, tw = t.tc0 + i % t.tcn;
    const int64_t oh0 = th * 4, ow0 = tw * 4;
    const int64_t hn = std::min<int64_t>(4, s.OH - oh0), wn = std::min<int64_t>(4, s.OW - ow0);
    for (int64_t kb = 0; kb < KB; ++kb) {
      V8 cols[4][6];  // A^T m, per column
      for (int j = 0; j < 6; ++j) {
        V8 m[6];
        for (int r = 0; r < 6; ++r) m[r] = load8(t.m + ((r * 6 + j) * T + i) * ldm + kb * 8);
        V8 o[4];
        outputColumn(m, o);
        for (int r = 0; r < 4; ++r) cols[r][j] = o[r];
      }
      const V8 bias = load8(t.bias + kb * 8);
      float* plane = t.y + (t.n * (s.K / B) + kb / halves) * s.OH * s.OW * B + (kb % halves) * 8;
      for (int r = 0; r < hn; ++r) {
        V8 o[4];
        outputColumn(cols[r], o);
        for (int j = 0; j < wn; ++j) store8(plane + ((oh0 + r) * s.OW + ow0 + j) * B, o[j] + bias);
      }
    }
  }
}

GKRT_WINO_DISPATCH(inputTiles, (const TaskArgs& t, int64_t i0, int64_t i1), (t, i0, i1))
GKRT_WINO_DISPATCH(gemmPanels8, (const TaskArgs& t, int64_t j0, int64_t j1), (t, j0, j1))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// On cores with full-width 512-bit FMAs (CpuTier::full_width_512) the panel's 16 channels
// are one zmm vector: 12 tiles a call, twice the 8-float kernel's FMAs a cycle there
// (on Zen 4, which splits zmm in two, the 8-float kernel was the faster).
typedef float V16 __attribute__((vector_size(64)));
constexpr int64_t kMR16 = 12;

template <int R>
GKRT_INLINE void microKernel16(int64_t C, const float* a, int64_t lda, const float* b, float* c, int64_t ldc) {
  V16 acc[R] = {};
  for (int64_t k = 0; k < C; ++k) {
    V16 bv;
    std::memcpy(&bv, b + k * kNR, sizeof bv);
    for (int r = 0; r < R; ++r) acc[r] += a[r * lda + k] * bv;
  }
  for (int r = 0; r < R; ++r) std::memcpy(c + r * ldc, &acc[r], sizeof acc[r]);
}

template <int R>
GKRT_INLINE void microKernel16Rows(int64_t rows, int64_t C, const float* a, int64_t lda, const float* b, float* c,
                                   int64_t ldc) {
  if constexpr (R > 1) {
    if (rows < R) return microKernel16Rows<R - 1>(rows, C, a, lda, b, c, ldc);
  }
  microKernel16<R>(C, a, lda, b, c, ldc);
}

__attribute__((target("avx512f,avx512vl,avx2,fma"))) void gemmPanelsZmm(const TaskArgs& t, int64_t j0, int64_t j1) {
  const int64_t C = t.s->C, T = t.trn * t.tcn, ldm = t.k_panels * kNR;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t xi = j / t.k_panels, p = j % t.k_panels;
    const float* b = t.u + j * C * kNR;
    for (int64_t r0 = 0; r0 < T; r0 += kMR16) {
      microKernel16Rows<kMR16>(std::min(kMR16, T - r0), C, t.v + (xi * T + r0) * C, C, b,
                               t.m + (xi * T + r0) * ldm + p * kNR, ldm);
    }
  }
}
#endif

void gemmPanels(const TaskArgs& t, int64_t j0, int64_t j1) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (cpuTier().full_width_512) return gemmPanelsZmm(t, j0, j1);
#endif
  gemmPanels8(t, j0, j1);
}


GKRT_WINO_DISPATCH(outputTiles, (const TaskArgs& t, int64_t i0, int64_t i1), (t, i0, i1))

GKRT_INLINE V8 binary(WinogradStep::Op op, V8 a, V8 b) {
  switch (op) {
    case WinogradStep::kAdd: return a + b;
    case WinogradStep::kSub: return a - b;
    case WinogradStep::kMul: return a * b;
    case WinogradStep::kMax: return vmax(a, b);
    case WinogradStep::kMin: return vmin(a, b);
  }
  return a;
}

// One step over n floats (n % 8 == 0) at y; `full` (same layout) or `chan` (the 8 or
// 16 channels of this block, `period` floats) for binary steps; tmp: n floats of scratch.
GKRT_INLINE void applyStepBody(const WinogradStep& st, float* y, int64_t n, const float* full, const float* chan,
                                int64_t period, float* tmp) {
  const V8 a = splat(st.alpha), b = splat(st.beta);
  switch (st.kind) {
    case WinogradStep::kRelu:
      for (int64_t i = 0; i < n; i += 8) {
        const V8 v = load8(y + i);
        store8(y + i, v > 0.0f ? v : v * a);
      }
      return;
    case WinogradStep::kClip:
      for (int64_t i = 0; i < n; i += 8) store8(y + i, vmin(vmax(load8(y + i), a), b));
      return;
    case WinogradStep::kLinear:
      for (int64_t i = 0; i < n; i += 8) store8(y + i, a * load8(y + i) + b);
      return;
    case WinogradStep::kHardSwish:
      for (int64_t i = 0; i < n; i += 8) {
        const V8 v = load8(y + i);
        store8(y + i, v * vmin(vmax(v + 3.0f, splat(0.0f)), splat(6.0f)) * (1.0f / 6.0f));
      }
      return;
    case WinogradStep::kHardSigmoid:
      for (int64_t i = 0; i < n; i += 8) store8(y + i, vmin(vmax(a * load8(y + i) + b, splat(0.0f)), splat(1.0f)));
      return;
    case WinogradStep::kAbs:
      for (int64_t i = 0; i < n; i += 8) {
        const V8 v = load8(y + i);
        store8(y + i, v < 0.0f ? -v : v);
      }
      return;
    case WinogradStep::kSquare:
      for (int64_t i = 0; i < n; i += 8) {
        const V8 v = load8(y + i);
        store8(y + i, v * v);
      }
      return;
    case WinogradStep::kSqrt:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(y[i]);
      return;
    case WinogradStep::kExp: return vecMath(VecFn::kExp, y, y, n);
    case WinogradStep::kTanh: return vecMath(VecFn::kTanh, y, y, n);
    case WinogradStep::kSigmoid:
    case WinogradStep::kSwish: {
      const float scale = st.kind == WinogradStep::kSwish ? -st.alpha : -1.0f;
      for (int64_t i = 0; i < n; i += 8) store8(tmp + i, load8(y + i) * scale);
      vecMath(VecFn::kExp, tmp, tmp, n);
      for (int64_t i = 0; i < n; i += 8) {
        const V8 e = load8(tmp + i) + 1.0f;
        store8(y + i, st.kind == WinogradStep::kSwish ? load8(y + i) / e : 1.0f / e);
      }
      return;
    }
    case WinogradStep::kGeluErf:
      for (int64_t i = 0; i < n; i += 8) store8(tmp + i, load8(y + i) * 0.70710678118654752f);
      vecMath(VecFn::kErf, tmp, tmp, n);
      for (int64_t i = 0; i < n; i += 8) store8(y + i, 0.5f * load8(y + i) * (1.0f + load8(tmp + i)));
      return;
    case WinogradStep::kGeluTanh:
      for (int64_t i = 0; i < n; i += 8) {
        const V8 v = load8(y + i);
        store8(tmp + i, 0.79788456080286536f * (v + 0.044715f * v * v * v));
      }
      vecMath(VecFn::kTanh, tmp, tmp, n);
      for (int64_t i = 0; i < n; i += 8) store8(y + i, 0.5f * load8(y + i) * (1.0f + load8(tmp + i)));
      return;
    case WinogradStep::kBinary: {
      if (chan && period == 16) {
        const V8 c0 = load8(chan), c1 = load8(chan + 8);
        for (int64_t i = 0; i < n; i += 16) {
          store8(y + i, binary(st.op, load8(y + i), c0));
          store8(y + i + 8, binary(st.op, load8(y + i + 8), c1));
        }
        return;
      }
      const V8 c = chan ? load8(chan) : a;
      for (int64_t i = 0; i < n; i += 8) store8(y + i, binary(st.op, load8(y + i), full ? load8(full + i) : c));
      return;
    }
  }
}

GKRT_WINO_DISPATCH(applyStep,
                   (const WinogradStep& st, float* y, int64_t n, const float* full, const float* chan, int64_t period,
                    float* tmp),
                   (st, y, n, full, chan, period, tmp))

}  // namespace

WinogradConv::WinogradConv(const WinogradShape& s, const float* weights, const float* bias,
                           std::vector<WinogradStep> steps, int threads, Split split)
    : s_(s), steps_(std::move(steps)) {
  tiles_h_ = (s.OH + 3) / 4;
  tiles_w_ = (s.OW + 3) / 4;
  k_panels_ = (s.K + kNR - 1) / kNR;
  const int64_t C = s.C, K = s.K;
  // U = G g G^T per (k, c), in double, laid out as 36 GEMM operands of 16-column panels.
  static const double G[6][3] = {{1.0 / 4, 0, 0},          {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  u_.assign(static_cast<size_t>(36 * k_panels_ * C * kNR), 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t c = 0; c < C; ++c) {
      const float* g = weights + (k * C + c) * 9;
      double gt[6][3];  // G g
      for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 3; ++j) gt[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      }
      for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 6; ++j) {
          const double v = gt[i][0] * G[j][0] + gt[i][1] * G[j][1] + gt[i][2] * G[j][2];
          u_[static_cast<size_t>((((i * 6 + j) * k_panels_ + k / kNR) * C + c) * kNR + k % kNR)] = static_cast<float>(v);
        }
      }
    }
  }
  bias_.assign(static_cast<size_t>(K), 0.0f);
  if (bias) std::copy(bias, bias + K, bias_.begin());
  threads_ = std::max(1, threads);
  tmp_floats_ = static_cast<size_t>(s.OW * s.block);
  // Two ways to split the work:
  //  - tile blocks: each task of the pool transforms, multiplies and writes a block of
  //    tile rows (or part of one row), in the core's own caches; every task reads all
  //    of U.
  //  - whole image, when U is larger than V and M of the image (deep layers on small
  //    maps): the input transform over all tiles, then the 36 GEMMs split by (point,
  //    panel), then the output transform, each pass over the pool; U is read once
  //    (its reads shared by the threads), V and M cross between cores through L3.
  const int64_t per_tile = 36 * (C + k_panels_ * kNR) * 4;
  const int64_t u_bytes = 36 * C * k_panels_ * kNR * 4;
  whole_image_ = split == Split::kAuto ? u_bytes > per_tile * tiles_h_ * tiles_w_ : split == Split::kWholeImage;
  const int64_t tiles_fit = std::max<int64_t>(kMR, kTaskBytes / per_tile);
  if (whole_image_) {
    rows_per_task_ = tiles_h_;
    cols_per_task_ = tiles_w_;
  } else if (tiles_fit >= tiles_w_) {
    // Row blocks in a multiple of the thread count (a balanced split: 7 rows on 2
    // threads as 4 + 3, not 3 + 3 + 1), as few as fit the budget.
    const int64_t rows_fit = std::max<int64_t>(1, tiles_fit / tiles_w_);
    int64_t parts = s.N >= threads_ ? 1 : threads_;
    while ((tiles_h_ + parts - 1) / parts > rows_fit) parts += s.N >= threads_ ? 1 : threads_;
    rows_per_task_ = std::max<int64_t>(1, (tiles_h_ + parts - 1) / parts);
    cols_per_task_ = tiles_w_;
  } else {
    rows_per_task_ = 1;
    cols_per_task_ = tiles_fit / kMR * kMR;
  }
  const int64_t T = rows_per_task_ * cols_per_task_;
  v_floats_ = static_cast<size_t>(36 * T * C);
  m_floats_ = static_cast<size_t>(36 * T * k_panels_ * kNR);
}

size_t WinogradConv::perThreadFloats() const {
  return ((whole_image_ ? 0 : v_floats_ + m_floats_) + tmp_floats_ + 15) / 16 * 16;
}

size_t WinogradConv::workspaceBytes() const {
  const size_t shared = whole_image_ ? (v_floats_ + m_floats_ + 15) / 16 * 16 : 0;
  return (shared + perThreadFloats() * threads_) * sizeof(float) + 64;
}

bool WinogradConv::worthIt(const WinogradShape& s) {
  if (s.block != 8 && s.block != 16) return false;
  if (s.C < 16 || s.K < 16 || s.C % s.block || s.K % s.block) return false;
  const int64_t tiles = s.outputTiles();
  // Multiplications: 36 per tile and channel pair against 9 per output pixel; the
  // transformed weights (36 * C * K floats) are read once per task.
  const double direct = 9.0 * s.OH * s.OW * s.N;
  const double wino = 36.0 * tiles;
  return wino < 0.6 * direct && tiles >= 16;
}

void WinogradConv::run(const float* x, float* y, const std::vector<const float*>& inputs, void* workspace,
                       ThreadPool& pool) const {
  float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(workspace) + 63) / 64 * 64);
  if (whole_image_) {
    float* v = base;
    float* m = v + v_floats_;
    float* per_thread = base + (v_floats_ + m_floats_ + 15) / 16 * 16;
    const int64_t T = tiles_h_ * tiles_w_, KB = s_.K / s_.block;
    for (int64_t n = 0; n < s_.N; ++n) {
      const TaskArgs t{&s_, x, y, u_.data(), bias_.data(), k_panels_, n, 0, tiles_h_, 0, tiles_w_, v, m};
      pool.parallelFor(T, 1, 1, [&](int, int64_t b, int64_t e) { inputTiles(t, b, e); });
      pool.parallelFor(36 * k_panels_, 1, 1, [&](int, int64_t b, int64_t e) { gemmPanels(t, b, e); });
      pool.parallelFor(T, 1, 1, [&](int, int64_t b, int64_t e) { outputTiles(t, b, e); });
      if (steps_.empty()) continue;
      pool.parallelFor(KB * s_.OH, 1, 1, [&](int thread, int64_t b, int64_t e) {
        float* tmp = per_thread + perThreadFloats() * std::min(thread, threads_ - 1);
        for (int64_t r = b; r < e; ++r) epilogue(n, r % s_.OH, r % s_.OH + 1, 0, s_.OW, r / s_.OH, r / s_.OH + 1, y, inputs, tmp);
      });
    }
    return;
  }
  const int64_t row_tasks = (tiles_h_ + rows_per_task_ - 1) / rows_per_task_;
  const int64_t col_tasks = (tiles_w_ + cols_per_task_ - 1) / cols_per_task_;
  const int64_t tasks = s_.N * row_tasks * col_tasks;
  pool.parallelFor(tasks, 1, 1, [&](int thread, int64_t begin, int64_t end) {
    float* scratch = base + perThreadFloats() * std::min(thread, threads_ - 1);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / (row_tasks * col_tasks), rest = task % (row_tasks * col_tasks);
      const int64_t tr0 = rest / col_tasks * rows_per_task_, tc0 = rest % col_tasks * cols_per_task_;
      const TaskArgs t{&s_, x, y, u_.data(), bias_.data(), k_panels_, n, tr0, std::min(rows_per_task_, tiles_h_ - tr0),
                       tc0, std::min(cols_per_task_, tiles_w_ - tc0), scratch, scratch + v_floats_};
      const int64_t T = t.trn * t.tcn;
      inputTiles(t, 0, T);
      gemmPanels(t, 0, 36 * k_panels_);
      outputTiles(t, 0, T);
      if (!steps_.empty()) {
        epilogue(n, tr0 * 4, std::min(s_.OH, (tr0 + t.trn) * 4), tc0 * 4, std::min(s_.OW, (tc0 + t.tcn) * 4), 0,
                 s_.K / s_.block, y, inputs, scratch + v_floats_ + m_floats_);
      }
    }
  });
}

void WinogradConv::epilogue(int64_t n, int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1, int64_t kb0, int64_t kb1,
                            float* y, const std::vector<const float*>& inputs, float* tmp) const {
  const int64_t B = s_.block, KB = s_.K / B, len = (ow1 - ow0) * B;
  for (int64_t kb = kb0; kb < kb1; ++kb) {
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const int64_t off = (((n * KB + kb) * s_.OH + oh) * s_.OW + ow0) * B;
      for (const WinogradStep& st : steps_) {
        const float* full = nullptr;
        const float* chan = nullptr;
        if (st.kind == WinogradStep::kBinary && st.operand == WinogradStep::kFull) full = inputs[st.input] + off;
        if (st.kind == WinogradStep::kBinary && st.operand == WinogradStep::kChannel) {
          chan = (st.channel ? st.channel : inputs[st.input]) + kb * B;
        }
        applyStep(st, y + off, len, full, chan, B, tmp);
      }
    }
  }
}

}  // namespace gkrt::cpu
