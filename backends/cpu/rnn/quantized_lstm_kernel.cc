#include "backends/cpu/rnn/quantized_lstm_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/quantization/int8_gemm.h"
#include "backends/cpu/quantization/int8_vnni_gemm.h"
#include "backends/cpu/rnn/recurrent_kernel.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/recurrent.h"
#include "runtime/ir/ops/recurrent_quant.h"

namespace gkrt::cpu {
namespace {

using ops::RecurrentSpec;
constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7;

constexpr int64_t kSmallHidden = 128;

// The per-step loops, built for AVX-512 and AVX2 as well (picked by cpuTier(),
// GKRT_TIERED): at the baseline the int32 products ran as SSE2 pmuludq pairs, and these
// loops were a third of a small LSTM's time. The results are the same in each build.

// x quantized into out (quantizeU8); returns the sum of out's bytes.
GKRT_INLINE_BODY int32_t quantizeRowSumBody(const float* x, int64_t n, ops::U8Quant q, uint8_t* out) {
  ops::quantizeU8(x, n, q, out);
  int32_t sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += out[k];
  return sum;
}
GKRT_TIERED(int32_t, quantizeRowSum, (const float* x, int64_t n, ops::U8Quant q, uint8_t* out), (x, n, q, out),
            "avx512f", "avx2")

// c[j] = sum (a - az)(w8 - wz8[j]) from c[j] = sum a w8, columns [j0, j1) of one row:
// - az colsum[j] - wz8[j] a_sum + K az wz8[j].
GKRT_INLINE_BODY void takeZeroPointsRowBody(const int32_t* colsum, const int32_t* wz8, int32_t a_sum, int32_t az,
                                            int32_t K, int32_t* c, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) c[j] += -az * colsum[j] - wz8[j] * a_sum + K * az * wz8[j];
}
GKRT_TIERED(void, takeZeroPointsRow,
            (const int32_t* colsum, const int32_t* wz8, int32_t a_sum, int32_t az, int32_t K, int32_t* c, int64_t j0,
             int64_t j1),
            (colsum, wz8, a_sum, az, K, c, j0, j1), "avx512f", "avx2")

GKRT_INLINE_BODY void toFloatsBody(const int32_t* a, int64_t n, float* f) {
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(a[i]);
}
GKRT_TIERED(void, toFloats, (const int32_t* a, int64_t n, float* f), (a, n, f), "avx512f", "avx2")

// g = (float(ax) * mx + ah * mh) + bias, in the reference's order.
GKRT_INLINE_BODY void gatePreactivationsBody(const int32_t* ax, const float* mx, const float* ah, const float* mh,
                                             const float* bias, int64_t n, float* g) {
  for (int64_t j = 0; j < n; ++j) {
    const float xw = static_cast<float>(ax[j]) * mx[j];
    g[j] = (xw + ah[j] * mh[j]) + bias[j];
  }
}
GKRT_TIERED(void, gatePreactivations,
            (const int32_t* ax, const float* mx, const float* ah, const float* mh, const float* bias, int64_t n,
             float* g),
            (ax, mx, ah, mh, bias, n, g), "avx512f", "avx2")

// Element i of an int8 or uint8 constant.
int32_t byteAt(const ir::Tensor& t, int64_t i) {
  return t.dtype == DType::kUInt8 ? t.constant->data[i] : static_cast<int8_t>(t.constant->data[i]);
}

const ir::Tensor* inputTensor(const ir::Graph& g, const ir::Node& node, int k) {
  return static_cast<int>(node.inputs.size()) > k && node.inputs[k] >= 0 ? &g.tensors[node.inputs[k]] : nullptr;
}

StatusOr<RecurrentSpec> specOf(const ir::Graph& g, const ir::Node& node) {
  const Shape& r = g.tensors[node.inputs[kR]].shape;
  if (r.size() != 3) return makeError(StatusCode::kInvalidArgument, "DynamicQuantizeLSTM R must be 3-D");
  return ops::recurrentSpec(node, g.tensors[node.inputs[kX]].shape, {r[0], r[2], r[1]});
}

// Column j's value of direction d from a scale or zero point of 1, D or D x GH values.
double paramAt(const ir::Tensor& t, int64_t D, int64_t GH, int64_t d, int64_t j) {
  const int64_t count = numElements(t.shape);
  return ops::loadF(t.constant->data, t.dtype, count == 1 ? 0 : count == D ? d : d * GH + j);
}

struct Direction {
  PackedInt8B w, r;            // without VNNI: (w - wz) [input x 4H], (r - rz) [H x 4H] (r: not small R's)
  std::vector<float> r_float;  // small R: (r - rz) as float32 [H x 4H], its sums exact (exact_r_)
  std::vector<float> h_centred, acc_f;  // small R: hu - hz, and h R as float32
  std::vector<float> mx, mh;   // float(x_scale * ws[j]) and float(h_scale * rs[j]) of this launch / step
  // AVX-512 VNNI: W and R as int8 (uint8 ^ 0x80) with their zero points moved to match
  // (wz8 = wz - 128), h's rows padded to R's K; the zero points' terms taken off after.
  VnniB wv, rv;
  std::vector<int32_t> wz8, rz8;
  std::vector<int32_t> h_sum;  // per row: sum of h's uint8
  std::vector<float> ws, rs;   // scales per column
  std::vector<float> bias;     // Wb + Rb
  std::vector<int32_t> acc_x;  // X W: [steps * batch][4H]
  std::vector<int32_t> acc_h;  // h R: [batch][4H]
  std::vector<float> h, c, gates;
  std::vector<uint8_t> hu;     // h as uint8
  Int8GemmScratch scratch_x, scratch_r;  // each direction's own: their packings may differ (SDOT or not)
};

class QuantizedLstmKernel final : public Kernel {
 public:
  QuantizedLstmKernel(const ir::Graph& g, const ir::Node& node, RecurrentSpec spec, ThreadPool& pool)
      : s_(std::move(spec)), pool_(pool), one_(1) {
    const int64_t H = s_.hidden, GH = 4 * H, I = s_.input, D = s_.directions, B = s_.batch, rows = s_.seq * B;
    const ir::Tensor &w = *inputTensor(g, node, kW), &r = *inputTensor(g, node, kR);
    const ir::Tensor &wsc = *inputTensor(g, node, ops::kQlstmWScale), &wzp = *inputTensor(g, node, ops::kQlstmWZp);
    const ir::Tensor &rsc = *inputTensor(g, node, ops::kQlstmRScale), &rzp = *inputTensor(g, node, ops::kQlstmRZp);
    const ir::Tensor* bt = inputTensor(g, node, kB);
    dirs_.resize(D);
    for (int64_t d = 0; d < D; ++d) {
      Direction& dir = dirs_[d];
      std::vector<int32_t> wz(GH), rz(GH);
      dir.ws.resize(GH);
      dir.rs.resize(GH);
      dir.bias.assign(GH, 0.0f);
      for (int64_t j = 0; j < GH; ++j) {
        wz[j] = static_cast<int32_t>(paramAt(wzp, D, GH, d, j));
        rz[j] = static_cast<int32_t>(paramAt(rzp, D, GH, d, j));
        dir.ws[j] = static_cast<float>(paramAt(wsc, D, GH, d, j));
        dir.rs[j] = static_cast<float>(paramAt(rsc, D, GH, d, j));
        if (bt) {
          const float* b = reinterpret_cast<const float*>(bt->constant->data) + d * 2 * GH;
          dir.bias[j] = b[j] + b[GH + j];
        }
      }
      if (vnni_) {  // every product by vpdpbusd: only the int8 packings
        packShifted(w, d * I * GH, I, GH, wz, &dir.wv, &dir.wz8);
        packShifted(r, d * H * GH, H, GH, rz, &dir.rv, &dir.rz8);
        dir.h_sum.resize(B);
      } else {
        packInt8B(w.constant->data + d * I * GH, w.dtype, I, GH, wz, &dir.w);
        dir.scratch_x = makeInt8GemmScratch(dir.w, pool_.size(), rows);
        // A small R's products summed in float32 by the float LSTM's register-blocked loop:
        // exact while every |sum| < 2^24 (255 * max|r - rz| * H), and faster than the int8
        // GEMM's per-call set-up at these sizes.
        int32_t most = 0;
        for (int64_t i = 0; i < H * GH; ++i) most = std::max(most, std::abs(byteAt(r, d * H * GH + i) - rz[i % GH]));
        if (H <= kSmallHidden && int64_t{255} * most * H < (int64_t{1} << 24)) {
          dir.r_float.resize(H * GH);
          for (int64_t i = 0; i < H * GH; ++i) dir.r_float[i] = static_cast<float>(byteAt(r, d * H * GH + i) - rz[i % GH]);
          dir.h_centred.resize(B * H);
        } else {
          packInt8B(r.constant->data + d * H * GH, r.dtype, H, GH, rz, &dir.r);
          dir.scratch_r = makeInt8GemmScratch(dir.r, 1, B);
        }
      }
      dir.acc_x.resize(rows * GH);
      dir.acc_h.resize(B * GH);
      dir.h.resize(B * H);
      dir.c.resize(B * H);
      dir.gates.resize(B * GH);
      dir.hu.resize(B * H);
      dir.mx.resize(GH);
      dir.mh.resize(GH);
      dir.acc_f.resize(B * GH);
      if (vnni_) dir.hu.assign(B * dir.rv.padK(), 0);  // rows padded to R's K
    }
    x_stride_ = vnni_ ? dirs_[0].wv.padK() : I;
    x_sum_.resize(rows);
    lens_.assign(B, s_.seq);
    xu_.assign(rows * x_stride_, 0);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const int64_t rows = s_.seq * s_.batch, I = s_.input;
    const bool has_lens = in[kSeqLens].present();
    RETURN_IF_ERROR(readSequenceLengths(s_, has_lens ? &in[kSeqLens] : nullptr, &lens_));
    const float* x = in[kX].as<float>();
    xq_ = ops::dynamicU8(x, rows * I);
    if (!vnni_) {
      ops::quantizeU8(x, rows * I, xq_, xu_.data());
      for (Direction& dir : dirs_) int8Gemm(rows, xu_.data(), DType::kUInt8, xq_.zp, dir.w, dir.acc_x.data(), pool_, dir.scratch_x);
    } else {
      for (int64_t m = 0; m < rows; ++m) x_sum_[m] = quantizeRowSum(x + m * I, I, xq_, xu_.data() + m * x_stride_);
      for (Direction& dir : dirs_) {
        // panels a thread: enough work (~256k products, a few microseconds) to pay for the
        // parallel region (an LSTM tagger's 24 x 32 x 256 runs on one thread)
        const int64_t min_panels = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, rows * x_stride_ * 16));
        pool_.parallelFor(dir.wv.panels, 1, min_panels, [&](int, int64_t p0, int64_t p1) {
          vnniGemm(rows, xu_.data(), x_stride_, dir.wv, dir.acc_x.data(), dir.wv.N, p0, p1);
          takeZeroPoints(rows, x_sum_.data(), xq_.zp, I, dir.wv, dir.wz8, dir.acc_x.data(), p0, p1);
        });
      }
    }
    auto state = [&](int k) { return static_cast<int>(in.size()) > k && in[k].present() ? in[k].as<float>() : nullptr; };
    float* y = !out.empty() && out[0].data ? out[0].as<float>() : nullptr;
    if (y && has_lens) std::memset(y, 0, out[0].size() * sizeof(float));
    const float *init_h = state(kInitH), *init_c = state(kInitC);
    pool_.parallelFor(s_.directions, 1, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) runDirection(d, init_h, init_c, y);
    });
    const float* h_rows[2] = {dirs_[0].h.data(), s_.directions > 1 ? dirs_[1].h.data() : nullptr};
    const float* c_rows[2] = {dirs_[0].c.data(), s_.directions > 1 ? dirs_[1].c.data() : nullptr};
    storeFinalStates(s_, out, h_rows, c_rows);
    return Status::Ok();
  }

 private:
  void runDirection(int64_t d, const float* init_h, const float* init_c, float* y) {
    const int64_t H = s_.hidden, GH = 4 * H, B = s_.batch;
    Direction& dir = dirs_[d];
    loadInitialState(s_, d, init_h, dir.h.data());
    loadInitialState(s_, d, init_c, dir.c.data());
    std::vector<float>& mx = dir.mx;
    std::vector<float>& mh = dir.mh;
    for (int64_t j = 0; j < GH; ++j) mx[j] = xq_.scale * dir.ws[j];
    const int64_t steps = *std::max_element(lens_.begin(), lens_.end());
    for (int64_t step = 0; step < steps; ++step) {
      // h of every row (those past their length held), as the reference quantizes it
      const ops::U8Quant hq = ops::dynamicU8(dir.h.data(), B * H);
      if (!dir.rv.data.empty()) {  // VNNI: rows padded to R's K
        const int64_t ld = dir.rv.padK();
        for (int64_t b = 0; b < B; ++b) dir.h_sum[b] = quantizeRowSum(dir.h.data() + b * H, H, hq, dir.hu.data() + b * ld);
        vnniGemm(B, dir.hu.data(), ld, dir.rv, dir.acc_h.data(), GH, 0, dir.rv.panels);
        takeZeroPoints(B, dir.h_sum.data(), hq.zp, H, dir.rv, dir.rz8, dir.acc_h.data(), 0, dir.rv.panels);
        toFloats(dir.acc_h.data(), B * GH, dir.acc_f.data());
      } else if (!dir.r_float.empty()) {
        ops::quantizeU8(dir.h.data(), B * H, hq, dir.hu.data());
        for (int64_t i = 0; i < B * H; ++i) dir.h_centred[i] = static_cast<float>(static_cast<int>(dir.hu[i]) - hq.zp);
        std::fill(dir.acc_f.begin(), dir.acc_f.end(), 0.0f);
        addRowsTimes(dir.h_centred.data(), B, dir.r_float.data(), H, GH, GH, dir.acc_f.data(), GH);  // exact integers
      } else {
        ops::quantizeU8(dir.h.data(), B * H, hq, dir.hu.data());
        int8Gemm(B, dir.hu.data(), DType::kUInt8, hq.zp, dir.r, dir.acc_h.data(), one_, dir.scratch_r);
        toFloats(dir.acc_h.data(), B * GH, dir.acc_f.data());
      }
      for (int64_t j = 0; j < GH; ++j) mh[j] = hq.scale * dir.rs[j];
      for (int64_t b = 0; b < B; ++b) {
        if (step >= lens_[b]) continue;
        const int64_t t = s_.reversed(d) ? lens_[b] - 1 - step : step;
        const int32_t* ax = dir.acc_x.data() + (s_.batch_first ? b * s_.seq + t : t * B + b) * GH;
        const float* ah = dir.acc_f.data() + b * GH;
        float* g = dir.gates.data() + b * GH;
        gatePreactivations(ax, mx.data(), ah, mh.data(), dir.bias.data(), GH, g);
        float* h = dir.h.data() + b * H;
        lstmDefaultGates(g, H, dir.c.data() + b * H, h);
        if (y) std::memcpy(y + s_.yIndex(t, d, b), h, H * sizeof(float));
      }
    }
  }

  // W or R of direction d (at element `at`, K x N) as int8 for vpdpbusd: uint8 values
  // shifted by -128 (x ^ 0x80) and their zero points with them.
  static void packShifted(const ir::Tensor& t, int64_t at, int64_t K, int64_t N, const std::vector<int32_t>& zp, VnniB* out,
                          std::vector<int32_t>* zp8) {
    const int32_t shift = t.dtype == DType::kUInt8 ? 128 : 0;
    std::vector<int8_t> w8(K * N);
    for (int64_t i = 0; i < K * N; ++i) w8[i] = static_cast<int8_t>(byteAt(t, at + i) - shift);
    packVnniB(w8.data(), K, N, out);
    zp8->resize(N);
    for (int64_t j = 0; j < N; ++j) (*zp8)[j] = zp[j] - shift;
  }
  // c = sum (a - az)(w8 - wz8[j]) from c = sum a w8: - az colsum[j] - wz8[j] a_sum[m] + K az wz8[j].
  static void takeZeroPoints(int64_t M, const int32_t* a_sum, int32_t az, int64_t K, const VnniB& b,
                             const std::vector<int32_t>& wz8, int32_t* c, int64_t p0, int64_t p1) {
    const int64_t j1 = std::min(b.N, p1 * 16);
    for (int64_t m = 0; m < M; ++m) {
      takeZeroPointsRow(b.colsum.data(), wz8.data(), a_sum[m], az, static_cast<int32_t>(K), c + m * b.N, p0 * 16, j1);
    }
  }

  RecurrentSpec s_;
  ThreadPool& pool_;
  ThreadPool one_;
  const bool vnni_ = vnniGemmAvailable();
  int64_t x_stride_ = 0;        // X's uint8 rows: input, or W's padded K (VNNI)
  std::vector<int32_t> x_sum_;  // VNNI: per row of X, the sum of its uint8  // each direction's step GEMMs, on the thread that runs the direction
  std::vector<Direction> dirs_;
  std::vector<uint8_t> xu_;
  ops::U8Quant xq_;
  std::vector<int64_t> lens_;  // sequence_lens of this launch (all seq without it)
};

}  // namespace

bool canRunQuantizedLstm(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || std::string(node.op->name) != "DynamicQuantizeLSTM" || node.inputs.size() != 12) return false;
  const ir::Tensor* x = inputTensor(g, node, kX);
  if (!x || x->dtype != DType::kFloat32 || inputTensor(g, node, kP)) return false;
  for (int k : {kW, kR, kB, ops::kQlstmWScale, ops::kQlstmWZp, ops::kQlstmRScale, ops::kQlstmRZp}) {
    const ir::Tensor* t = inputTensor(g, node, k);
    if ((t || k != kB) && (!t || !t->isConstant())) return false;
  }
  for (int k : {kInitH, kInitC}) {
    const ir::Tensor* t = inputTensor(g, node, k);
    if (t && t->dtype != DType::kFloat32) return false;
  }
  auto spec = specOf(g, node);
  if (!spec.ok() || spec->clip > 0.0f || spec->input_forget) return false;
  for (const auto& a : spec->act) {
    if (a[0].fn != RnnActivation::kSigmoid || a[1].fn != RnnActivation::kTanh || a[2].fn != RnnActivation::kTanh) return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileQuantizedLstm(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  ASSIGN_OR_RETURN(RecurrentSpec spec, specOf(g, node));
  return std::unique_ptr<Kernel>(std::make_unique<QuantizedLstmKernel>(g, node, std::move(spec), pool));
}

}  // namespace gkrt::cpu
