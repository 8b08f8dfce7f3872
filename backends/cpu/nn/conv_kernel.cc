#include "backends/cpu/nn/conv_kernel.h"

#include <algorithm>
#include <limits>
#include <string>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/math/gemm.h"
#include "backends/cpu/nn/pool_kernel.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

struct ConvGeometry {
  int64_t N, C, H, W, O, CG, KH, KW, OH, OW, G, OG;
  int64_t sh, sw, ph, pw, dh, dw;
};

ConvGeometry geometryOf(const ir::Graph& g, const ir::Node& node) {
  const auto& a = node.attrs.get<Conv2DAttrs>();
  const Shape& x = g.tensors[node.inputs[0]].shape;
  const Shape& w = g.tensors[node.inputs[1]].shape;
  const Shape& y = g.tensors[node.outputs[0]].shape;
  return {x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], y[2], y[3], a.groups, w[0] / a.groups,
          a.strides[0], a.strides[1], a.pads[0], a.pads[1], a.dilations[0], a.dilations[1]};
}

const float* constantData(const ir::Graph& g, const ir::Node& node, size_t i) {
  if (node.inputs.size() <= i || node.inputs[i] < 0) return nullptr;
  const ir::Tensor& t = g.tensors[node.inputs[i]];
  return t.isConstant() ? reinterpret_cast<const float*>(t.constant->data) : nullptr;
}

// Convolution as GEMM per group: Y_g[OG, OH*OW] = W_g[OG, CG*KH*KW] * col_g. The
// weights are packed once at compile; each thread unrolls a chunk of output pixels
// (im2col) straight into GEMM panels in its own L2-sized buffer and multiplies it.
class ConvGemmKernel final : public Kernel {
 public:
  ConvGemmKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : c_(geometryOf(g, node)), pool_(pool) {
    K_ = c_.CG * c_.KH * c_.KW;
    P_ = c_.OH * c_.OW;
    const int64_t a_size = packedASize(c_.OG, K_);
    w_pack_.resize(static_cast<size_t>(a_size * c_.G));
    if (const float* w = constantData(g, node, 1)) {
      packWeights(w);
      weights_packed_ = true;
    }
    // Panels per chunk: an L2-sized column buffer, and at least one chunk per thread.
    const int64_t panels = (P_ + kGemmNR - 1) / kGemmNR;
    const int64_t by_cache = std::max<int64_t>(1, (256 << 10) / std::max<int64_t>(1, K_ * kGemmNR * 4));
    const int64_t by_threads = (panels + pool.size() - 1) / pool.size();
    chunk_panels_ = std::max<int64_t>(1, std::min(by_cache, by_threads));
    chunks_ = (panels + chunk_panels_ - 1) / chunk_panels_;
    col_.resize(static_cast<size_t>(pool.size()));
    for (auto& buf : col_) buf.resize(static_cast<size_t>(chunk_panels_ * kGemmNR * K_));
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    if (!weights_packed_) packWeights(in[1].as<float>());
    const float* x = in[0].as<float>();
    const float* bias = in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t a_size = packedASize(c_.OG, K_);
    const int64_t tasks = c_.N * c_.G * chunks_;
    pool_.parallelFor(tasks, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* col = col_[static_cast<size_t>(thread)].data();
      for (int64_t t = begin; t < end; ++t) {
        const int64_t chunk = t % chunks_, ng = t / chunks_, n = ng / c_.G, g = ng % c_.G;
        const int64_t p0 = chunk * chunk_panels_ * kGemmNR, p1 = std::min(P_, p0 + chunk_panels_ * kGemmNR);
        im2col(x + (n * c_.C + g * c_.CG) * c_.H * c_.W, p0, p1, col);
        gemmSerial(c_.OG, w_pack_.data() + g * a_size, K_, col, p1 - p0, y + (n * c_.O + g * c_.OG) * P_ + p0, P_,
                   bias ? bias + g * c_.OG : nullptr);
      }
    });
    return Status::Ok();
  }

 private:
  void packWeights(const float* w) {
    const int64_t a_size = packedASize(c_.OG, K_);
    for (int64_t g = 0; g < c_.G; ++g) packA(w + g * c_.OG * K_, c_.OG, K_, false, w_pack_.data() + g * a_size);
  }

  // Output pixels [p0, p1) of one image's group, as panels [panel][K][16] (zero-padded).
  // Per kernel tap and output row, the valid input columns are one strided run.
  void im2col(const float* x, int64_t p0, int64_t p1, float* col) const {
    const int64_t cols = p1 - p0, padded = (cols + kGemmNR - 1) / kGemmNR * kGemmNR, panel = K_ * kGemmNR;
    for (int64_t ci = 0; ci < c_.CG; ++ci)
      for (int64_t kh = 0; kh < c_.KH; ++kh)
        for (int64_t kw = 0; kw < c_.KW; ++kw) {
          const float* plane = x + ci * c_.H * c_.W;
          float* row_base = col + ((ci * c_.KH + kh) * c_.KW + kw) * kGemmNR;
          const int64_t shift = kw * c_.dw - c_.pw;  // iw = ow * sw + shift
          // ow in [lo, hi) reads inside the row.
          const int64_t lo = shift >= 0 ? 0 : (-shift + c_.sw - 1) / c_.sw;
          const int64_t last = c_.W - 1 - shift;  // the tap may lie wholly right of the row
          const int64_t hi = last < 0 ? lo : std::max<int64_t>(lo, std::min<int64_t>(c_.OW, last / c_.sw + 1));
          auto put = [&](int64_t j, float v) { row_base[(j >> 4) * panel + (j & 15)] = v; };
          for (int64_t j = 0; j < cols;) {
            const int64_t p = p0 + j, oh = p / c_.OW, ow0 = p % c_.OW, seg = std::min(c_.OW - ow0, cols - j);
            const int64_t ih = oh * c_.sh - c_.ph + kh * c_.dh;
            if (ih < 0 || ih >= c_.H) {
              for (int64_t s = 0; s < seg; ++s) put(j + s, 0.0f);
            } else {
              const float* src = plane + ih * c_.W + shift;
              const int64_t a = std::clamp(lo, ow0, ow0 + seg), b = std::clamp(hi, a, ow0 + seg);
              for (int64_t ow = ow0; ow < a; ++ow) put(j + ow - ow0, 0.0f);
              for (int64_t ow = a; ow < b; ++ow) put(j + ow - ow0, src[ow * c_.sw]);
              for (int64_t ow = b; ow < ow0 + seg; ++ow) put(j + ow - ow0, 0.0f);
            }
            j += seg;
          }
          for (int64_t j = cols; j < padded; ++j) put(j, 0.0f);
        }
  }

  ConvGeometry c_;
  ThreadPool& pool_;
  int64_t K_ = 0, P_ = 0, chunk_panels_ = 1, chunks_ = 1;
  std::vector<float> w_pack_;
  bool weights_packed_ = false;
  std::vector<std::vector<float>> col_;  // per thread
};

// One output row of a KxK depthwise convolution with stride S: every tap of the window
// in registers, one store per output (the generic loop below reads and writes the row
// once per tap). The taps are summed in the generic loop's order, from the bias.
// Built for AVX2+FMA too, picked by cpuTier() (depthwiseRowFor).
template <int K, int S>
GKRT_INLINE_BODY void depthwiseRowBody(float* row, const float* src, int64_t row_stride, int64_t dw, const float* w,
                                       float b, int64_t OW) {
  const float* r[K];
  for (int kh = 0; kh < K; ++kh) r[kh] = src + kh * row_stride;
  for (int64_t ow = 0; ow < OW; ++ow) {
    float acc = b;
    for (int kh = 0; kh < K; ++kh)
      for (int kw = 0; kw < K; ++kw) acc += w[kh * K + kw] * r[kh][ow * S + kw * dw];
    row[ow] = acc;
  }
}
#ifdef GKRT_X86_TIERS
template <int K, int S>
__attribute__((target("avx2,fma"), flatten)) void depthwiseRowOnAvx2(float* row, const float* src, int64_t row_stride,
                                                                     int64_t dw, const float* w, float b, int64_t OW) {
  depthwiseRowBody<K, S>(row, src, row_stride, dw, w, b, OW);
}
#endif
template <int K, int S>
void depthwiseRowOnBaseline(float* row, const float* src, int64_t row_stride, int64_t dw, const float* w, float b,
                            int64_t OW) {
  depthwiseRowBody<K, S>(row, src, row_stride, dw, w, b, OW);
}
using DepthwiseRowFn = void (*)(float*, const float*, int64_t, int64_t, const float*, float, int64_t);

// The build of depthwiseRow<K, S> for this process's tier.
template <int K, int S>
DepthwiseRowFn depthwiseRow() {
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx2)) return depthwiseRowOnAvx2<K, S>;
#endif
  return depthwiseRowOnBaseline<K, S>;
}

DepthwiseRowFn depthwiseRowFor(int64_t k, int64_t kw, int64_t stride) {
  if (k != kw) return nullptr;
  if (k == 3 && stride == 1) return depthwiseRow<3, 1>();
  if (k == 3 && stride == 2) return depthwiseRow<3, 2>();
  if (k == 5 && stride == 1) return depthwiseRow<5, 1>();
  if (k == 5 && stride == 2) return depthwiseRow<5, 2>();
  return nullptr;
}

// Depthwise (one input channel per group): a direct loop over a zero-padded copy of
// each input plane, vectorised along the output row; 3x3 and 5x5 windows at stride 1
// or 2 (MobileNets) by depthwiseRow.
class DepthwiseConvKernel final : public Kernel {
 public:
  DepthwiseConvKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : c_(geometryOf(g, node)), pool_(pool) {
    const auto& a = node.attrs.get<Conv2DAttrs>();
    Hp_ = c_.H + a.pads[0] + a.pads[2];
    Wp_ = c_.W + a.pads[1] + a.pads[3];
    scratch_.resize(static_cast<size_t>(pool.size()));
    for (auto& buf : scratch_) buf.assign(static_cast<size_t>(Hp_ * Wp_ + c_.OW), 0.0f);
    if (c_.sh == c_.sw) row_fn_ = depthwiseRowFor(c_.KH, c_.KW, c_.sw);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* x = in[0].as<float>();
    const float* w = in[1].as<float>();
    const float* bias = in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t KHW = c_.KH * c_.KW;
    pool_.parallelFor(c_.N * c_.O, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* xp = scratch_[static_cast<size_t>(thread)].data();
      int64_t loaded = -1;
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = t / c_.O, o = t % c_.O, plane = n * c_.C + o / c_.OG;
        if (plane != loaded) {  // pads stay zero: only the interior is rewritten
          const float* src = x + plane * c_.H * c_.W;
          for (int64_t h = 0; h < c_.H; ++h) std::copy(src + h * c_.W, src + (h + 1) * c_.W, xp + (h + c_.ph) * Wp_ + c_.pw);
          loaded = plane;
        }
        float* dst = y + t * c_.OH * c_.OW;
        const float* wo = w + o * KHW;
        const float b = bias ? bias[o] : 0.0f;
        for (int64_t oh = 0; oh < c_.OH; ++oh) {
          float* row = dst + oh * c_.OW;
          if (row_fn_) {
            row_fn_(row, xp + oh * c_.sh * Wp_, c_.dh * Wp_, c_.dw, wo, b, c_.OW);
            continue;
          }
          std::fill(row, row + c_.OW, b);
          for (int64_t kh = 0; kh < c_.KH; ++kh)
            for (int64_t kw = 0; kw < c_.KW; ++kw) {
              const float wv = wo[kh * c_.KW + kw];
              const float* src = xp + (oh * c_.sh + kh * c_.dh) * Wp_ + kw * c_.dw;
              if (c_.sw == 1) {
                for (int64_t ow = 0; ow < c_.OW; ++ow) row[ow] += wv * src[ow];
              } else {
                for (int64_t ow = 0; ow < c_.OW; ++ow) row[ow] += wv * src[ow * c_.sw];
              }
            }
        }
      }
    });
    return Status::Ok();
  }

 private:
  ConvGeometry c_;
  ThreadPool& pool_;
  int64_t Hp_ = 0, Wp_ = 0;
  DepthwiseRowFn row_fn_ = nullptr;
  std::vector<std::vector<float>> scratch_;
};

bool allFloat32(const ir::Graph& g, const ir::Node& node) {
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  for (int t : node.outputs) if (g.tensors[t].dtype != DType::kFloat32) return false;
  return true;
}

}  // namespace

bool canRunConvOrPool(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  return (op == "Conv2D" || op == "MaxPool" || op == "AvgPool") && allFloat32(g, node);
}

StatusOr<std::unique_ptr<Kernel>> compileConvOrPool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  const std::string op = node.op->name;
  if (op == "MaxPool" || op == "AvgPool") return makePoolKernel(node, DType::kFloat32, op == "MaxPool", false, pool);
  if (g.tensors[node.inputs[1]].shape[1] == 1) return std::unique_ptr<Kernel>(new DepthwiseConvKernel(g, node, pool));
  return std::unique_ptr<Kernel>(new ConvGemmKernel(g, node, pool));
}

}  // namespace gkrt::cpu
