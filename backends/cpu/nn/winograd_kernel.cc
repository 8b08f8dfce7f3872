#include "backends/cpu/nn/winograd_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/nn/winograd_conv.h"
#include "runtime/ir/op_def.h"

#ifdef GKRT_HAVE_DNNL
#include "backends/cpu/onednn/onednn_conv_plan.h"
#include "backends/cpu/onednn/onednn_kernels.h"

namespace gkrt::cpu {
namespace {

using alg = dnnl::algorithm;

Status refuse(const ir::Node& node, const std::string& why) {
  return makeError(StatusCode::kUnsupported, "Winograd convolution for ", node.name, ": ", why);
}

// The Winograd step for a oneDNN post-op; false (with `why`) when it has none.
bool stepFor(const ir::Node& node, const PostOp& post, const Shape& y, const LayoutPlan& layout,
             WinogradStep* st, std::string* why) {
  st->alpha = post.alpha;
  st->beta = post.beta;
  if (!post.binary) {
    switch (post.alg) {
      case alg::eltwise_relu: st->kind = WinogradStep::kRelu; return true;
      case alg::eltwise_clip:
      case alg::eltwise_clip_v2: st->kind = WinogradStep::kClip; return true;
      case alg::eltwise_linear: st->kind = WinogradStep::kLinear; return true;
      case alg::eltwise_logistic: st->kind = WinogradStep::kSigmoid; return true;
      case alg::eltwise_swish: st->kind = WinogradStep::kSwish; return true;
      case alg::eltwise_hardswish: st->kind = WinogradStep::kHardSwish; return true;
      case alg::eltwise_tanh: st->kind = WinogradStep::kTanh; return true;
      case alg::eltwise_gelu_erf: st->kind = WinogradStep::kGeluErf; return true;
      case alg::eltwise_gelu_tanh: st->kind = WinogradStep::kGeluTanh; return true;
      case alg::eltwise_abs: st->kind = WinogradStep::kAbs; return true;
      case alg::eltwise_square: st->kind = WinogradStep::kSquare; return true;
      case alg::eltwise_sqrt: st->kind = WinogradStep::kSqrt; return true;
      case alg::eltwise_exp: st->kind = WinogradStep::kExp; return true;
      default: return *why = "an epilogue step it does not have", false;
    }
  }
  st->kind = WinogradStep::kBinary;
  switch (post.alg) {
    case alg::binary_add: st->op = WinogradStep::kAdd; break;
    case alg::binary_sub: st->op = WinogradStep::kSub; break;
    case alg::binary_mul: st->op = WinogradStep::kMul; break;
    case alg::binary_max: st->op = WinogradStep::kMax; break;
    case alg::binary_min: st->op = WinogradStep::kMin; break;
    default: return *why = "an epilogue operation it does not have", false;
  }
  const Shape& s = post.t->shape;
  if (s == y) {
    const int t = post.src.input >= 0 ? node.inputs[post.src.input] : -1;
    if (post.src.constant || !layout.isBlocked(t)) return *why = "a full-size operand that is not channel-blocked", false;
    st->operand = WinogradStep::kFull;
    st->input = post.src.input;
    return true;
  }
  if (isPerChannel(s, y[1])) {
    st->operand = WinogradStep::kChannel;
    st->channel = static_cast<const float*>(post.src.constant);
    st->input = post.src.constant ? -1 : post.src.input;
    return true;
  }
  if (numElements(s) == 1 && post.src.constant) {
    st->operand = WinogradStep::kScalar;
    st->alpha = *static_cast<const float*>(post.src.constant);
    return true;
  }
  return *why = "an operand broadcast other than per channel or scalar", false;
}

class WinogradKernel final : public Kernel {
 public:
  // `plain_k` > 0: the output is plain NCHW with plain_k channels, off the block; the
  // convolution runs with its output channels padded to s.K (zero weights and bias) into
  // a blocked buffer of the workspace, which oneDNN's reorder then writes out.
  WinogradKernel(const WinogradShape& s, const float* weights, const float* bias, std::vector<WinogradStep> steps,
                 Source x, size_t inputs, ThreadPool& pool, int64_t plain_k = 0)
      : conv_(s, weights, bias, std::move(steps), pool.size()), x_(x), pool_(pool), block_(s.block), plain_k_(plain_k) {
    operands_.resize(inputs);
    if (plain_k_ > 0) {
      using tag = dnnl::memory::format_tag;
      const dnnl::memory::dims dims{s.N, plain_k_, s.OH, s.OW};
      const dnnl::memory::desc blocked(dims, dnnl::memory::data_type::f32, s.block == 16 ? tag::nChw16c : tag::nChw8c);
      const dnnl::memory::desc plain(dims, dnnl::memory::data_type::f32, tag::nchw);
      padded_mem_ = dnnl::memory(blocked, oneDnnEngine(), DNNL_MEMORY_NONE);
      plain_mem_ = dnnl::memory(plain, oneDnnEngine(), DNNL_MEMORY_NONE);
      to_plain_ = dnnl::reorder(padded_mem_, plain_mem_);
      stream_ = dnnl::stream(oneDnnEngine());
      padded_bytes_ = (size_t(s.N * s.K * s.OH * s.OW) * sizeof(float) + 63) / 64 * 64;
    }
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    for (size_t k = 0; k < in.size() && k < operands_.size(); ++k) operands_[k] = static_cast<const float*>(in[k].data);
    const float* x = static_cast<const float*>(x_.at(in));
    if (plain_k_ == 0) {
      conv_.run(x, static_cast<float*>(out[0].data), operands_, ws, pool_);
      return Status::Ok();
    }
    char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ws) + 63) / 64 * 64);
    conv_.run(x, reinterpret_cast<float*>(base), operands_, base + padded_bytes_, pool_);
    padded_mem_.set_data_handle(base);
    plain_mem_.set_data_handle(out[0].data);
    to_plain_.execute(stream_, padded_mem_, plain_mem_);
    stream_.wait();
    return Status::Ok();
  }
  size_t workspaceBytes() const override { return conv_.workspaceBytes() + (plain_k_ ? padded_bytes_ + 64 : 0); }
  std::string detail() const override {
    return std::string("own Winograd F(4x4,3x3), nChw") + std::to_string(block_) + "c" +
           (plain_k_ ? ", " + std::to_string(plain_k_) + " channels padded to the block, then plain" : "");
  }

 private:
  WinogradConv conv_;
  Source x_;
  ThreadPool& pool_;
  int64_t block_, plain_k_;
  size_t padded_bytes_ = 0;
  dnnl::memory padded_mem_, plain_mem_;
  dnnl::reorder to_plain_;
  dnnl::stream stream_;  // made at compile, not per launch
  std::vector<const float*> operands_;  // the launch's inputs, for the epilogue
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> compileWinogradConv(const ir::Graph& g, const ir::Node& node,
                                                      const LayoutPlan& layout, ThreadPool& pool, bool any_core) {
  ConvPlan p;
  if (!planConv(g, node, &p)) return refuse(node, "not a float32 convolution with a post-op epilogue");
  repointFolded(&p);
  const auto& a = p.conv->attrs.get<Conv2DAttrs>();
  const ir::Tensor& w = p.body->tensors[p.conv->inputs[1]];
  const Shape& x = g.tensors[p.x_tensor].shape;
  const Shape& y = g.tensors[p.output].shape;
  if (w.shape[2] != 3 || w.shape[3] != 3) return refuse(node, "not a 3x3 kernel");
  if (a.strides != Ints{1, 1} || a.dilations != Ints{1, 1} || a.groups != 1) {
    return refuse(node, "strided, dilated or grouped");
  }
  // A plain output whose channels are off the block (a 96 -> 24 3x3 of a detector's FPN
  // head: its tensors stay plain in a blocked plan): the output channels padded to the
  // block, then reordered to the plain output.
  const int64_t B = layout.block;
  const bool padded_out = !layout.isBlocked(p.output) && y[1] % std::max<int64_t>(B, 1) != 0;
  if ((B != 8 && B != 16) || layout.channels_last || !layout.isBlocked(p.x_tensor) ||
      (!layout.isBlocked(p.output) && !padded_out)) {
    return refuse(node, "input or output not in nChw8c/nChw16c");
  }
  if (p.has_bias && !p.bias.constant) return refuse(node, "the bias is not a constant");
  const int64_t K = y[1], KP = padded_out ? (K + B - 1) / B * B : K;
  WinogradShape s{x[0], x[1], x[2], x[3], KP, y[2], y[3], a.pads[0], a.pads[1], B};
  if (!WinogradConv::worthIt(s)) return refuse(node, "too few channels or output tiles to pay off");
  // Padded channels are a third more work at most: worth it while the padded product
  // still does under 0.6 of the direct one's multiplications (worthIt's rule, scaled).
  if (padded_out && 3 * KP > 4 * K) return refuse(node, "the padding to the block is over a third of the channels");
  // With nChw16c (AVX-512) oneDNN has Winograd kernels too; its F(2x2) reads less than
  // half the transformed weights, which wins where they are large: ResNet-50's 256-channel
  // 3x3 at 14x14 (9.4 MiB of them) took 1.42 ms here against oneDNN's 1.15, while up to
  // 128 x 128 channels (2.4 MiB) ours was as fast or up to 1.7x faster (measured on a
  // 2-core AMD EPYC with AVX-512).
  if (s.block == 16 && s.C * s.K > 128 * 256) return refuse(node, "transformed weights over 4.5 MiB: oneDNN's Winograd");
  // On cores with full-width 512-bit FMAs (an Intel Xeon with AVX-512 here; GEMMs on zmm
  // panels, winograd_conv.cc) gkrt's kernel is the faster from 36 output tiles on and
  // oneDNN's F(2x2) below: single 3x3 layers, 1 thread, ms, gkrt's against oneDNN's:
  // 128 -> 128 at 28x28 0.61 vs 0.72-0.77, 128 -> 32 at 56x56 0.79-0.81 vs 1.17, but at
  // 14x14 (16 tiles) 128 -> 32 0.095-0.119 vs 0.052 and 128 -> 128 0.24-0.31 vs 0.18.
  if (s.block == 16 && cpuTier().full_width_512 && !any_core && s.outputTiles() < 36) {
    return refuse(node, "under 36 output tiles: oneDNN's Winograd is faster on this core (full-width AVX-512)");
  }
  std::vector<WinogradStep> steps;
  for (const PostOp& post : p.posts) {
    WinogradStep st;
    std::string why;
    if (!stepFor(node, post, y, layout, &st, &why)) return refuse(node, why);
    if (padded_out && st.kind == WinogradStep::kBinary && st.operand != WinogradStep::kScalar) {
      return refuse(node, "an epilogue operand beside padded output channels");
    }
    steps.push_back(st);
  }
  const float* weights = static_cast<const float*>(p.weights);
  const float* bias = p.has_bias ? static_cast<const float*>(p.bias.constant) : nullptr;
  if (!padded_out) {
    return std::unique_ptr<Kernel>(new WinogradKernel(s, weights, bias, std::move(steps), p.x, node.inputs.size(), pool));
  }
  const size_t per_k = size_t(x[1] * 9);
  std::vector<float> w_pad(size_t(KP) * per_k, 0.0f), b_pad(size_t(KP), 0.0f);
  std::memcpy(w_pad.data(), weights, size_t(K) * per_k * sizeof(float));
  if (bias) std::memcpy(b_pad.data(), bias, size_t(K) * sizeof(float));
  return std::unique_ptr<Kernel>(new WinogradKernel(s, w_pad.data(), b_pad.data(), std::move(steps), p.x, node.inputs.size(),
                                                    pool, K));
}

}  // namespace gkrt::cpu

#else  // no oneDNN: no blocked layouts, so no Winograd kernel

namespace gkrt::cpu {
StatusOr<std::unique_ptr<Kernel>> compileWinogradConv(const ir::Graph&, const ir::Node& node, const LayoutPlan&,
                                                      ThreadPool&, bool) {
  return makeError(StatusCode::kUnsupported, "Winograd convolution for ", node.name, ": needs blocked layouts (oneDNN)");
}
}  // namespace gkrt::cpu
#endif
