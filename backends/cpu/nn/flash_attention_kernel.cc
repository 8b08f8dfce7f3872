#include "backends/cpu/nn/flash_attention_kernel.h"

#include <algorithm>
#include <limits>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/row_math.h"
#include "backends/cpu/math/gemm.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/attention_layout.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One key block's step of the online softmax over a rows x cols score tile: each row
// scaled (+ its mask row), the running max m raised, the row replaced by exp(s - m),
// its sum added to the running l after l is rescaled by c = exp(m_old - m), the factor
// the caller applies to the row's output accumulator. A row whose scores are all -inf
// so far becomes zeros with c = 1. `mask` is row 0's mask, rows `mask_row` apart, keys
// `mask_col` apart.
GKRT_INLINE_BODY void softmaxStepBody(float* s, int64_t rows, int64_t cols, float scale, const float* mask,
                                      int64_t mask_row, int64_t mask_col, float* m, float* l, float* c) {
  for (int64_t i = 0; i < rows; ++i) {
    float* si = s + i * cols;
    const float* mi = mask ? mask + i * mask_row : nullptr;
    if (mi && mask_col == 1) {
      for (int64_t j = 0; j < cols; ++j) si[j] = si[j] * scale + mi[j];
    } else if (mi) {
      for (int64_t j = 0; j < cols; ++j) si[j] = si[j] * scale + mi[j * mask_col];
    } else {
      for (int64_t j = 0; j < cols; ++j) si[j] *= scale;
    }
    const float block_max = laneMax(si, cols);
    const float mx = block_max > m[i] ? block_max : m[i];
    if (mx == kNegInf) {
      std::fill(si, si + cols, 0.0f);
      c[i] = 1.0f;
      continue;
    }
    const float block_sum = laneSumOf(cols, [si, mx](int64_t j) { return si[j] = expNonPositive(si[j] - mx); });
    c[i] = m[i] == kNegInf ? 0.0f : expNonPositive(m[i] - mx);
    l[i] = l[i] * c[i] + block_sum;
    m[i] = mx;
  }
}
GKRT_TIERED(void, softmaxStep,
            (float* s, int64_t rows, int64_t cols, float scale, const float* mask, int64_t mask_row, int64_t mask_col,
             float* m, float* l, float* c),
            (s, rows, cols, scale, mask, mask_row, mask_col, m, l, c), "avx512f", "fma")

// o = o * correction + t, over n values.
GKRT_INLINE_BODY void rescaleAddBody(float* o, const float* t, int64_t n, float correction) {
  for (int64_t j = 0; j < n; ++j) o[j] = o[j] * correction + t[j];
}
GKRT_TIERED(void, rescaleAdd, (float* o, const float* t, int64_t n, float correction), (o, t, n, correction), "avx512f",
            "fma")

class FlashAttentionKernel final : public Kernel {
 public:
  // Query rows per work item and keys per online-softmax step: one item's 64 x 256 score
  // tile (64 KiB) and the head's key/value panels stay in L2 (measured against 32 query
  // rows on MiniLM and the zoo block: no difference beyond noise).
  static constexpr int64_t kBlockQ = 64, kBlockK = 256;

  FlashAttentionKernel(const ir::Graph& g, const ir::Node& n, ThreadPool& pool) : pool_(pool) {
    a_ = n.attrs.get<AttentionAttrs>();
    (void)attentionDims(a_, g.tensors[n.inputs[0]].shape, false, &q_);
    (void)attentionDims(a_, g.tensors[n.inputs[1]].shape, a_.key_transposed, &k_);
    (void)attentionDims(a_, g.tensors[n.inputs[2]].shape, false, &v_);
    (void)attentionDims(a_, g.tensors[n.outputs[0]].shape, false, &o_);
    if (n.inputs.size() > 3 && n.inputs[3] >= 0) {
      mask_strides_ = ops::broadcastStrides(g.tensors[n.inputs[3]].shape, Shape{q_.b, q_.n, q_.s, k_.s});
    }
    const int64_t S = k_.s, D = q_.d;
    dv_pad_ = roundUp(v_.d, kGemmNR);
    key_blocks_ = (S + kBlockK - 1) / kBlockK;
    q_direct_ = q_.sd == 1;
    v_direct_ = v_.sd == 1 && v_.d % kGemmNR == 0;  // V's rows serve as GEMM panels as they are
    k_pack_ = roundUp(S, kGemmNR) * D;
    v_pack_ = v_direct_ ? 0 : key_blocks_ * kBlockK * dv_pad_;
    per_thread_ = (q_direct_ ? 0 : kBlockQ * D) + kBlockQ * kBlockK + 2 * kBlockQ * dv_pad_ + 3 * kBlockQ;
  }

  size_t workspaceBytes() const override {
    return static_cast<size_t>(q_.b * q_.n * (k_pack_ + v_pack_) + pool_.size() * per_thread_) * sizeof(float);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float *q = in[0].as<float>(), *k = in[1].as<float>(), *v = in[2].as<float>();
    const float* mask = in.size() > 3 && in[3].present() ? in[3].as<float>() : nullptr;
    float* y = static_cast<float*>(out[0].data);
    float* packs = static_cast<float*>(ws);
    float* scratch = packs + q_.b * q_.n * (k_pack_ + v_pack_);
    const int64_t heads = q_.b * q_.n;
    // Each head's keys and values are packed once into GEMM panels, shared by its query blocks.
    pool_.parallelFor(heads, 1, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) pack(k, v, w / q_.n, w % q_.n, packs + w * (k_pack_ + v_pack_));
    });
    const int64_t qblocks = (q_.s + kBlockQ - 1) / kBlockQ;
    pool_.parallelFor(heads * qblocks, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        const int64_t head = w / qblocks;
        block(q, v, mask, y, head / q_.n, head % q_.n, (w % qblocks) * kBlockQ, packs + head * (k_pack_ + v_pack_),
              scratch + thread * per_thread_);
      }
    });
    return Status::Ok();
  }

 private:
  static int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

  // K^T as panels [S/16][D][16] (keys across a panel), then V per key block as panels
  // [Dv/16][keys of the block][16]; padding is zero.
  void pack(const float* k, const float* v, int64_t b, int64_t h, float* dst) const {
    const int64_t S = k_.s, D = q_.d, Dv = v_.d;
    if (S % kGemmNR) std::fill(dst + (S / kGemmNR) * D * kGemmNR, dst + k_pack_, 0.0f);
    for (int64_t j = 0; j < S; ++j) {
      float* panel = dst + (j / kGemmNR) * D * kGemmNR + j % kGemmNR;
      for (int64_t d = 0; d < D; ++d) panel[d * kGemmNR] = k[k_.at(b, h, j, d)];
    }
    if (v_direct_) return;
    float* vdst = dst + k_pack_;
    std::fill(vdst, vdst + v_pack_, 0.0f);
    for (int64_t kb = 0; kb < key_blocks_; ++kb) {
      const int64_t k0 = kb * kBlockK, cols = std::min(kBlockK, S - k0);
      float* base = vdst + kb * kBlockK * dv_pad_;
      for (int64_t j = 0; j < cols; ++j) {
        const float* row = v + v_.at(b, h, k0 + j, 0);
        for (int64_t d = 0; d < Dv; ++d) base[(d / kGemmNR) * cols * kGemmNR + j * kGemmNR + d % kGemmNR] = row[d * v_.sd];
      }
    }
  }

  void block(const float* q, const float* v, const float* mask, float* y, int64_t b, int64_t h, int64_t q0, const float* packs,
             float* scratch) const {
    const int64_t D = q_.d, Dv = v_.d, S = k_.s, rows = std::min(kBlockQ, q_.s - q0);
    float* s = scratch;                    // scores, then probabilities: rows x cols
    float* o = s + kBlockQ * kBlockK;      // output accumulator, rows x dv_pad
    float* t = o + kBlockQ * dv_pad_;      // one key block's P V
    float* m = t + kBlockQ * dv_pad_;      // running max per row
    float* l = m + kBlockQ;                // running sum per row
    float* c = l + kBlockQ;                // this key block's rescale of the row's accumulator
    const float* qa = q + q_.at(b, h, q0, 0);
    int64_t lda = q_.ss;
    if (!q_direct_) {  // Q rows gathered into rows x D
      float* qp = c + kBlockQ;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t d = 0; d < D; ++d) qp[i * D + d] = q[q_.at(b, h, q0 + i, d)];
      qa = qp, lda = D;
    }
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.0f);
    if (key_blocks_ == 0) std::fill(o, o + rows * dv_pad_, 0.0f);  // no keys: zeros, never unwritten bytes
    for (int64_t kb = 0; kb < key_blocks_; ++kb) {
      const int64_t k0 = kb * kBlockK, cols = std::min(kBlockK, S - k0);
      gemmRowsSerial(rows, cols, D, qa, lda, packs + (k0 / kGemmNR) * D * kGemmNR, kGemmNR, D * kGemmNR, s, cols);
      const float* mask_block = mask_strides_.empty() ? nullptr
          : mask + b * mask_strides_[0] + h * mask_strides_[1] + q0 * mask_strides_[2] + k0 * mask_strides_[3];
      softmaxStep(s, rows, cols, a_.scale, mask_block, mask_strides_.empty() ? 0 : mask_strides_[2],
                  mask_strides_.empty() ? 0 : mask_strides_[3], m, l, c);
      const float* vb = v_direct_ ? v + v_.at(b, h, k0, 0) : packs + k_pack_ + kb * kBlockK * dv_pad_;
      const int64_t ldb = v_direct_ ? v_.ss : kGemmNR, panel_stride = v_direct_ ? kGemmNR : cols * kGemmNR;
      gemmRowsSerial(rows, Dv, cols, s, cols, vb, ldb, panel_stride, kb == 0 ? o : t, dv_pad_);
      if (kb > 0) {
        for (int64_t i = 0; i < rows; ++i) rescaleAdd(o + i * dv_pad_, t + i * dv_pad_, Dv, c[i]);
      }
    }
    for (int64_t i = 0; i < rows; ++i) {
      // A row with every key masked has l = 0 and o = 0: 0 * inf = NaN, as the unfused softmax.
      const float inv = 1.0f / l[i];
      const float* oi = o + i * dv_pad_;
      for (int64_t d = 0; d < Dv; ++d) y[o_.at(b, h, q0 + i, d)] = oi[d] * inv;
    }
  }

  ThreadPool& pool_;
  AttentionAttrs a_;
  AttentionDims q_, k_, v_, o_;
  std::vector<int64_t> mask_strides_;
  bool q_direct_ = false, v_direct_ = false;
  int64_t dv_pad_ = 0, key_blocks_ = 0, k_pack_ = 0, v_pack_ = 0, per_thread_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> makeFlashAttentionKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::unique_ptr<Kernel>(new FlashAttentionKernel(g, node, pool));
}

}  // namespace gkrt::cpu
