#include "backends/cpu/rnn/recurrent_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/math/gemm.h"
#include "backends/cpu/isa/row_math.h"
#include "backends/cpu/isa/vector_math.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/recurrent.h"

namespace gkrt::cpu {
namespace {

using ops::Activation;
using ops::RecurrentKind;
using ops::RecurrentSpec;

constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7;

const ir::Tensor* inputTensor(const ir::Graph& g, const ir::Node& node, int k) {
  return static_cast<int>(node.inputs.size()) > k && node.inputs[k] >= 0 ? &g.tensors[node.inputs[k]] : nullptr;
}

// v = act(v) over n elements; sigmoid as 0.5 tanh(x/2) + 0.5 so both run vectorised.
void activate(const Activation& a, float* v, int64_t n) {
  switch (a.fn) {
    case RnnActivation::kTanh:
      vecMath(VecFn::kTanh, v, v, n);
      return;
    case RnnActivation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) v[i] *= 0.5f;
      vecMath(VecFn::kTanh, v, v, n);
      for (int64_t i = 0; i < n; ++i) v[i] = 0.5f * v[i] + 0.5f;
      return;
    default:
      for (int64_t i = 0; i < n; ++i) v[i] = ops::applyActivation(a, v[i]);
  }
}

void clipTo(float bound, float* v, int64_t n) {
  if (bound <= 0.0f) return;
  for (int64_t i = 0; i < n; ++i) v[i] = std::min(bound, std::max(-bound, v[i]));
}

// Each loop below has one build per x86-64 tier, picked by cpuTier() (GKRT_TIERED and
// GKRT_TIERED_LANES, cpu_tier.h), so GKRT_CPU_ISA caps it. The R^T products use the tier's
// vector type: written with 16-float vectors, their AVX2 build went through the stack
// (~1.2 GFLOP/s: silero's LSTM 0.86 ms for 16 steps of hidden 128, 0.13 with 8-float ones).
// (a macro: a function returning a vector type warns of the ABI in the portable build)
#define GKRT_LOADV(V, p) ({ V v_; std::memcpy(&v_, (p), sizeof v_); v_; })
template <class V>
constexpr int kLanes = int(sizeof(V) / sizeof(float));

// acc[0:n] += sum_k h[k] * rt[k * ldr + 0:n]: one row of H times R^T (R stored
// transposed, so each step streams it once in order). Four rows of R per pass over acc;
// the loops vectorise at the tier's width.
GKRT_INLINE_BODY void addRowTimesBody(const float* h, const float* rt, int64_t K, int64_t ldr, int64_t n,
                                      float* __restrict acc) {
  int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const float h0 = h[k], h1 = h[k + 1], h2 = h[k + 2], h3 = h[k + 3];
    const float* __restrict r0 = rt + k * ldr;
    const float* __restrict r1 = r0 + ldr;
    const float* __restrict r2 = r1 + ldr;
    const float* __restrict r3 = r2 + ldr;
    for (int64_t j = 0; j < n; ++j) acc[j] += h0 * r0[j] + h1 * r1[j] + h2 * r2[j] + h3 * r3[j];
  }
  for (; k < K; ++k) {
    const float hk = h[k];
    const float* __restrict r = rt + k * ldr;
    for (int64_t j = 0; j < n; ++j) acc[j] += hk * r[j];
  }
}
GKRT_TIERED(void, addRowTimes, (const float* h, const float* rt, int64_t K, int64_t ldr, int64_t n, float* acc),
            (h, rt, K, ldr, n, acc), "avx512f", "fma")

// acc[b][0:n] += sum_k h[b][k] * rt[k * ldr + 0:n] for B rows of h (stride H = K) and
// acc (stride lda): C vectors of columns at a time with the B rows' sums in registers,
// each row of R read once for all B (one row at a time read R once a row, and acc once a 4 k).
// Per tier, rows a pass x vectors a chunk = accumulators: AVX-512 4 x 4 (16 of 32 zmm),
// AVX2 3 x 4 (12 of 16 ymm), SSE2/NEON 2 x 4 (8 of 16).
template <class V>
constexpr int kRowsAPass = kLanes<V> == 16 ? 4 : kLanes<V> == 8 ? 3 : 2;

// C column vectors for B rows: B x C independent FMA chains over k (one chain a chunk
// waited on each FMA's latency). R's rows `ldr` apart.
template <class V, int B, int C>
__attribute__((always_inline)) inline void addRowsTimesChunks(const float* h, const float* rt, int64_t K, int64_t ldr, float* acc,
                                                              int64_t lda, int64_t j0) {
  constexpr int L = kLanes<V>;
  V a[B][C];
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c) a[b][c] = GKRT_LOADV(V, acc + b * lda + j0 + L * c);
  for (int64_t k = 0; k < K; ++k) {
    const float* r = rt + k * ldr + j0;
    V rv[C];
    for (int c = 0; c < C; ++c) rv[c] = GKRT_LOADV(V, r + L * c);
    for (int b = 0; b < B; ++b) {
      const V hb = V{} + h[b * K + k];
      for (int c = 0; c < C; ++c) a[b][c] += hb * rv[c];
    }
  }
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c) std::memcpy(acc + b * lda + j0 + L * c, &a[b][c], sizeof(V));
}

template <class V, int B>
__attribute__((always_inline)) inline void addRowsTimesRows(const float* h, const float* rt, int64_t K, int64_t ldr, int64_t n,
                                                            float* acc, int64_t lda) {
  constexpr int L = kLanes<V>;
  int64_t j0 = 0;
  for (; j0 + 4 * L <= n; j0 += 4 * L) addRowsTimesChunks<V, B, 4>(h, rt, K, ldr, acc, lda, j0);
  for (; j0 + L <= n; j0 += L) addRowsTimesChunks<V, B, 1>(h, rt, K, ldr, acc, lda, j0);
  for (; j0 < n; ++j0) {
    for (int b = 0; b < B; ++b) {
      float v = acc[b * lda + j0];
      for (int64_t k = 0; k < K; ++k) v += h[b * K + k] * rt[k * ldr + j0];
      acc[b * lda + j0] = v;
    }
  }
}


// The same product with R^T in panels of 64 columns ([ceil(n / 64)][K][64], the last
// zero-padded), each panel streamed start to end: the row-major R^T had each 64-column
// chunk walked down rows 4 n bytes apart (an LSTM step of hidden 512, R^T 4 MiB from L3:
// 0.188 against 0.136 ms on a full-width AVX-512 Xeon). The sums per column in the same
// order as addRowsTimes'.
template <class V, int B>
__attribute__((always_inline)) inline void addRowsTimesPanelsRows(const float* h, const float* panels, int64_t K, int64_t n,
                                                                  float* acc, int64_t lda) {
  constexpr int L = kLanes<V>;
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const float* panel = panels + (j0 / 64) * K * 64;
    const int64_t w = std::min<int64_t>(64, n - j0);
    float part[B][64];  // the last panel's columns, padded
    float* a0 = w == 64 ? acc + j0 : part[0];
    const int64_t lda_a = w == 64 ? lda : 64;
    if (w < 64) {
      for (int b = 0; b < B; ++b) {
        std::memset(part[b], 0, sizeof part[b]);
        std::memcpy(part[b], acc + b * lda + j0, sizeof(float) * size_t(w));
      }
    }
    // The panel in column chunks of 4 vectors (one chunk at AVX-512, 2 at AVX2, 4 at SSE2).
    for (int q = 0; q < 64; q += 4 * L) addRowsTimesChunks<V, B, 4>(h, panel + q, K, 64, a0 + q, lda_a, 0);
    if (w < 64) {
      for (int b = 0; b < B; ++b) std::memcpy(acc + b * lda + j0, part[b], sizeof(float) * size_t(w));
    }
  }
}

// Runs rows(B) over the rows of h in passes of kRowsAPass<V>.
template <class V, class Rows>
__attribute__((always_inline)) inline void inRowPasses(int64_t rows, const Rows& run) {
  constexpr int P = kRowsAPass<V>;
  for (int64_t b0 = 0; b0 < rows; b0 += P) {
    switch (std::min<int64_t>(P, rows - b0)) {
      case 1: run(b0, std::integral_constant<int, 1>()); break;
      case 2: run(b0, std::integral_constant<int, 2 <= P ? 2 : 1>()); break;
      case 3: run(b0, std::integral_constant<int, 3 <= P ? 3 : 1>()); break;
      default: run(b0, std::integral_constant<int, P>()); break;
    }
  }
}

template <class V>
__attribute__((always_inline)) inline void addRowsTimesPanelsBody(const float* h, int64_t rows, const float* panels, int64_t K,
                                                                  int64_t n, float* acc, int64_t lda) {
  inRowPasses<V>(rows, [&](int64_t b0, auto b) {
    addRowsTimesPanelsRows<V, decltype(b)::value>(h + b0 * K, panels, K, n, acc + b0 * lda, lda);
  });
}
GKRT_TIERED_LANES(addRowsTimesPanels,
                  (const float* h, int64_t rows, const float* panels, int64_t K, int64_t n, float* acc, int64_t lda),
                  (h, rows, panels, K, n, acc, lda))

// Weights of one direction, laid out for the kernel.
struct DirectionWeights {
  PackedB wx;               // W^T: [input] x [gates * hidden]
  std::vector<float> rt;    // R^T: [hidden][gates * hidden]; LSTM: in panels (addRowsTimesPanels)
  std::vector<float> bias;  // added to X W^T: Wb + Rb (GRU linear_before_reset: Wb only on the h gate)
  std::vector<float> rb_h;  // GRU linear_before_reset: Rb of the h gate, applied inside r * (...)
  std::vector<float> peep;  // LSTM P (i, o, f), empty when absent
};

// Per-direction state and scratch, sized at compile.
struct DirectionScratch {
  std::vector<float> xw;                    // [rows][gates * hidden]
  std::vector<float> h, c, h_prev, c_prev;  // [batch][hidden]
  std::vector<float> gates, tmp;            // [gates * hidden], [hidden]
  std::vector<float> batch_gates;           // lstmSteps: [batch][gates * hidden]
};

class RecurrentKernel final : public Kernel {
 public:
  RecurrentKernel(const ir::Graph& g, const ir::Node& node, RecurrentSpec spec, ThreadPool& pool)
      : s_(std::move(spec)), pool_(pool) {
    const int64_t H = s_.hidden, GH = s_.gates * H, I = s_.input, D = s_.directions;
    const float* w = reinterpret_cast<const float*>(inputTensor(g, node, kW)->constant->data);
    const float* r = reinterpret_cast<const float*>(inputTensor(g, node, kR)->constant->data);
    const ir::Tensor* bt = inputTensor(g, node, kB);
    const ir::Tensor* pt = s_.kind == RecurrentKind::kLstm ? inputTensor(g, node, kP) : nullptr;
    const float* b = bt ? reinterpret_cast<const float*>(bt->constant->data) : nullptr;
    const bool lbr = s_.kind == RecurrentKind::kGru && s_.linear_before_reset;
    rows_ = s_.seq * s_.batch;
    dirs_.resize(D);
    scratch_.resize(D);
    for (int64_t d = 0; d < D; ++d) {
      DirectionWeights& dw = dirs_[d];
      packB(w + d * GH * I, I, GH, /*transpose=*/true, &dw.wx);
      const float* rd = r + d * GH * H;
      if (s_.kind == RecurrentKind::kLstm) {  // R^T in panels of 64 columns, the last zero-padded
        dw.rt.assign(size_t((GH + 63) / 64 * H * 64), 0.0f);
        for (int64_t n = 0; n < GH; ++n)
          for (int64_t k = 0; k < H; ++k) dw.rt[size_t(((n / 64) * H + k) * 64 + n % 64)] = rd[n * H + k];
      } else {
        dw.rt.resize(H * GH);
        for (int64_t n = 0; n < GH; ++n)
          for (int64_t k = 0; k < H; ++k) dw.rt[k * GH + n] = rd[n * H + k];
      }
      dw.bias.assign(GH, 0.0f);
      if (b) {
        const float* wb = b + d * 2 * GH;
        const float* rb = wb + GH;
        for (int64_t n = 0; n < GH; ++n) dw.bias[n] = wb[n] + (lbr && n >= 2 * H ? 0.0f : rb[n]);
        if (lbr) dw.rb_h.assign(rb + 2 * H, rb + 3 * H);
      }
      if (lbr && dw.rb_h.empty()) dw.rb_h.assign(H, 0.0f);
      if (pt) {
        const float* p = reinterpret_cast<const float*>(pt->constant->data) + d * 3 * H;
        dw.peep.assign(p, p + 3 * H);
      }
      DirectionScratch& sc = scratch_[d];
      sc.xw.resize(rows_ * GH);
      for (auto* v : {&sc.h, &sc.c, &sc.h_prev, &sc.c_prev}) v->resize(s_.batch * H);
      sc.gates.resize(GH);
      sc.tmp.resize(H);
      sc.batch_gates.resize(s_.batch * GH);
    }
    a_pack_.resize(packedASize(rows_, I));
    lens_.assign(s_.batch, s_.seq);
    default_gates_ = s_.kind == RecurrentKind::kLstm && !pt && s_.clip <= 0.0f && !s_.input_forget;
    for (int64_t d = 0; d < D && default_gates_; ++d) {
      const auto& a = s_.act[d];
      default_gates_ = a[0].fn == RnnActivation::kSigmoid && a[1].fn == RnnActivation::kTanh && a[2].fn == RnnActivation::kTanh;
    }
    // Threads on each step's units where a direction's R^T is over 1 MiB and splits into
    // whole 64-unit panels, at least one a thread.
    split_units_ = default_gates_ && pool_.size() > 1 && H % 64 == 0 && H / 64 >= pool_.size() &&
                   GH * H * int64_t(sizeof(float)) > (int64_t(1) << 20);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const bool has_lens = static_cast<int>(in.size()) > kSeqLens && in[kSeqLens].present();
    RETURN_IF_ERROR(readSequenceLengths(s_, has_lens ? &in[kSeqLens] : nullptr, &lens_));
    float* y = !out.empty() && out[0].data ? out[0].as<float>() : nullptr;
    if (y && has_lens) std::memset(y, 0, out[0].size() * sizeof(float));
    const float* x = in[kX].as<float>();
    // X W^T for every step and direction, the big GEMMs, on all threads.
    for (int64_t d = 0; d < s_.directions; ++d) {
      gemm(rows_, x, false, dirs_[d].wx, scratch_[d].xw.data(), a_pack_.data(), pool_);
    }
    auto state = [&](int k) {
      return static_cast<int>(in.size()) > k && in[k].present() ? in[k].as<float>() : nullptr;
    };
    const float* init_h = state(kInitH);
    const float* init_c = s_.kind == RecurrentKind::kLstm ? state(kInitC) : nullptr;
    if (split_units_ && std::all_of(lens_.begin(), lens_.end(), [&](int64_t l) { return l == s_.seq; })) {
      for (int64_t d = 0; d < s_.directions; ++d) {  // one direction after the other, all threads on each step
        loadInitialState(s_, d, init_h, scratch_[d].h.data());
        loadInitialState(s_, d, init_c, scratch_[d].c.data());
        lstmStepsSplit(d, y);
      }
    } else {
      pool_.parallelFor(s_.directions, 1, 1, [&](int, int64_t begin, int64_t end) {
        for (int64_t d = begin; d < end; ++d) runDirection(d, init_h, init_c, y);
      });
    }
    const float* h_rows[2] = {scratch_[0].h.data(), s_.directions > 1 ? scratch_[1].h.data() : nullptr};
    const float* c_rows[2] = {scratch_[0].c.data(), s_.directions > 1 ? scratch_[1].c.data() : nullptr};
    storeFinalStates(s_, out, h_rows, c_rows);
    return Status::Ok();
  }

 private:
  void runDirection(int64_t d, const float* init_h, const float* init_c, float* y) {
    const int64_t H = s_.hidden, GH = s_.gates * H;
    DirectionScratch& sc = scratch_[d];
    loadInitialState(s_, d, init_h, sc.h.data());
    loadInitialState(s_, d, init_c, sc.c.data());
    const int64_t steps = *std::max_element(lens_.begin(), lens_.end());
    const bool whole = std::all_of(lens_.begin(), lens_.end(), [&](int64_t l) { return l == s_.seq; });
    if (default_gates_ && whole) return lstmSteps(d, y);
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t b = 0; b < s_.batch; ++b) {
        const int64_t len = lens_[b];
        if (step >= len) continue;
        const int64_t t = s_.reversed(d) ? len - 1 - step : step;
        const float* xw = sc.xw.data() + (s_.batch_first ? b * s_.seq + t : t * s_.batch + b) * GH;
        float* g = sc.gates.data();
        const std::vector<float>& bias = dirs_[d].bias;
        for (int64_t n = 0; n < GH; ++n) g[n] = xw[n] + bias[n];
        float* h = sc.h.data() + b * H;
        float* c = sc.c.data() + b * H;
        switch (s_.kind) {
          case RecurrentKind::kRnn:
            rnnCell(d, h);
            break;
          case RecurrentKind::kGru:
            gruCell(d, h);
            break;
          case RecurrentKind::kLstm:
            lstmCell(d, h, c);
            break;
        }
        if (y) std::memcpy(y + s_.yIndex(t, d, b), h, H * sizeof(float));
      }
    }
  }

  // Step t of direction d for units [j0, j0 + n) of every batch row (LSTM, default gates,
  // no sequence lengths): the gates' inputs, the recurrent product (one pass over R^T for
  // all rows: over all its columns when the range is every unit, else each gate's share,
  // H then a multiple of 64), each row's gates in one loop; h read from `cur`, written to
  // `nxt` (the same buffer when one call takes every unit: the product is done first).
  // `backwards` walks the panels of R^T last to first (odd steps): R^T over the L2 cache
  // read start to end every step misses on every line (the cache keeps the most recent,
  // which the next step reaches last); walked back, the next step starts on the panels
  // still cached. ddddocr's LSTM (hidden 512, 4 MiB a direction, 2 MiB a core's share at 2
  // threads, 2 MiB L2s): 6.7 -> 4.9 ms at 1 thread, 2.1 -> 1.7 ms at 2. Each column's sum
  // runs in the same order either way: the results are bit for bit the same.
  void lstmStepUnits(int64_t d, int64_t t, int64_t j0, int64_t n, const float* cur, float* nxt, float* y,
                     bool backwards) {
    const int64_t H = s_.hidden, GH = 4 * H, B = s_.batch;
    DirectionScratch& sc = scratch_[d];
    const DirectionWeights& dw = dirs_[d];
    float* g = sc.batch_gates.data();
    for (int64_t b = 0; b < B; ++b) {
      const float* xw = sc.xw.data() + (s_.batch_first ? b * s_.seq + t : t * s_.batch + b) * GH;
      for (int64_t q = 0; q < 4; ++q) {
        const int64_t col = q * H + j0;
        for (int64_t j = 0; j < n; ++j) g[b * GH + col + j] = xw[col + j] + dw.bias[col + j];
      }
    }
    if (n == H) {
      const int64_t panels = (GH + 63) / 64;
      for (int64_t i = 0; i < panels; ++i) {
        const int64_t k = backwards ? panels - 1 - i : i;
        addRowsTimesPanels(cur, B, dw.rt.data() + k * H * 64, H, std::min<int64_t>(64, GH - k * 64), g + k * 64, GH);
      }
    } else {
      const int64_t panels = n / 64;
      for (int64_t i = 0; i < 4 * panels; ++i) {
        const int64_t k = backwards ? 4 * panels - 1 - i : i;
        const int64_t col = (k / panels) * H + j0 + (k % panels) * 64;
        addRowsTimesPanels(cur, B, dw.rt.data() + (col / 64) * H * 64, H, 64, g + col, GH);
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      lstmDefaultGatesOf(g + b * GH + j0, H, n, sc.c.data() + b * H + j0, nxt + b * H + j0);
      if (y) std::memcpy(y + s_.yIndex(t, d, b) + j0, nxt + b * H + j0, size_t(n) * sizeof(float));
    }
  }

  // Every step on the calling thread, h in place.
  void lstmSteps(int64_t d, float* y) {
    float* h = scratch_[d].h.data();
    for (int64_t step = 0; step < s_.seq; ++step) {
      lstmStepUnits(d, s_.reversed(d) ? s_.seq - 1 - step : step, 0, s_.hidden, h, h, y, step % 2 == 1);
    }
  }

  // The threads sharing each step's hidden units (64 a panel of R^T per gate): a thread's
  // share of R^T (a quarter of its gates' columns each) stays in its L2 from one step to
  // the next where a whole direction's did not (hidden 512: 4 MiB a direction, 2 MiB a
  // thread's share). The new h goes to the other buffer (every thread reads all of the old
  // one), c in place (each unit's own).
  void lstmStepsSplit(int64_t d, float* y) {
    DirectionScratch& sc = scratch_[d];
    float* cur = sc.h.data();
    float* nxt = sc.h_prev.data();
    for (int64_t step = 0; step < s_.seq; ++step) {
      const int64_t t = s_.reversed(d) ? s_.seq - 1 - step : step;
      pool_.parallelFor(s_.hidden / 64, 1, 1, [&](int, int64_t p0, int64_t p1) {
        lstmStepUnits(d, t, p0 * 64, (p1 - p0) * 64, cur, nxt, y, step % 2 == 1);
      });
      std::swap(cur, nxt);
    }
    if (cur != sc.h.data()) std::memcpy(sc.h.data(), cur, size_t(s_.batch * s_.hidden) * sizeof(float));
  }

  void rnnCell(int64_t d, float* h) {
    const int64_t H = s_.hidden;
    float* g = scratch_[d].gates.data();
    addRowTimes(h, dirs_[d].rt.data(), H, H, H, g);
    clipTo(s_.clip, g, H);
    activate(s_.act[d][0], g, H);
    std::memcpy(h, g, H * sizeof(float));
  }

  // Gates z, r, h. The h gate reads r, so its recurrent product comes second.
  void gruCell(int64_t d, float* h) {
    const int64_t H = s_.hidden, GH = 3 * H;
    DirectionScratch& sc = scratch_[d];
    const DirectionWeights& dw = dirs_[d];
    float *g = sc.gates.data(), *z = g, *r = g + H, *hh = g + 2 * H, *tmp = sc.tmp.data();
    addRowTimes(h, dw.rt.data(), H, GH, 2 * H, g);
    clipTo(s_.clip, g, 2 * H);
    activate(s_.act[d][0], g, 2 * H);
    if (s_.linear_before_reset) {
      std::copy(dw.rb_h.begin(), dw.rb_h.end(), tmp);
      addRowTimes(h, dw.rt.data() + 2 * H, H, GH, H, tmp);
      for (int64_t j = 0; j < H; ++j) hh[j] += r[j] * tmp[j];
    } else {
      for (int64_t j = 0; j < H; ++j) tmp[j] = r[j] * h[j];
      addRowTimes(tmp, dw.rt.data() + 2 * H, H, GH, H, hh);
    }
    clipTo(s_.clip, hh, H);
    activate(s_.act[d][1], hh, H);
    for (int64_t j = 0; j < H; ++j) h[j] = (1.0f - z[j]) * hh[j] + z[j] * h[j];
  }

  // Gates i, o, f, c; peepholes P = (i, o, f); o sees the new cell state.
  void lstmCell(int64_t d, float* h, float* c) {
    const int64_t H = s_.hidden, GH = 4 * H;
    DirectionScratch& sc = scratch_[d];
    const DirectionWeights& dw = dirs_[d];
    float *g = sc.gates.data(), *ig = g, *og = g + H, *fg = g + 2 * H, *cg = g + 3 * H, *tmp = sc.tmp.data();
    addRowsTimesPanels(h, 1, dw.rt.data(), H, GH, g, GH);
    if (default_gates_) return lstmDefaultGates(g, H, c, h);
    const bool peep = !dw.peep.empty();
    if (peep) {
      for (int64_t j = 0; j < H; ++j) {
        ig[j] += dw.peep[j] * c[j];
        fg[j] += dw.peep[2 * H + j] * c[j];
      }
    }
    clipTo(s_.clip, ig, H);
    clipTo(s_.clip, fg, 2 * H);  // f and c
    const auto& act = s_.act[d];
    activate(act[0], ig, H);
    if (s_.input_forget) {
      for (int64_t j = 0; j < H; ++j) fg[j] = 1.0f - ig[j];
    } else {
      activate(act[0], fg, H);
    }
    activate(act[1], cg, H);
    for (int64_t j = 0; j < H; ++j) c[j] = fg[j] * c[j] + ig[j] * cg[j];
    if (peep) {
      for (int64_t j = 0; j < H; ++j) og[j] += dw.peep[H + j] * c[j];
    }
    clipTo(s_.clip, og, H);
    activate(act[0], og, H);
    std::memcpy(tmp, c, H * sizeof(float));
    activate(act[2], tmp, H);
    for (int64_t j = 0; j < H; ++j) h[j] = og[j] * tmp[j];
  }

  RecurrentSpec s_;
  ThreadPool& pool_;
  int64_t rows_ = 0;
  std::vector<DirectionWeights> dirs_;
  std::vector<DirectionScratch> scratch_;
  std::vector<float> a_pack_;
  std::vector<int64_t> lens_;
  bool default_gates_ = false;  // LSTM with the default activations only: lstmDefaultGates
  bool split_units_ = false;    // lstmStepsSplit: the threads share each step's units
};

}  // namespace

template <class V>
__attribute__((always_inline)) inline void addRowsTimesBody(const float* h, int64_t rows, const float* rt, int64_t K, int64_t ldr,
                                                            int64_t n, float* acc, int64_t lda) {
  inRowPasses<V>(rows, [&](int64_t b0, auto b) {
    addRowsTimesRows<V, decltype(b)::value>(h + b0 * K, rt, K, ldr, n, acc + b0 * lda, lda);
  });
}
GKRT_TIERED_LANES(addRowsTimes,
                  (const float* h, int64_t rows, const float* rt, int64_t K, int64_t ldr, int64_t n, float* acc,
                   int64_t lda),
                  (h, rows, rt, K, ldr, n, acc, lda))

// Sigmoid and tanh inline (row_math.h), so the loop vectorises whole: the separate SLEEF
// tanh calls a gate (1-ulp, 64 elements a call) were a third of a small LSTM's time.
GKRT_INLINE_BODY void lstmDefaultGatesOfBody(const float* __restrict g, int64_t H, int64_t n, float* __restrict c,
                                             float* __restrict h) {
  for (int64_t j = 0; j < n; ++j) {
    const float i = sigmoidOf(g[j]), o = sigmoidOf(g[H + j]), f = sigmoidOf(g[2 * H + j]), cc = tanhOf(g[3 * H + j]);
    const float cn = f * c[j] + i * cc;
    c[j] = cn;
    h[j] = o * tanhOf(cn);
  }
}
GKRT_TIERED(void, lstmDefaultGatesOf, (const float* g, int64_t H, int64_t n, float* c, float* h), (g, H, n, c, h),
            "avx512f", "fma")

void lstmDefaultGates(const float* g, int64_t H, float* c, float* h) { lstmDefaultGatesOf(g, H, H, c, h); }

bool canRunRecurrent(const ir::Graph& g, const ir::Node& node) {
  if (!node.op) return false;
  const std::string op = node.op->name;
  if (op != "LSTM" && op != "GRU" && op != "RNN") return false;
  for (int k = 0; k < static_cast<int>(node.inputs.size()); ++k) {
    const ir::Tensor* t = inputTensor(g, node, k);
    if (!t || k == kSeqLens) continue;
    if (t->dtype != DType::kFloat32) return false;
    const bool weight = k == kW || k == kR || k == kB || (k == kP && op == "LSTM");
    if (weight && !t->isConstant()) return false;
  }
  for (int o : node.outputs) {
    if (o >= 0 && g.tensors[o].dtype != DType::kFloat32) return false;
  }
  return inputTensor(g, node, kX) && inputTensor(g, node, kW) && inputTensor(g, node, kR);
}

Status readSequenceLengths(const ops::RecurrentSpec& s, const TensorView* in, std::vector<int64_t>* lens) {
  lens->assign(size_t(s.batch), s.seq);
  for (int64_t b = 0; in && b < s.batch; ++b) {
    const int64_t len = ops::loadIndex(*in, b);
    if (len < 0 || len > s.seq) return makeError(StatusCode::kInvalidArgument, "sequence_lens[", b, "] = ", len, " is outside 0..", s.seq);
    (*lens)[size_t(b)] = len;
  }
  return Status::Ok();
}

void loadInitialState(const ops::RecurrentSpec& s, int64_t d, const float* init, float* rows) {
  const int64_t H = s.hidden;
  for (int64_t b = 0; b < s.batch; ++b) {
    if (init) std::memcpy(rows + b * H, init + s.stateIndex(d, b), size_t(H) * sizeof(float));
    else std::fill_n(rows + b * H, H, 0.0f);
  }
}

void storeFinalStates(const ops::RecurrentSpec& s, const std::vector<MutableTensorView>& out, const float* const* h_rows,
                      const float* const* c_rows) {
  const int64_t H = s.hidden;
  for (size_t o = 1; o < out.size() && o < 3; ++o) {
    if (!out[o].data) continue;
    for (int64_t d = 0; d < s.directions; ++d) {
      const float* v = o == 1 ? h_rows[d] : c_rows[d];
      for (int64_t b = 0; b < s.batch; ++b) std::memcpy(out[o].as<float>() + s.stateIndex(d, b), v + b * H, size_t(H) * sizeof(float));
    }
  }
}

bool ownRecurrentIsFaster(const ir::Graph& g, const ir::Node& node) {
  if (!canRunRecurrent(g, node) || std::string(node.op->name) != "LSTM" || inputTensor(g, node, kP)) return false;
  auto spec = ops::recurrentSpec(node, g.tensors[node.inputs[kX]].shape, g.tensors[node.inputs[kR]].shape);
  if (!spec.ok() || spec->clip > 0.0f || spec->input_forget) return false;
  // One batch row over 4 steps or more: up to 512 on full-width AVX-512 cores (an Intel
  // Xeon here, where oneDNN's RNN took 1.4-1.5x the own kernel's time), else up to 128.
  const int64_t one_row = cpuTier().full_width_512 && spec->seq >= 4 ? 512 : 128;
  if (spec->hidden > (spec->batch == 1 ? one_row : 64)) return false;
  for (const auto& a : spec->act) {
    if (a[0].fn != RnnActivation::kSigmoid || a[1].fn != RnnActivation::kTanh || a[2].fn != RnnActivation::kTanh) return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileRecurrent(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  ASSIGN_OR_RETURN(RecurrentSpec spec,
                   ops::recurrentSpec(node, g.tensors[node.inputs[kX]].shape, g.tensors[node.inputs[kR]].shape));
  return std::unique_ptr<Kernel>(std::make_unique<RecurrentKernel>(g, node, std::move(spec), pool));
}

}  // namespace gkrt::cpu
