#include "backends/cpu/quantization/block_quant_matmul_kernel.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/math/gemm.h"
#include "backends/cpu/quantization/block_quant_onednn.h"
#include "backends/cpu/quantization/block_quant_parts.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cpu {

namespace block_quant {
void zeroSpareLanes(const BlockQuantDims& d, int64_t cols, float* panels) {
  const int64_t used = cols % kGemmNR;
  if (used == 0) return;
  float* last = panels + (cols / kGemmNR) * d.K * kGemmNR;
  for (int64_t k = 0; k < d.K; ++k) std::memset(last + k * kGemmNR + used, 0, sizeof(float) * size_t(kGemmNR - used));
}
}  // namespace block_quant

namespace {

using namespace block_quant;
constexpr int64_t kMaxBlock = 1024;   // the portable kernel's block buffer
constexpr int64_t kPrefillCols = 64;  // columns a prefill task widens to float at once
constexpr int64_t kColumnGrain = 8;   // columns a streaming task takes at least

size_t align64(size_t n) { return (n + 63) / 64 * 64; }


void permuteChunk(const void* src, void* dst, size_t elem) {  // 32 values: evens, then odds
  const char* s = static_cast<const char*>(src);
  char* t = static_cast<char*>(dst);
  for (size_t j = 0; j < 16; ++j) {
    std::memcpy(t + j * elem, s + 2 * j * elem, elem);
    std::memcpy(t + (16 + j) * elem, s + (2 * j + 1) * elem, elem);
  }
}

void permuteUnit(const int8_t* src, int8_t* dst) {  // 64 values: evens of each half, then odds of each
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 16; ++j) {
      dst[16 * h + j] = src[32 * h + 2 * j];
      dst[32 + 16 * h + j] = src[32 * h + 2 * j + 1];
    }
  }
}

void prepareRows(const BlockQuantDims& d, const float* x, int64_t m, Order order, Rows& r) {
  r.count = m;
  int8_t qb[kMaxBlock];
  float fb[kMaxBlock];
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * d.K;
    for (int64_t b = 0; b < d.blocks; ++b) {
      const int64_t k0 = b * d.block, len = std::min(d.block, d.K - k0);
      const size_t at = size_t(i * r.stride + k0), rb = size_t(i * d.blocks + b);
      if (d.int8_activations) {
        int32_t qsum = 0;
        std::memset(qb, 0, size_t(d.block));
        const float sx = ops::quantizeActivationBlock(xr + k0, len, qb, &qsum);
        r.scale[rb] = sx;
        r.sum[rb] = sx * float(qsum);
        std::memcpy(r.q + at, qb, size_t(d.block));
      } else {
        double s = 0;
        for (int64_t k = 0; k < len; ++k) s += xr[k0 + k];
        r.sum[rb] = float(s);
        std::memset(fb, 0, sizeof(float) * size_t(d.block));
        std::memcpy(fb, xr + k0, sizeof(float) * size_t(len));
        if (order == Order::kChunks32) {
          for (int64_t c = 0; c < d.block; c += 32) permuteChunk(fb + c, r.f + at + size_t(c), sizeof(float));
        } else {
          std::memcpy(r.f + at, fb, sizeof(float) * size_t(d.block));
        }
      }
    }
    if (!d.int8_activations || order == Order::kNatural) continue;
    int8_t* row = r.q + i * r.stride;
    int8_t tmp[64];
    for (int64_t u = 0; u < r.units; ++u) {
      const int64_t k0 = u * 64;
      const bool half = k0 + 64 > r.stride;
      std::memcpy(tmp, row + k0, half ? 32 : 64);
      if (order == Order::kChunks32 || half) {
        permuteChunk(tmp, row + k0, 1);
        if (!half) permuteChunk(tmp + 32, row + k0 + 32, 1);
      } else {
        permuteUnit(tmp, row + k0);
      }
      if (r.scale8) {
        float* s8 = r.scale8 + (i * r.units + u) * 8;
        const float s0 = r.scale[size_t(i * d.blocks + k0 / d.block)];
        const float s1 = half ? 0.0f : r.scale[size_t(i * d.blocks + (k0 + 32) / d.block)];
        for (int j = 0; j < 4; ++j) s8[j] = s0, s8[4 + j] = s1;
      }
    }
  }
}


// Portable: every layout and block size, values in natural order.
void streamPortable(const BlockQuantDims& d, const Weights& w, const Rows& x, int64_t n0, int64_t n1, float* y) {
  int8_t vals[kMaxBlock];
  for (int64_t n = n0; n < n1; ++n) {
    float acc[kMaxRows] = {};
    for (int64_t b = 0; b < d.blocks; ++b) {
      const uint8_t* blk = w.w + (n * d.blocks + b) * d.blob;
      for (int64_t k = 0; k < d.block; ++k) vals[k] = static_cast<int8_t>(storedValue(d, blk, k));
      const float s = w.scales[n * d.blocks + b], o = offsetOf(d, w, n, b, false);
      for (int64_t r = 0; r < x.count; ++r) {
        const size_t rb = size_t(r * d.blocks + b);
        if (d.int8_activations) {
          const int8_t* xq = x.q + r * x.stride + b * d.block;
          int32_t dot = 0;
          for (int64_t k = 0; k < d.block; ++k) dot += int32_t(xq[k]) * vals[k];
          acc[r] += x.scale[rb] * s * float(dot) + o * x.sum[rb];
        } else {
          const float* xf = x.f + r * x.stride + b * d.block;
          float dot = 0;
          for (int64_t k = 0; k < d.block; ++k) dot += xf[k] * float(vals[k]);
          acc[r] += s * dot + o * x.sum[rb];
        }
      }
    }
    for (int64_t r = 0; r < x.count; ++r) y[r * d.N + n] = acc[r] + (w.bias ? w.bias[n] : 0.0f);
  }
}

// Block b of column n widened: value k of the block at out[k * stride].
void widenBlockPortable(const BlockQuantDims& d, const Weights& w, int64_t n, int64_t b, float* out, int64_t stride) {
  const uint8_t* blk = w.w + (n * d.blocks + b) * d.blob;
  const float s = w.scales[n * d.blocks + b], o = offsetOf(d, w, n, b, false);
  const int64_t len = std::min(d.block, d.K - b * d.block);
  for (int64_t k = 0; k < len; ++k) out[k * stride] = float(storedValue(d, blk, k)) * s + o;
}

void widenPanelsPortable(const BlockQuantDims& d, const Weights& w, int64_t n0, int64_t cols, float* panels) {
  zeroSpareLanes(d, cols, panels);
  for (int64_t j = 0; j < cols; ++j) {
    float* lane = panels + (j / kGemmNR) * d.K * kGemmNR + j % kGemmNR;
    for (int64_t b = 0; b < d.blocks; ++b) widenBlockPortable(d, w, n0 + j, b, lane + b * d.block * kGemmNR, kGemmNR);
  }
}

class BlockQuantMatMulKernel final : public Kernel {
 public:
  BlockQuantMatMulKernel(const BlockQuantDims& d, ThreadPool& pool) : d_(d), pool_(pool) {
    avx2_ = false;
#ifdef GKRT_X86_TIERS
    avx2_ = cpuTier().has(CpuIsa::kAvx2) && d_.block % 32 == 0;
#endif
    stream_ = d_.M <= (d_.int8_activations ? kMaxStreamRows : kMaxFloatStreamRows) && d_.block <= kMaxBlock;
#ifdef GKRT_X86_TIERS
    vnni_ = !stream_ && vnniSuits(d_);
    vnni_stream_ = stream_ && avx2_ && vnniStreamSuits(d_);
#endif
    neon_ = stream_ && !avx2_ && neonStreamSuits(d_);
    if (!stream_ && !vnni_) dnn_ = BlockQuantOneDnnGemm::make(d_);
  }

  void setUniformColumns(bool uniform) { uniform_ = uniform; }

  size_t workspaceBytes() const override {
#ifdef GKRT_X86_TIERS
    if (vnni_) {
      const size_t per_block = size_t(d_.M * d_.blocks);
      return align64(size_t(d_.M * d_.blocks * d_.block)) + 2 * align64(per_block * sizeof(float)) +
             size_t(pool_.size()) * 2 * align64(vnniPanelBytes(d_));
    }
#endif
    if (dnn_) return dnn_->workspaceBytes();
    if (!stream_) {
      return align64(sizeof(float) * size_t(packedASize(d_.M, d_.K))) +
             size_t(pool_.size()) * align64(sizeof(float) * size_t(kPrefillCols * d_.K));
    }
    const size_t values = size_t(d_.M * d_.blocks * d_.block), per_block = size_t(d_.M * d_.blocks);
    return align64(d_.int8_activations ? values : values * sizeof(float)) + 2 * align64(per_block * sizeof(float)) +
           align64(sizeof(float) * 8 * size_t(d_.M * units()));
  }

  std::string detail() const override {
    if (vnni_) return std::string("gkrt block-quant gemm") + (d_.nibbles ? " 4-bit" : " 8-bit") + ", int8 activations, avx512_vnni";
    std::string s = stream_ ? "gkrt block-quant gemv" : dnn_ ? "gkrt block-quant widening, oneDNN " + dnn_->impl() : "gkrt block-quant gemm";
    s += d_.nibbles ? " 4-bit" : " 8-bit";
    s += stream_ && d_.int8_activations ? ", int8 activations" : ", float activations";
    return s + (vnni_stream_ ? ", avx512_vnni" : avx2_ ? ", avx2" : neon_ ? (d_.int8_activations ? ", dotprod" : ", neon") : ", portable");
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    Weights w;
    w.w = static_cast<const uint8_t*>(in[1].data);
    w.scales = in[2].as<float>();
    w.offsets = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    w.bias = in.size() > 4 && in[4].data ? in[4].as<float>() : nullptr;
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    char* base = static_cast<char*>(ws);
#ifdef GKRT_X86_TIERS
    if (vnni_) return launchVnni(w, x, y, base);
#endif
    if (dnn_) {
      float* wide = reinterpret_cast<float*>(base);
      pool_.parallelFor(d_.N, 4, 16, [&](int, int64_t j0, int64_t j1) { widenColumns(w, j0, j1 - j0, wide + j0 * d_.K); });
      dnn_->multiply(x, wide, w.bias, y);
      return Status::Ok();
    }
    if (!stream_) return launchGemm(w, x, y, base);
    Rows r;
    r.stride = d_.blocks * d_.block;
    const size_t values = size_t(d_.M * r.stride), per_block = size_t(d_.M * d_.blocks);
    if (d_.int8_activations) {
      r.q = reinterpret_cast<int8_t*>(base);
    } else {
      r.f = reinterpret_cast<float*>(base);
    }
    base += align64(d_.int8_activations ? values : values * sizeof(float));
    r.scale = reinterpret_cast<float*>(base);
    base += align64(per_block * sizeof(float));
    r.sum = reinterpret_cast<float*>(base);
    base += align64(per_block * sizeof(float));
    r.units = units();
    const bool units64 = avx2_ && d_.nibbles && d_.int8_activations;
    if (units64) r.scale8 = reinterpret_cast<float*>(base);
    const bool chunks32 = (avx2_ || neon_) && d_.nibbles;
    prepareRows(d_, x, d_.M, units64 ? Order::kUnits64 : chunks32 ? Order::kChunks32 : Order::kNatural, r);
    // Up to kMaxRows rows a pass over a task's columns; the passes of more rows (a short
    // prompt) reread those columns from cache, not memory.
    pool_.parallelFor(d_.N, kColumnGrain, 2 * kColumnGrain, [&](int, int64_t n0, int64_t n1) {
      for (int64_t r0 = 0; r0 < d_.M; r0 += kMaxRows) {
        Rows g = r;
        g.count = std::min(kMaxRows, d_.M - r0);
        if (g.q) g.q += r0 * r.stride;
        if (g.f) g.f += r0 * r.stride;
        g.scale += r0 * d_.blocks;
        g.sum += r0 * d_.blocks;
        if (g.scale8) g.scale8 += r0 * r.units * 8;
#ifdef GKRT_X86_TIERS
        if (vnni_stream_) {
          streamInt4Vnni(d_, w, g, n0, n1, y + r0 * d_.N);
          continue;
        }
        if (avx2_) {
          streamAvx2(d_, w, g, n0, n1, y + r0 * d_.N);
          continue;
        }
#endif
        if (neon_) {
          streamNeon(d_, w, g, n0, n1, y + r0 * d_.N);
          continue;
        }
        streamPortable(d_, w, g, n0, n1, y + r0 * d_.N);
      }
    });
    return Status::Ok();
  }

 private:
#ifdef GKRT_X86_TIERS
  // A prompt's rows quantized to int8 per block, then 16 columns a task (vnniSuits).
  Status launchVnni(const Weights& w, const float* x, float* y, char* base) {
    Rows r;
    r.stride = d_.blocks * d_.block;
    const size_t per_block = size_t(d_.M * d_.blocks);
    r.q = reinterpret_cast<int8_t*>(base);
    base += align64(size_t(d_.M * r.stride));
    r.scale = reinterpret_cast<float*>(base);
    base += align64(per_block * sizeof(float));
    r.sum = reinterpret_cast<float*>(base);
    base += align64(per_block * sizeof(float));
    r.count = d_.M;
    pool_.parallelFor(d_.M, 1, 1, [&](int, int64_t i0, int64_t i1) { vnniQuantizeRows(d_, x, i0, i1, r); });
    const size_t per_thread = 2 * align64(vnniPanelBytes(d_));
    const int64_t panels = (d_.N + 15) / 16;
    const bool uniform = uniform_ ? *uniform_ : vnniUniformColumns(d_, w.scales, w.offsets);
    pool_.parallelFor((panels + 1) / 2, 1, 1, [&](int thread, int64_t q0, int64_t q1) {
      uint8_t* scratch = reinterpret_cast<uint8_t*>(base + size_t(thread) * per_thread);
      for (int64_t q = q0; q < q1; ++q) gemmVnniPanelPair(d_, w, r, 2 * q, uniform, scratch, y);
    });
    return Status::Ok();
  }
#endif

  Status launchGemm(const Weights& w, const float* x, float* y, char* base) {
    float* a_pack = reinterpret_cast<float*>(base);
    packA(x, d_.M, d_.K, false, a_pack);
    base += align64(sizeof(float) * size_t(packedASize(d_.M, d_.K)));
    const size_t per_thread = align64(sizeof(float) * size_t(kPrefillCols * d_.K));
    // 64 columns a group, or 32 where 64 would leave a thread idle at the end.
    const int64_t threads = pool_.size(), wide = (d_.N + kPrefillCols - 1) / kPrefillCols;
    const int64_t width = threads > 1 && wide % threads != 0 ? kPrefillCols / 2 : kPrefillCols;
    const int64_t groups = (d_.N + width - 1) / width;
    pool_.parallelFor(groups, 1, 1, [&](int thread, int64_t g0, int64_t g1) {
      float* panels = reinterpret_cast<float*>(base + size_t(thread) * per_thread);
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t n0 = g * width, cols = std::min(width, d_.N - n0);
        widen(w, n0, cols, panels);
        gemmSerial(d_.M, a_pack, d_.K, panels, cols, y + n0, d_.N, nullptr);
        if (w.bias) {
          for (int64_t m = 0; m < d_.M; ++m)
            for (int64_t j = 0; j < cols; ++j) y[m * d_.N + n0 + j] += w.bias[n0 + j];
        }
      }
    });
    return Status::Ok();
  }

  void widen(const Weights& w, int64_t n0, int64_t cols, float* panels) const {
#ifdef GKRT_X86_TIERS
    if (avx2_) return widenPanelsAvx2(d_, w, n0, cols, panels);
#endif
    widenPanelsPortable(d_, w, n0, cols, panels);
  }

  void widenColumns(const Weights& w, int64_t n0, int64_t cols, float* dst) const {
#ifdef GKRT_X86_TIERS
    if (avx2_) return widenColumnsAvx2(d_, w, n0, cols, dst);
#endif
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t b = 0; b < d_.blocks; ++b) widenBlockPortable(d_, w, n0 + j, b, dst + j * d_.K + b * d_.block, 1);
    }
  }

  int64_t units() const { return (d_.blocks * d_.block + 63) / 64; }

  BlockQuantDims d_;
  ThreadPool& pool_;
  bool avx2_ = false, stream_ = true, vnni_ = false, vnni_stream_ = false, neon_ = false;
  std::optional<bool> uniform_;  // the VNNI prefill's one-scale-per-column case, known at compile
  std::unique_ptr<BlockQuantOneDnnGemm> dnn_;  // the prefill product where oneDNN has it
};

const Shape* shapeOf(const ir::Graph& g, const ir::Node& node, size_t k) {
  return node.inputs.size() > k && node.inputs[k] >= 0 ? &g.tensors[size_t(node.inputs[k])].shape : nullptr;
}

}  // namespace

bool canRunBlockQuantMatMul(const ir::Graph& g, const ir::Node& node) {
  if (node.op->name != std::string("BlockQuantMatMul") || node.inputs.size() < 3) return false;
  for (int t : node.inputs) if (t >= 0 && !isStatic(g.tensors[size_t(t)].shape)) return false;
  auto d = ops::blockQuantDims(*shapeOf(g, node, 0), *shapeOf(g, node, 1), *shapeOf(g, node, 2), shapeOf(g, node, 3),
                               shapeOf(g, node, 4), node.attrs.get<QuantAttrs>());
  return d.ok() && g.tensors[size_t(node.inputs[0])].dtype == DType::kFloat32 && d->M > 0;
}

std::unique_ptr<Kernel> compileBlockQuantMatMul(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  auto d = ops::blockQuantDims(*shapeOf(g, node, 0), *shapeOf(g, node, 1), *shapeOf(g, node, 2), shapeOf(g, node, 3),
                               shapeOf(g, node, 4), node.attrs.get<QuantAttrs>());
  auto k = std::make_unique<BlockQuantMatMulKernel>(*d, pool);
#ifdef GKRT_X86_TIERS
  const ir::Tensor& scales = g.tensors[size_t(node.inputs[2])];
  const ir::Tensor* offsets = node.inputs.size() > 3 && node.inputs[3] >= 0 ? &g.tensors[size_t(node.inputs[3])] : nullptr;
  if (scales.isConstant() && (!offsets || offsets->isConstant())) {  // else checked per launch
    k->setUniformColumns(block_quant::vnniUniformColumns(*d, reinterpret_cast<const float*>(scales.constant->data),
                                                         offsets ? reinterpret_cast<const float*>(offsets->constant->data) : nullptr));
  }
#endif
  return k;
}

}  // namespace gkrt::cpu
