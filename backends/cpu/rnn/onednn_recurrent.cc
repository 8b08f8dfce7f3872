#include "backends/cpu/rnn/onednn_recurrent.h"

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/recurrent.h"

#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using ops::RecurrentKind;
using ops::RecurrentSpec;

constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7;

const ir::Tensor* inputTensor(const ir::Graph& g, const ir::Node& node, int k) {
  return static_cast<int>(node.inputs.size()) > k && node.inputs[k] >= 0 ? &g.tensors[node.inputs[k]] : nullptr;
}

const float* constFloats(const ir::Tensor* t) {
  return t ? reinterpret_cast<const float*>(t->constant->data) : nullptr;
}

// ONNX gate index of each oneDNN gate: LSTM oneDNN i, f, c, o from ONNX i, o, f, c; GRU
// and RNN keep their order (z/u, r, h/o).
std::vector<int64_t> onnxGateOf(RecurrentKind k) {
  if (k == RecurrentKind::kLstm) return {0, 2, 3, 1};
  if (k == RecurrentKind::kGru) return {0, 1, 2};
  return {0};
}

// The oneDNN activation of a vanilla RNN, or undef when oneDNN has none for it.
dnnl::algorithm rnnActivation(RnnActivation fn) {
  switch (fn) {
    case RnnActivation::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case RnnActivation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case RnnActivation::kSigmoid:
      return dnnl::algorithm::eltwise_logistic;
    default:
      return dnnl::algorithm::undef;
  }
}

bool sameActivations(const std::vector<ops::Activation>& a, const std::vector<ops::Activation>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].fn != b[k].fn || a[k].alpha != b[k].alpha || a[k].beta != b[k].beta) return false;
  }
  return true;
}

// Whether both directions use one set of activations oneDNN's primitive has: LSTM
// sigmoid/tanh/tanh, GRU sigmoid/tanh, RNN Tanh, Relu (alpha 0) or Sigmoid.
bool defaultActivations(const RecurrentSpec& s) {
  for (const auto& dir : s.act) {
    if (!sameActivations(dir, s.act[0])) return false;
    for (size_t k = 0; k < dir.size(); ++k) {
      const RnnActivation want =
          k == 0 && s.kind != RecurrentKind::kRnn ? RnnActivation::kSigmoid : RnnActivation::kTanh;
      if (s.kind == RecurrentKind::kRnn) {
        if (rnnActivation(dir[k].fn) == dnnl::algorithm::undef) return false;
      } else if (dir[k].fn != want) {
        return false;
      }
    }
  }
  return true;
}

class OneDnnRecurrent final : public Kernel {
 public:
  OneDnnRecurrent(const ir::Graph& g, const ir::Node& node, RecurrentSpec spec)
      : s_(std::move(spec)), stream_(oneDnnEngine()) {
    const int64_t T = s_.seq, N = s_.batch, I = s_.input, H = s_.hidden, D = s_.directions;
    const std::vector<int64_t> gate = onnxGateOf(s_.kind);
    const int64_t G = static_cast<int64_t>(gate.size());
    step_macs_ = G * H * (I + H);
    const bool lbr = s_.kind == RecurrentKind::kGru && s_.linear_before_reset;
    const int64_t GB = lbr ? G + 1 : G;

    // Weights in oneDNN's plain ldigo / ldgo layouts, ONNX gates mapped.
    const float* w = constFloats(inputTensor(g, node, kW));
    const float* r = constFloats(inputTensor(g, node, kR));
    const float* b = constFloats(inputTensor(g, node, kB));
    const float* p = s_.kind == RecurrentKind::kLstm ? constFloats(inputTensor(g, node, kP)) : nullptr;
    std::vector<float> wl(D * I * G * H), wi(D * H * G * H), bias(D * GB * H, 0.0f), peep;
    for (int64_t d = 0; d < D; ++d)
      for (int64_t gi = 0; gi < G; ++gi)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t row = gate[gi] * H + h;  // ONNX W/R row
          for (int64_t i = 0; i < I; ++i) wl[((d * I + i) * G + gi) * H + h] = w[(d * G * H + row) * I + i];
          for (int64_t i = 0; i < H; ++i) wi[((d * H + i) * G + gi) * H + h] = r[(d * G * H + row) * H + i];
          if (b) {
            const float wb = b[d * 2 * G * H + row], rb = b[d * 2 * G * H + G * H + row];
            const bool split = lbr && gi == 2;  // h gate: Rb stays inside r * (...), as oneDNN's 4th bias
            bias[(d * GB + gi) * H + h] = split ? wb : wb + rb;
            if (split) bias[(d * GB + 3) * H + h] = rb;
          }
        }
    if (p) {  // oneDNN peepholes i, f, o; ONNX P i, o, f
      peep.resize(D * 3 * H);
      const int64_t from[3] = {0, 2, 1};
      for (int64_t d = 0; d < D; ++d)
        for (int64_t k = 0; k < 3; ++k)
          std::memcpy(&peep[(d * 3 + k) * H], p + (d * 3 + from[k]) * H, H * sizeof(float));
    }

    const dnnl::memory::desc x_md({T, N, I}, dt::f32, s_.batch_first ? tag::ntc : tag::tnc);
    const dnnl::memory::desc y_md({T, N, D * H}, dt::f32, s_.batch_first ? tag::ntc : tag::tnc);
    const dnnl::memory::desc state_md({1, D, N, H}, dt::f32, tag::ldnc);
    const dnnl::memory::desc wl_plain({1, D, I, G, H}, dt::f32, tag::ldigo),
        wi_plain({1, D, H, G, H}, dt::f32, tag::ldigo);
    const dnnl::memory::desc wl_any({1, D, I, G, H}, dt::f32, tag::any), wi_any({1, D, H, G, H}, dt::f32, tag::any);
    const dnnl::memory::desc bias_md({1, D, GB, H}, dt::f32, tag::ldgo);
    const dnnl::memory::desc peep_md({1, D, 3, H}, dt::f32, tag::ldgo);
    const auto dir = s_.directions == 2 ? dnnl::rnn_direction::bidirectional_concat
                     : s_.reverse_only  ? dnnl::rnn_direction::unidirectional_right2left
                                        : dnnl::rnn_direction::unidirectional_left2right;
    const auto prop = dnnl::prop_kind::forward_inference;
    dnnl::memory::desc wl_md, wi_md;
    std::optional<OneThreadScope> serial;  // made for one thread too (its thread count is fixed then)
    if (N * D * step_macs_ < kSerialStepMacs) serial.emplace();
    if (s_.kind == RecurrentKind::kLstm) {
      auto desc = p ? dnnl::lstm_forward::desc(prop, dir, x_md, state_md, state_md, wl_any, wi_any, peep_md, bias_md,
                                               y_md, state_md, state_md)
                    : dnnl::lstm_forward::desc(prop, dir, x_md, state_md, state_md, wl_any, wi_any, bias_md, y_md,
                                               state_md, state_md);
      dnnl::lstm_forward::primitive_desc pd(desc, oneDnnEngine());
      prim_ = dnnl::lstm_forward(pd);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
    } else if (lbr) {
      dnnl::lbr_gru_forward::primitive_desc pd(
          dnnl::lbr_gru_forward::desc(prop, dir, x_md, state_md, wl_any, wi_any, bias_md, y_md, state_md),
          oneDnnEngine());
      prim_ = dnnl::lbr_gru_forward(pd);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
    } else if (s_.kind == RecurrentKind::kGru) {
      dnnl::gru_forward::primitive_desc pd(
          dnnl::gru_forward::desc(prop, dir, x_md, state_md, wl_any, wi_any, bias_md, y_md, state_md), oneDnnEngine());
      prim_ = dnnl::gru_forward(pd);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
    } else {
      dnnl::vanilla_rnn_forward::primitive_desc pd(
          dnnl::vanilla_rnn_forward::desc(prop, rnnActivation(s_.act[0][0].fn), dir, x_md, state_md, wl_any, wi_any,
                                          bias_md, y_md, state_md),
          oneDnnEngine());
      prim_ = dnnl::vanilla_rnn_forward(pd);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
    }
    wl_mem_ = reordered(wl_plain, wl.data(), wl_md);
    wi_mem_ = reordered(wi_plain, wi.data(), wi_md);
    bias_ = std::move(bias);
    bias_mem_ = dnnl::memory(bias_md, oneDnnEngine(), bias_.data());
    if (p) {
      peep_ = std::move(peep);
      peep_mem_ = dnnl::memory(peep_md, oneDnnEngine(), peep_.data());
    }
    // Y straight into the output where ONNX's layout is oneDNN's (batch first, one
    // direction or batch 1); else through a buffer, permuted after.
    y_direct_ = s_.batch_first || D == 1 || N == 1;
    y_buf_.resize(T * N * D * H);
    for (auto* v : {&h0_, &c0_, &hn_, &cn_}) v->assign(D * N * H, 0.0f);
    x_mem_ = dnnl::memory(x_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    h0_mem_ = dnnl::memory(state_md, oneDnnEngine(), h0_.data());
    c0_mem_ = dnnl::memory(state_md, oneDnnEngine(), c0_.data());
    hn_mem_ = dnnl::memory(state_md, oneDnnEngine(), hn_.data());
    cn_mem_ = dnnl::memory(state_md, oneDnnEngine(), cn_.data());
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const int64_t T = s_.seq, N = s_.batch, H = s_.hidden, D = s_.directions;
    auto present = [&](int k) { return static_cast<int>(in.size()) > k && in[k].present(); };
    // ONNX states (either layout) <-> oneDNN's [dirs][batch][hidden].
    auto loadState = [&](int k, std::vector<float>& dst) {
      if (!present(k)) return;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          std::memcpy(&dst[(d * N + n) * H], in[k].as<float>() + s_.stateIndex(d, n), H * sizeof(float));
    };
    loadState(kInitH, h0_);
    if (s_.kind == RecurrentKind::kLstm) loadState(kInitC, c0_);
    float* y = !out.empty() && out[0].data ? out[0].as<float>() : nullptr;
    x_mem_.set_data_handle(const_cast<void*>(in[kX].data));
    y_mem_.set_data_handle(y_direct_ && y ? static_cast<void*>(y) : static_cast<void*>(y_buf_.data()));
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_LAYER, x_mem_},      {DNNL_ARG_SRC_ITER, h0_mem_},
                                               {DNNL_ARG_WEIGHTS_LAYER, wl_mem_}, {DNNL_ARG_WEIGHTS_ITER, wi_mem_},
                                               {DNNL_ARG_BIAS, bias_mem_},        {DNNL_ARG_DST_LAYER, y_mem_},
                                               {DNNL_ARG_DST_ITER, hn_mem_}};
    if (s_.kind == RecurrentKind::kLstm) {
      args[DNNL_ARG_SRC_ITER_C] = c0_mem_;
      args[DNNL_ARG_DST_ITER_C] = cn_mem_;
      if (!peep_.empty()) args[DNNL_ARG_WEIGHTS_PEEPHOLE] = peep_mem_;
    }
    {
      // A step of fewer than kSerialStepMacs multiply-adds runs faster on this thread alone
      // than split across the pool's (oneDNN opens a parallel region per step).
      std::optional<OneThreadScope> serial;
      if (N * D * step_macs_ < kSerialStepMacs) serial.emplace();
      prim_.execute(stream_, args);
      stream_.wait();
    }
    if (!y_direct_ && y) {  // [T][N][D][H] -> ONNX [T][D][N][H]
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t d = 0; d < D; ++d)
            std::memcpy(y + s_.yIndex(t, d, n), &y_buf_[((t * N + n) * D + d) * H], H * sizeof(float));
    }
    for (size_t o = 1; o < out.size() && o < 3; ++o) {
      if (!out[o].data) continue;
      const std::vector<float>& v = o == 1 ? hn_ : cn_;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          std::memcpy(out[o].as<float>() + s_.stateIndex(d, n), &v[(d * N + n) * H], H * sizeof(float));
    }
    return Status::Ok();
  }

 private:
  dnnl::memory reordered(const dnnl::memory::desc& plain, float* data, const dnnl::memory::desc& want) {
    dnnl::memory src(plain, oneDnnEngine(), data);
    dnnl::memory dst(want, oneDnnEngine());
    dnnl::reorder(src, dst).execute(stream_, src, dst);
    stream_.wait();
    return dst;
  }

  static constexpr int64_t kSerialStepMacs = 64 << 10;
  RecurrentSpec s_;
  int64_t step_macs_ = 0;  // one step's multiply-adds of one batch row and direction: gates x hidden x (input + hidden)
  dnnl::stream stream_;
  dnnl::primitive prim_;
  dnnl::memory x_mem_, y_mem_, wl_mem_, wi_mem_, bias_mem_, peep_mem_, h0_mem_, c0_mem_, hn_mem_, cn_mem_;
  std::vector<float> bias_, peep_, h0_, c0_, hn_, cn_, y_buf_;
  bool y_direct_ = true;
};

}  // namespace
#endif  // GKRT_HAVE_DNNL

bool canRunOneDnnRecurrent(const ir::Graph& g, const ir::Node& node) {
#ifndef GKRT_HAVE_DNNL
  return false;
#else
  if (!node.op) return false;
  const std::string op = node.op->name;
  if (op != "LSTM" && op != "GRU" && op != "RNN") return false;
  if (inputTensor(g, node, kSeqLens)) return false;  // per-sequence lengths: our own kernel
  for (int k = 0; k < static_cast<int>(node.inputs.size()); ++k) {
    const ir::Tensor* t = inputTensor(g, node, k);
    if (!t) continue;
    if (t->dtype != DType::kFloat32) return false;
    if ((k == kW || k == kR || k == kB || (k == kP && op == "LSTM")) && !t->isConstant()) return false;
  }
  for (int o : node.outputs) {
    if (o >= 0 && g.tensors[o].dtype != DType::kFloat32) return false;
  }
  const ir::Tensor *x = inputTensor(g, node, kX), *r = inputTensor(g, node, kR);
  if (!x || !r || !inputTensor(g, node, kW) || numElements(x->shape) <= 0) return false;
  auto spec = ops::recurrentSpec(node, x->shape, r->shape);
  if (!spec.ok() || spec->hidden <= 0 || spec->clip > 0.0f || spec->input_forget) return false;
  return defaultActivations(*spec);
#endif
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnnRecurrent(const ir::Graph& g, const ir::Node& node) {
#ifndef GKRT_HAVE_DNNL
  return makeError(StatusCode::kUnsupported, node.name, ": this gkrt was built without oneDNN (libdnnl-dev)");
#else
  ASSIGN_OR_RETURN(RecurrentSpec spec,
                   ops::recurrentSpec(node, g.tensors[node.inputs[0]].shape, g.tensors[node.inputs[2]].shape));
  try {
    return std::unique_ptr<Kernel>(new OneDnnRecurrent(g, node, std::move(spec)));
  } catch (const std::exception& e) {  // dnnl::error (a case this oneDNN refuses) and allocation failures
    return makeError(StatusCode::kUnsupported, "oneDNN for ", node.name, " (", node.op->name, "): ", e.what());
  }
#endif
}

}  // namespace gkrt::cpu
