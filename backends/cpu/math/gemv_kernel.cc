#include "backends/cpu/math/gemv_kernel.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/large_buffer.h"
#include "runtime/ir/op_def.h"

#ifdef GKRT_X86_TIERS
#include <immintrin.h>
#endif

namespace gkrt::cpu {
namespace {

// Output columns a task keeps in registers (8 vectors of 8), at most. (Software prefetch
// ahead of the panel's stream measured no faster than the hardware's on an AVX2 EPYC.)
constexpr int64_t kPanel = 64;

// acc[r][0..W) = sum over k of x[r][k] * panel[k][0..W): the W sums of a row stay in
// registers (vectors of L floats) while the panel streams past. One build per tier (kTier
// keeps them apart), panel width (64, or 32 where 64-column panels would leave a thread
// idle) and vector length: 16 floats on AVX-512, where half the loads and FMAs a row
// streamed SmolLM2's 576 x 49152 head at 13.3-14.7 against 12.4-13.1 GB/s at best (1
// thread, a full-width AVX-512 Xeon) and took its float32 decode from 18.9-19.8 to
// 23.5-25.9 tokens/s; 8 elsewhere. Loads by memcpy, expanded in place (a function returning
// a vector would be compiled for the default ISA, outside the tier's build).
template <int kTier, int W, int L>
__attribute__((always_inline)) inline void gemvPanelBody(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  typedef float Vec __attribute__((vector_size(4 * L)));
  constexpr int V = W / L;
  for (int64_t r = 0; r < m; ++r) {
    Vec a[V] = {};
    const float* xr = x + r * K;
    const float* wr = panel;
    for (int64_t k = 0; k < K; ++k, wr += W) {
      const Vec xv = Vec{} + xr[k];
      for (int v = 0; v < V; ++v) {
        Vec w;
        __builtin_memcpy(&w, wr + L * v, sizeof w);
        a[v] += xv * w;
      }
    }
    std::memcpy(acc + r * W, a, sizeof a);
  }
}

using GemvPanelFn = void (*)(const float*, int64_t, int64_t, const float*, float*);
#ifdef GKRT_X86_TIERS
template <int W> GKRT_TARGET_AVX512 void gemvPanelAvx512(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  gemvPanelBody<2, W, 16>(x, m, K, panel, acc);
}
// Rows of the few-row path a block: 5 rows x 4 vectors of 16 are 20 accumulators, with the
// panel's 4 vectors and a broadcast 25 of the 32 registers.
constexpr int kFewRowsBlock = 5;
// acc[r][0..W) (+)= sum over k in [k0, k1) of x[r][k] * panel[k][0..W) for R rows (the
// first chunk starts from zero); on the way, `lines` cache lines from pf on are prefetched
// (the next chunk's share of this block), one or more a step. The broadcast of x comes
// from memory in the FMA's load (no shuffle-port uop), so the 2 FMA ports stay busy:
// 20 x 1024 x 8256 ran at 2.2 ms with the panels in cache (154 GFLOP/s, 1 core of a
// full-width AVX-512 Xeon), 2.9 ms streaming them from memory with the prefetch, 6.5 without.
template <int R, int W>
GKRT_TARGET_AVX512 void fewRowsBlockAvx512(const float* x, int64_t K, const float* panel, int64_t k0, int64_t k1, float* acc,
                                           bool first, const char* pf, int64_t lines) {
  constexpr int V = W / 16;
  __m512 c[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) c[r][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * W + 16 * v);
  const int64_t steps = k1 - k0, per_step = (lines + steps - 1) / std::max<int64_t>(steps, 1);
  const float* b = panel + k0 * W;
  for (int64_t k = k0; k < k1; ++k, b += W) {
    for (int64_t l = 0; l < per_step && lines > 0; ++l, --lines, pf += 64) _mm_prefetch(pf, _MM_HINT_T0);
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(x[r * K + k]);
      for (int v = 0; v < V; ++v) c[r][v] = _mm512_fmadd_ps(a, bv[v], c[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(acc + r * W + 16 * v, c[r][v]);
}

// All m rows against one panel: K in chunks of 32 KiB of the panel, each chunk run by
// every block of rows from L1 while the next chunk (the next panel's first, at the end:
// panels are stored one after another) is prefetched in equal shares.
template <int W>
GKRT_TARGET_AVX512 void fewRowsPanelAvx512(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  constexpr int64_t kChunk = 8192 / W;  // k steps of the chunk: 32 KiB of panel
  const int64_t blocks = (m + kFewRowsBlock - 1) / kFewRowsBlock;
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t k1 = std::min(K, k0 + kChunk);
    const char* next = reinterpret_cast<const char*>(panel + k1 * W);
    const int64_t next_lines = std::min(kChunk, K - k1 > 0 ? K - k1 : kChunk) * W * 4 / 64;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * kFewRowsBlock, rows = std::min<int64_t>(kFewRowsBlock, m - r0);
      const int64_t l0 = next_lines * blk / blocks, l1 = next_lines * (blk + 1) / blocks;
      const float* xr = x + r0 * K;
      float* a = acc + r0 * W;
      const char* pf = next + l0 * 64;
      switch (rows) {
        case 5: fewRowsBlockAvx512<5, W>(xr, K, panel, k0, k1, a, k0 == 0, pf, l1 - l0); break;
        case 4: fewRowsBlockAvx512<4, W>(xr, K, panel, k0, k1, a, k0 == 0, pf, l1 - l0); break;
        case 3: fewRowsBlockAvx512<3, W>(xr, K, panel, k0, k1, a, k0 == 0, pf, l1 - l0); break;
        case 2: fewRowsBlockAvx512<2, W>(xr, K, panel, k0, k1, a, k0 == 0, pf, l1 - l0); break;
        default: fewRowsBlockAvx512<1, W>(xr, K, panel, k0, k1, a, k0 == 0, pf, l1 - l0); break;
      }
    }
  }
}
template <int W> GKRT_TARGET_AVX2 void gemvPanelAvx2(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  gemvPanelBody<1, W, 8>(x, m, K, panel, acc);
}
#endif
template <int W> void gemvPanelPortable(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  gemvPanelBody<0, W, 8>(x, m, K, panel, acc);
}

// The few-row path's panel function (nullptr: no such path on this tier).
template <int W> GemvPanelFn fewRowsPanelForTier() {
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx512)) return fewRowsPanelAvx512<W>;
#endif
  return nullptr;
}

template <int W> GemvPanelFn gemvPanelForTier() {
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx512)) return gemvPanelAvx512<W>;
  if (cpuTier().has(CpuIsa::kAvx2)) return gemvPanelAvx2<W>;
#endif
  return gemvPanelPortable<W>;
}

class GemvKernel final : public Kernel {
 public:
  GemvKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : pool_(pool) {
    const Shape& w = g.tensors[size_t(node.inputs[1])].shape;
    const std::string op = node.op->name;
    const bool trans_b = op == "Gemm" ? node.attrs.get<GemmAttrs>().transpose_b
                         : op == "MatMulSplit" ? false : node.attrs.get<MatMulAttrs>().transpose_b;
    K_ = trans_b ? w[1] : w[0];
    N_ = trans_b ? w[0] : w[1];
    M_ = numElements(g.tensors[size_t(node.inputs[0])].shape) / K_;
    if (op == "MatMulAdd") {
      residual_ = 2;
      if (node.inputs.size() > 3 && node.inputs[3] >= 0) bias_ = 3;
    } else if (op == "MatMulBiasAdd" || op == "MatMulSplit" || op == "Gemm") {
      if (node.inputs.size() > 2 && node.inputs[2] >= 0) bias_ = 2;
    }
    for (int t : node.outputs) {  // MatMulSplit: the outputs' column ranges
      part_end_.push_back((part_end_.empty() ? 0 : part_end_.back()) + g.tensors[size_t(t)].shape.back());
    }
    // Panels [N / 64][K][64] (the last zero-padded), each read from start to end by one
    // task: weights read in place, 64 columns of a row apart by N, streamed at 4-5 GB/s
    // where a sequential read runs at 9-12 on the machine this was written on.
    const float* w0 = reinterpret_cast<const float*>(g.tensors[size_t(node.inputs[1])].constant->data);
    // Panels of 32 columns where 64-column ones would not split evenly over the threads
    // (a 576-column projection: 9 panels of 64, 5 + 4 on two threads).
    const int64_t wide = (N_ + kPanel - 1) / kPanel;
    // (The few-row path keeps 64 columns where there are panels enough to share out: its
    // 32-column build runs two vectors a row against the panel's loads.)
    const bool uneven = pool_.size() > 1 && wide % pool_.size() != 0;
    width_ = uneven && (M_ <= kGemvMaxRows || wide < 8 * pool_.size()) ? kPanel / 2 : kPanel;
    panel_fn_ = width_ == kPanel ? gemvPanelForTier<kPanel>() : gemvPanelForTier<kPanel / 2>();
    if (M_ > kGemvMaxRows) panel_fn_ = width_ == kPanel ? fewRowsPanelForTier<kPanel>() : fewRowsPanelForTier<kPanel / 2>();
    const int64_t panels = (N_ + width_ - 1) / width_;
    packed_ = LargeBuffer(sizeof(float) * size_t(panels * K_ * width_));
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t n0 = p * width_, width = std::min(width_, N_ - n0);
      float* dst = packed_.as<float>() + p * K_ * width_;
      for (int64_t k = 0; k < K_; ++k) {
        if (trans_b) {  // weights [N][K]: column n0 + j of row k is w0[(n0 + j) * K + k]
          for (int64_t j = 0; j < width; ++j) dst[k * width_ + j] = w0[(n0 + j) * K_ + k];
        } else {
          std::memcpy(dst + k * width_, w0 + k * N_ + n0, sizeof(float) * size_t(width));
        }
      }
    }
  }

  size_t workspaceBytes() const override {
    return size_t(pool_.size() * std::max(M_, kGemvMaxRows) * kPanel) * sizeof(float);
  }
  std::string detail() const override { return M_ > kGemvMaxRows ? "gkrt few-row gemm" : "gkrt gemv"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float* x = in[0].as<float>();
    const float* c = residual_ >= 0 ? in[size_t(residual_)].as<float>() : nullptr;
    const float* bias = bias_ >= 0 ? in[size_t(bias_)].as<float>() : nullptr;
    const int64_t panels = (N_ + width_ - 1) / width_;
    pool_.parallelFor(panels, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* acc = static_cast<float*>(ws) + thread * std::max(M_, kGemvMaxRows) * kPanel;
      for (int64_t p = begin; p < end; ++p) {
        panel_fn_(x, M_, K_, packed_.as<float>() + p * K_ * width_, acc);
        const int64_t n0 = p * width_, width = std::min(width_, N_ - n0);
        size_t part = 0;
        while (part_end_[part] <= n0) ++part;
        for (int64_t j = 0; j < width; ++j) {
          const int64_t col = n0 + j;
          if (col >= part_end_[part]) ++part;
          const int64_t begin = part ? part_end_[part - 1] : 0, width_p = part_end_[part] - begin;
          float* y = out[part].as<float>();
          for (int64_t r = 0; r < M_; ++r) {
            float v = acc[r * width_ + j];
            if (bias) v += bias[col];
            if (c) v += c[r * N_ + col];
            y[r * width_p + col - begin] = v;
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  GemvPanelFn panel_fn_ = nullptr;
  int64_t M_ = 0, K_ = 0, N_ = 0, width_ = kPanel;
  int residual_ = -1, bias_ = -1;
  std::vector<int64_t> part_end_;  // per output: the end of its columns
  LargeBuffer packed_;
};

}  // namespace

bool canRunGemv(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if ((op != "MatMul" && op != "BatchMatMul" && op != "MatMulAdd" && op != "MatMulBiasAdd" && op != "MatMulSplit" &&
       op != "Gemm")) {
    return false;
  }
  if (node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return false;
  bool trans_b = false;
  if (op == "Gemm") {  // y = x W(^T) + bias: alpha 1, and a bias of N values if any
    const auto& a = node.attrs.get<GemmAttrs>();
    if (a.transpose_a || a.alpha != 1.0f || (node.inputs.size() > 2 && node.inputs[2] >= 0 && a.beta != 1.0f)) return false;
    trans_b = a.transpose_b;
  } else if (op != "MatMulSplit") {  // MatMulSplit has no transposes (its attributes are the split's)
    const auto& a = node.attrs.get<MatMulAttrs>();
    if (a.transpose_a) return false;
    trans_b = a.transpose_b;
  }
  for (int t : node.inputs) if (t >= 0 && g.tensors[size_t(t)].dtype != DType::kFloat32) return false;
  const ir::Tensor& w = g.tensors[size_t(node.inputs[1])];
  const Shape& x = g.tensors[size_t(node.inputs[0])].shape;
  const Shape& y = g.tensors[size_t(node.outputs[0])].shape;
  if (!w.isConstant() || w.shape.size() != 2 || x.empty() || !isStatic(x) || !isStatic(y)) return false;
  const int64_t K = trans_b ? w.shape[1] : w.shape[0], N = trans_b ? w.shape[0] : w.shape[1];
  if (x.back() != K) return false;
  const int64_t rows = numElements(x) / K;
  int64_t cols = 0;
  for (int t : node.outputs) {
    const Shape& o = g.tensors[size_t(t)].shape;
    if (!isStatic(o) || o.empty() || numElements(o) != rows * o.back()) return false;
    cols += o.back();
  }
  if (rows < 1 || cols != N) return false;
  if (rows > kGemvMaxRows) {  // the few-row path: AVX-512, weights streamed from memory
    if (rows > kFewRowsMax || numElements(w.shape) * int64_t(sizeof(float)) < kFewRowsMinBytes) return false;
    if (!fewRowsPanelForTier<kPanel>()) return false;
  }
  if (op == "MatMulAdd" && g.tensors[size_t(node.inputs[2])].shape != y) return false;  // the residual, of y's shape
  const int bias = op == "MatMulAdd" ? 3 : op == "MatMulBiasAdd" || op == "MatMulSplit" || op == "Gemm" ? 2 : -1;
  if (bias >= 0 && int(node.inputs.size()) > bias && node.inputs[size_t(bias)] >= 0 &&
      g.tensors[size_t(node.inputs[size_t(bias)])].shape != Shape{N}) {
    return false;
  }
  return true;
}

std::unique_ptr<Kernel> compileGemv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::make_unique<GemvKernel>(g, node, pool);
}

}  // namespace gkrt::cpu
