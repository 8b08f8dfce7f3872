#include "backends/cpu/onednn/onednn_conv.h"

#include <deque>
#include <optional>
#include <stdexcept>
#include <string>

#include "runtime/ir/channels_last_ends.h"
#include "runtime/ir/op_def.h"

#ifdef GKRT_HAVE_OPENMP
#include <omp.h>
#endif

#ifdef GKRT_HAVE_DNNL
#include "backends/cpu/onednn/onednn_conv_plan.h"
#include "backends/cpu/onednn/onednn_impl.h"

namespace gkrt::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

bool isF32(const ir::Tensor& t) { return t.dtype == DType::kFloat32; }

}  // namespace

bool isPerChannel(const Shape& s, int64_t channels) {
  if (s.size() > 4 || s.size() < 3 || numElements(s) != channels) return false;
  const size_t c = s.size() - 3;  // axis 1 of the right-aligned 4-D view
  for (size_t k = 0; k < s.size(); ++k) if (k != c && s[k] != 1) return false;
  return true;
}

bool planConv(const ir::Graph& g, const ir::Node& node, ConvPlan* p) {
  const ir::Graph* body = node.subgraph ? node.subgraph.get() : &g;
  if (body->nodes.empty()) return false;
  const ir::Node& conv = node.subgraph ? body->nodes[0] : node;
  if (std::string(conv.op->name) != "Conv2D" || conv.inputs.size() < 2) return false;
  p->body = body;
  p->conv = &conv;
  const SourceFn source = operandSource(g, node);
  for (int t : conv.inputs) if (t >= 0 && !isF32(body->tensors[t])) return false;
  const ir::Tensor& xt = body->tensors[conv.inputs[0]];
  const ir::Tensor& w = body->tensors[conv.inputs[1]];
  const ir::Tensor& yt = body->tensors[conv.outputs[0]];
  if (!w.isConstant() || xt.shape.size() != 4 || w.shape.size() != 4 || numElements(yt.shape) == 0 ||
      numElements(xt.shape) == 0 || !isF32(yt)) {
    return false;
  }
  if (!source(conv.inputs[0], &p->x) || p->x.constant) return false;
  p->weights = w.constant->data;
  p->has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  if (p->has_bias && !source(conv.inputs[2], &p->bias)) return false;
  p->output = node.outputs[0];
  p->x_tensor = node.inputs[p->x.input];
  if (!node.subgraph) return node.outputs.size() == 1;
  const bool bias_constant = !p->has_bias || p->bias.constant;
  if (!planPostOps(*body, 1, conv.outputs[0], yt.shape, source, &p->posts, bias_constant)) return false;
  const int64_t C = yt.shape[1];
  // A scalar x * a + b first (PP-LCNet's learnable affine before its activation, which
  // a second linear after it would share oneDNN's parameters with): into the weights
  // and the bias.
  if (bias_constant && !p->posts.empty() && !p->posts[0].binary && p->posts[0].alg == dnnl::algorithm::eltwise_linear) {
    const float alpha = p->posts[0].alpha, beta = p->posts[0].beta;
    const float* w0 = static_cast<const float*>(p->weights);
    const int64_t n = numElements(w.shape);
    p->folded_weights.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p->folded_weights[i] = w0[i] * alpha;
    p->weights = p->folded_weights.data();
    const float* b = p->has_bias ? static_cast<const float*>(p->bias.constant) : nullptr;
    p->folded_bias.resize(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) p->folded_bias[c] = (b ? b[c] * alpha : 0.0f) + beta;
    p->has_bias = true;
    p->bias = Source{-1, p->folded_bias.data()};
    p->posts.erase(p->posts.begin());
  }
  // A constant per-channel Mul first: into the weights (per output channel) and the bias.
  if (!p->posts.empty() && p->posts[0].binary && p->posts[0].alg == dnnl::algorithm::binary_mul &&
      p->posts[0].src.constant && isPerChannel(p->posts[0].t->shape, C) && (!p->has_bias || p->bias.constant)) {
    const float* mul = static_cast<const float*>(p->posts[0].src.constant);
    const float* w0 = static_cast<const float*>(p->weights);
    const int64_t n = numElements(w.shape), inner = n / C;
    p->folded_weights.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p->folded_weights[i] = w0[i] * mul[i / inner];
    p->weights = p->folded_weights.data();
    if (p->has_bias) {
      const float* b = static_cast<const float*>(p->bias.constant);
      p->folded_bias.resize(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) p->folded_bias[c] = b[c] * mul[c];
      p->bias = Source{-1, p->folded_bias.data()};
    }
    p->posts.erase(p->posts.begin());
  }
  // Then a constant per-channel Add: into the bias.
  if (!p->posts.empty() && p->posts[0].binary && p->posts[0].alg == dnnl::algorithm::binary_add &&
      p->posts[0].src.constant && isPerChannel(p->posts[0].t->shape, C) &&
      (!p->has_bias || p->bias.constant)) {
    const float* add = static_cast<const float*>(p->posts[0].src.constant);
    const float* b = p->has_bias ? static_cast<const float*>(p->bias.constant) : nullptr;
    p->folded_bias.resize(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) p->folded_bias[c] = add[c] + (b ? b[c] : 0.0f);
    p->has_bias = true;
    p->bias = Source{-1, p->folded_bias.data()};
    p->posts.erase(p->posts.begin());
  }
  return true;
}

namespace {

// Whether a convolution reads and writes maps one wide with a kernel one wide along W
// (and no full-size operand after it): then it is the same computation over the same
// bytes with H and W exchanged, in every activation layout (a dim of 1 moves no stride).
bool alongHeightOnly(const Shape& x, const Shape& y, const Shape& w, const Conv2DAttrs& a, const std::vector<PostOp>& posts) {
  if (x.size() != 4 || y.size() != 4 || w.size() != 4) return false;
  if (x[3] != 1 || y[3] != 1 || w[3] != 1 || x[2] == 1 || a.strides[1] != 1 || a.pads[1] != 0 || a.pads[3] != 0) return false;
  for (const PostOp& post : posts) {
    const Shape& s = post.t ? post.t->shape : Shape{};
    if (post.binary && s.size() >= 2 && s[s.size() - 2] != 1) return false;
  }
  return true;
}

// `layout`'s block for s (0 without a plan).
dnnl::memory::desc actDesc(const Shape& s, bool blocked, const LayoutPlan* layout) {
  const int block = layout ? layout->blockOf(s[1]) : 0;
  return dnnl::memory::desc({s[0], s[1], s[2], s[3]}, dt::f32, activationTag(blocked, block, layout && layout->channels_last));
}

class OneDnnConvKernel final : public Kernel {
 public:
  // `allow_ref`: keep a slow oneDNN implementation (the reference one, or post-ops on
  // a non-jit convolution) when it is the only one; else throw so that the caller
  // picks another kernel.
  // `x_nhwc`, `y_nhwc`: the input is read, the output written, as NHWC bytes (a cluster
  // with channels-last ends; `layout` null then).
  OneDnnConvKernel(ConvPlan plan, const LayoutPlan* layout, bool allow_ref, bool winograd = false, bool x_nhwc = false,
                   bool y_nhwc = false)
      : p_(std::move(plan)), stream_(oneDnnEngine()), x_nhwc_(x_nhwc), y_nhwc_(y_nhwc) {
    repointFolded(&p_);
    Conv2DAttrs a = p_.conv->attrs.get<Conv2DAttrs>();
    Shape x = p_.body->tensors[p_.conv->inputs[0]].shape;  // the node's, or its channels-last end's
    Shape y = p_.body->tensors[p_.conv->outputs[0]].shape;
    Shape ws = p_.body->tensors[p_.conv->inputs[1]].shape;
    // A convolution along H of maps one wide (tf2onnx's 1-D convolution, [N, C, L, 1] with a
    // [k, 1] kernel) runs as the same bytes along W ([N, C, 1, L], [1, k]): oneDNN's jit
    // kernels vectorise along W, and along H they ran 4.4x slower (magika's first layer).
    if (alongHeightOnly(x, y, ws, a, p_.posts)) {
      std::swap(x[2], x[3]);
      std::swap(y[2], y[3]);
      std::swap(ws[2], ws[3]);
      std::swap(a.strides[0], a.strides[1]);
      std::swap(a.dilations[0], a.dilations[1]);
      std::swap(a.pads[0], a.pads[1]);
      std::swap(a.pads[2], a.pads[3]);
      along_width_ = true;
    }
    const int block = layout ? layout->blockOf(y[1]) : 0;
    const bool x_blocked = layout && layout->isBlocked(p_.x_tensor);
    const auto x_md = x_nhwc ? dnnl::memory::desc({x[0], x[1], x[2], x[3]}, dt::f32, tag::nhwc) : actDesc(x, x_blocked, layout);
    const bool y_blocked = layout && layout->isBlocked(p_.output);
    const auto y_md = y_nhwc ? dnnl::memory::desc({y[0], y[1], y[2], y[3]}, dt::f32, tag::nhwc) : actDesc(y, y_blocked, layout);
    const int64_t G = a.groups;
    const dims w_dims = G == 1 ? dims{ws[0], ws[1], ws[2], ws[3]}
                               : dims{G, ws[0] / G, ws[1], ws[2], ws[3]};
    const dnnl::memory::desc w_plain(w_dims, dt::f32, G == 1 ? tag::oihw : tag::goihw);
    const dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
    const dnnl::memory::desc b_md({y[1]}, dt::f32, tag::x);
    const dnnl::memory::desc x_any({x[0], x[1], x[2], x[3]}, dt::f32, tag::any);
    const dnnl::memory::desc y_any({y[0], y[1], y[2], y[3]}, dt::f32, tag::any);
    // A full-size binary post-op operand must be in the destination's layout.
    bool full_binary = false;
    for (PostOp& post : p_.posts) {
      if (!post.binary || post.t->shape != y) continue;
      full_binary = true;
      if (y_blocked) post.layout = activationTag(true, block, layout->channels_last);
    }
    if (full_binary && y_nhwc) throw std::runtime_error("a full-size post-op operand with an NHWC output");
    const dims strides{a.strides[0], a.strides[1]}, dil{a.dilations[0] - 1, a.dilations[1] - 1};
    const dims pad_l{a.pads[0], a.pads[1]}, pad_r{a.pads[2], a.pads[3]};
    dnnl::primitive_attr attr;
    appendPostOps(p_.posts, 4, &attr, &post_mems_);
    // Layouts oneDNN picks itself, unless a full-size operand pins the destination;
    // blocked activations are given as they are (the layout oneDNN wants on this CPU).
    const auto& src_md = x_blocked || x_nhwc ? x_md : x_any;
    const auto make_pd = [&](const dnnl::memory::desc& dst_md,
                             dnnl::algorithm alg = dnnl::algorithm::convolution_direct,
                             const dnnl::primitive_attr* with = nullptr) {
      auto desc = p_.has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_md, w_any,
                                                                b_md, dst_md, strides, dil, pad_l, pad_r)
                              : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_md, w_any,
                                                                dst_md, strides, dil, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, with ? *with : attr, oneDnnEngine());
    };
    // Winograd where it applies (compileOneDnnConv); else, or where oneDNN declines, direct.
    const bool wino = winograd && x_blocked && y_blocked && layout && !layout->channels_last && block == 16 && G == 1 &&
                      ws[2] == 3 && ws[3] == 3 && a.strides[0] == 1 && a.strides[1] == 1 &&
                      a.dilations[0] == 1 && a.dilations[1] == 1 && x[1] >= 16 && y[1] >= 16;
    const auto isWino = [](const dnnl::convolution_forward::primitive_desc& d) {
      const std::string impl = d.impl_info_str();
      return impl.rfind("jit", 0) == 0 && impl.find("wino") != std::string::npos;
    };
    if (wino) {
      try {
        auto wpd = make_pd(y_md, dnnl::algorithm::convolution_winograd);
        if (isWino(wpd)) winograd_pd_.emplace(std::move(wpd));
      } catch (const dnnl::error&) {
      }
    }
    // oneDNN 2.6's Winograd takes ReLU and little else as a post-op: an epilogue of unary
    // steps only (YOLO's SiLU) runs after it as in-place oneDNN eltwise passes over the
    // output, still in cache (nudenet's 3x3 head convolutions: 1.1 -> ~0.7 ms each).
    bool unary_only = !p_.posts.empty();
    for (const PostOp& post : p_.posts) unary_only = unary_only && !post.binary;
    if (wino && !winograd_pd_ && unary_only) {
      try {
        const dnnl::primitive_attr none;
        auto wpd = make_pd(y_md, dnnl::algorithm::convolution_winograd, &none);
        if (isWino(wpd)) {
          for (const PostOp& post : p_.posts) {
            dnnl::eltwise_forward::desc ed(dnnl::prop_kind::forward_inference, post.alg, y_md, post.alpha, post.beta);
            after_.emplace_back(dnnl::eltwise_forward::primitive_desc(ed, oneDnnEngine()));
          }
          winograd_pd_.emplace(std::move(wpd));
        }
      } catch (const dnnl::error&) {
        after_.clear();
      }
    }
    // Post-ops run fast only in the jit convolutions, "jit:*" and the AVX-512 brgemm
    // ones ("brgconv*", "brdgmm*"); elsewhere (seen: a residual Add on gemm:jit took 10x
    // the convolution) the chain runs as its own loop.
    const auto is_slow = [&](const std::string& impl) {
      const bool jit = impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0 || impl.rfind("brdgmm", 0) == 0;
      return isReferenceImpl(impl) || (!p_.posts.empty() && !jit);
    };
    auto pd = winograd_pd_ ? *winograd_pd_ : make_pd(full_binary || y_blocked || y_nhwc ? y_md : y_any);
    impl_ = pd.impl_info_str();
    // A blocked input with a plain output: with the destination left to oneDNN, 2.6 gives
    // some depthwise cases (5x5 on 7x7 maps, AVX-512) only its reference code, while a
    // blocked destination (reordered to plain after) gets the jit kernel.
    if (is_slow(impl_) && x_blocked && !y_blocked && !full_binary && block > 0 && y[1] % block == 0) {
      auto blocked_pd = make_pd(actDesc(y, true, layout));
      if (!is_slow(blocked_pd.impl_info_str())) {
        pd = blocked_pd;
        impl_ = pd.impl_info_str();
      }
    }
    const bool slow = is_slow(impl_);
    if (!allow_ref && slow) throw std::runtime_error("oneDNN has only a slow implementation (" + impl_ + ")");
    prim_ = dnnl::convolution_forward(pd);
    // Where the planned layout and oneDNN's hold the same bytes (an SE branch's 1x1 maps)
    // the primitive reads and writes the planned buffers under its own descriptors.
    x_mem_ = dnnl::memory(sameBytes(pd.src_desc(), x_md) ? pd.src_desc() : x_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(sameBytes(pd.dst_desc(), y_md) ? pd.dst_desc() : y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    if (!sameBytes(pd.src_desc(), x_md)) {  // the input through the workspace in oneDNN's layout
      x_conv_ = dnnl::memory(pd.src_desc(), oneDnnEngine(), DNNL_MEMORY_NONE);
      x_reorder_ = dnnl::reorder(x_mem_, x_conv_);
      x_bytes_ = pd.src_desc().get_size();
    }
    if (!sameBytes(pd.dst_desc(), y_md)) {
      y_conv_ = dnnl::memory(pd.dst_desc(), oneDnnEngine(), DNNL_MEMORY_NONE);
      y_reorder_ = dnnl::reorder(y_conv_, y_mem_);
      y_bytes_ = pd.dst_desc().get_size();
    }
    if (p_.has_bias) b_mem_ = dnnl::memory(b_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    dnnl::memory src(w_plain, oneDnnEngine(), const_cast<void*>(p_.weights));
    w_mem_ = dnnl::memory(pd.weights_desc(), oneDnnEngine());
    dnnl::reorder(src, w_mem_).execute(stream_, src, w_mem_);
    stream_.wait();
    planRowBands(pd, x, y, ws, a, b_md);
  }

  void keepAlive(std::shared_ptr<const void> what) { keep_ = std::move(what); }
  size_t workspaceBytes() const override { return align(x_bytes_) + align(y_bytes_) + band_scratch_; }
  int reorders() const override { return (x_bytes_ > 0) + (y_bytes_ > 0); }
  bool slowPath() const override { return isReferenceImpl(impl_); }
  std::string detail() const override {
    std::string d = "oneDNN " + impl_;
    if (along_width_) d += " (1-D, run along W)";
    if (x_nhwc_ || y_nhwc_) {
      d += std::string(", NHWC ") + (x_nhwc_ && y_nhwc_ ? "input and output" : x_nhwc_ ? "input" : "output") +
           " (its Transpose" + (x_nhwc_ && y_nhwc_ ? "s" : "") + " folded)";
    }
    if (!after_.empty()) d += ", then " + std::to_string(after_.size()) + " in-place eltwise pass" + (after_.size() > 1 ? "es" : "");
    else if (!p_.posts.empty()) d += ", " + std::to_string(p_.posts.size()) + " post-op" + (p_.posts.size() > 1 ? "s" : "");
    if (reorders()) d += ", " + std::to_string(reorders()) + " reorder" + (reorders() > 1 ? "s" : "");
    if (!bands_.empty()) d += ", rows in " + std::to_string(bands_.size()) + " bands, one a thread";
    return d;
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    if (runBands(in, out, workspace)) return Status::Ok();
    x_mem_.set_data_handle(const_cast<void*>(p_.x.at(in)));
    y_mem_.set_data_handle(out[0].data);
    dnnl::memory src = x_mem_, dst = y_mem_;
    if (x_bytes_) {
      x_conv_.set_data_handle(workspace);
      x_reorder_.execute(stream_, x_mem_, x_conv_);
      src = x_conv_;
    }
    if (y_bytes_) {
      y_conv_.set_data_handle(static_cast<char*>(workspace) + align(x_bytes_));
      dst = y_conv_;
    }
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w_mem_}, {DNNL_ARG_DST, dst}};
    if (p_.has_bias) {
      b_mem_.set_data_handle(const_cast<void*>(p_.bias.at(in)));
      args[DNNL_ARG_BIAS] = b_mem_;
    }
    if (after_.empty()) setPostOpArgs(p_.posts, post_mems_, in, &args);
    prim_.execute(stream_, args);
    for (dnnl::eltwise_forward& e : after_) e.execute(stream_, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
    if (y_bytes_) y_reorder_.execute(stream_, y_conv_, y_mem_);
    stream_.wait();
    return Status::Ok();
  }

 private:
  static size_t align(size_t n) { return (n + 63) / 64 * 64; }

  // Row bands: a batch-1 grouped 1x1 convolution between NHWC maps on oneDNN's generic
  // jit kernel, which divides such a map poorly between threads (ShuffleNet's first
  // grouped layer, 24 -> 112 channels in 4 groups on 56x56: 0.119 ms at 1 thread, 0.182
  // at 2), runs as one primitive per band of rows, each band on its own thread alone. A
  // band of an NHWC map is contiguous and a 1x1 stride-1 convolution reads only its own
  // rows; full-size post-op operands are NHWC too (the destination's layout) and are cut
  // the same way. Planned for the thread count at compile; other counts run the whole.
  struct Band {
    int64_t row0 = 0;
    dnnl::primitive prim;
    dnnl::stream stream;
    dnnl::memory x, y, scratch;
    std::vector<dnnl::memory> post_mems;
    OneDnnArgs args;
    size_t scratch_at = 0;
  };

  void planRowBands(const dnnl::convolution_forward::primitive_desc& pd, const Shape& x, const Shape& y, const Shape& ws,
                    const Conv2DAttrs& a, const dnnl::memory::desc& b_md) {
#ifdef GKRT_HAVE_OPENMP
    const int threads = omp_get_max_threads();
    const auto nhwc = [](const Shape& s) { return dnnl::memory::desc({s[0], s[1], s[2], s[3]}, dt::f32, tag::nhwc); };
    if (threads < 2 || x[0] != 1 || a.groups < 2 || ws[2] != 1 || ws[3] != 1 || y[2] < 2 * threads) return;
    if (a.strides[0] != 1 || a.strides[1] != 1 || a.dilations[0] != 1 || a.dilations[1] != 1) return;
    if (a.pads[0] || a.pads[1] || a.pads[2] || a.pads[3] || along_width_ || winograd_pd_ || !after_.empty()) return;
    if (impl_.rfind("jit:", 0) != 0 || x_bytes_ || y_bytes_ || pd.src_desc() != nhwc(x) || pd.dst_desc() != nhwc(y)) return;
    for (const PostOp& post : p_.posts) {
      if (post.binary && post.t->shape == y && post.layout != tag::nhwc) return;
      if (post.binary && post.t->shape != y && numElements(post.t->shape) != y[1] && numElements(post.t->shape) != 1) return;
    }
    const dims one{1, 1}, zero{0, 0};
    std::vector<Band> bands(static_cast<size_t>(threads));
    int64_t row = 0;
    for (int t = 0; t < threads; ++t) {
      Band& b = bands[static_cast<size_t>(t)];
      const int64_t rows = y[2] / threads + (t < y[2] % threads ? 1 : 0);
      const Shape xs{1, x[1], rows, x[3]}, ys{1, y[1], rows, y[3]};
      std::vector<PostOp> posts = p_.posts;
      for (PostOp& post : posts) {
        if (!post.binary || post.t->shape != y) continue;
        band_tensors_.push_back(*post.t);
        band_tensors_.back().shape = ys;
        post.t = &band_tensors_.back();
      }
      dnnl::primitive_attr attr;
      appendPostOps(posts, 4, &attr, &b.post_mems);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      auto desc = p_.has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                 dnnl::algorithm::convolution_direct, nhwc(xs),
                                                                 pd.weights_desc(), b_md, nhwc(ys), one, zero, zero, zero)
                              : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                 dnnl::algorithm::convolution_direct, nhwc(xs),
                                                                 pd.weights_desc(), nhwc(ys), one, zero, zero, zero);
      dnnl::convolution_forward::primitive_desc bpd(desc, attr, oneDnnEngine());
      if (std::string(bpd.impl_info_str()) != impl_) return;  // the same kernel or none
      b.row0 = row;
      row += rows;
      b.prim = dnnl::convolution_forward(bpd);
      b.stream = dnnl::stream(oneDnnEngine());
      b.x = dnnl::memory(nhwc(xs), oneDnnEngine(), DNNL_MEMORY_NONE);
      b.y = dnnl::memory(nhwc(ys), oneDnnEngine(), DNNL_MEMORY_NONE);
      b.scratch = dnnl::memory(bpd.scratchpad_desc(), oneDnnEngine(), DNNL_MEMORY_NONE);
      b.scratch_at = band_scratch_;
      band_scratch_ += align(bpd.scratchpad_desc().get_size());
    }
    bands_ = std::move(bands);
    band_row_x_ = x[1] * x[3];
    band_row_y_ = y[1] * y[3];
#else
    (void)pd, (void)x, (void)y, (void)ws, (void)a, (void)b_md;
#endif
  }

  // Runs the bands, one a thread, when there are bands for this many threads.
  bool runBands(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) {
#ifdef GKRT_HAVE_OPENMP
    const int n = static_cast<int>(bands_.size());
    if (n == 0 || omp_get_max_threads() != n || omp_in_parallel()) return false;
    const float* x = static_cast<const float*>(p_.x.at(in));
    float* y = static_cast<float*>(out[0].data);
    if (p_.has_bias) b_mem_.set_data_handle(const_cast<void*>(p_.bias.at(in)));
    bool failed = false;
#pragma omp parallel num_threads(n)
    {
      Band& b = bands_[static_cast<size_t>(omp_get_thread_num())];
      b.x.set_data_handle(const_cast<float*>(x) + b.row0 * band_row_x_);
      b.y.set_data_handle(y + b.row0 * band_row_y_);
      b.scratch.set_data_handle(static_cast<char*>(workspace) + align(x_bytes_) + align(y_bytes_) + b.scratch_at);
      b.args.set(DNNL_ARG_SRC, b.x);
      b.args.set(DNNL_ARG_WEIGHTS, w_mem_);
      b.args.set(DNNL_ARG_DST, b.y);
      b.args.set(DNNL_ARG_SCRATCHPAD, b.scratch);
      if (p_.has_bias) b.args.set(DNNL_ARG_BIAS, b_mem_);
      for (size_t k = 0; k < p_.posts.size(); ++k) {
        const PostOp& post = p_.posts[k];
        if (!post.binary) continue;
        const float* base = static_cast<const float*>(post.src.at(in));
        const bool full = numElements(post.t->shape) == numElements(out[0].shape);
        b.post_mems[k].set_data_handle(const_cast<float*>(base) + (full ? b.row0 * band_row_y_ : 0));
        b.args.set(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(k)) | DNNL_ARG_SRC_1, b.post_mems[k]);
      }
      try {
        b.args.execute(b.prim, b.stream);
        b.stream.wait();
      } catch (const std::exception&) {
#pragma omp critical(gkrt_conv_bands)
        failed = true;
      }
    }
    if (failed) throw std::runtime_error("a row band of the convolution failed in oneDNN");
    return true;
#else
    (void)in, (void)out, (void)workspace;
    return false;
#endif
  }

  ConvPlan p_;
  dnnl::stream stream_;
  bool x_nhwc_ = false, y_nhwc_ = false;
  std::shared_ptr<const void> keep_;  // what p_ points into when the kernel made it (a channels-last end's inner node)
  dnnl::primitive prim_;
  dnnl::memory x_mem_, w_mem_, b_mem_, y_mem_, x_conv_, y_conv_;
  dnnl::reorder x_reorder_, y_reorder_;
  size_t x_bytes_ = 0, y_bytes_ = 0;
  std::vector<dnnl::memory> post_mems_;
  std::string impl_;
  bool along_width_ = false;  // H and W exchanged (alongHeightOnly)
  std::optional<dnnl::convolution_forward::primitive_desc> winograd_pd_;
  std::vector<dnnl::eltwise_forward> after_;  // a Winograd convolution's unary epilogue, in place
  std::vector<Band> bands_;                   // row bands, one a thread (planRowBands); empty: the whole map
  std::deque<ir::Tensor> band_tensors_;       // full-size post-op operands at a band's shape
  size_t band_scratch_ = 0;                   // the bands' scratchpads, in the workspace after the reorders'
  int64_t band_row_x_ = 0, band_row_y_ = 0;   // floats in one row of the input, of the output
};

// The convolution and epilogue of a cluster with channels-last ends, as a node of their
// own: the body without its layout nodes, the Transpose's input read where its output
// was, the epilogue's result as the output. The node's inputs and outputs stay the
// cluster's (a ConvPlan's sources are positions in them).
struct InnerConv {
  ir::ChannelsLastEnds ends;
  std::shared_ptr<ir::Graph> body;
  ir::Node node;
  ConvPlan plan;
};

std::shared_ptr<InnerConv> innerConv(const ir::Graph& g, const ir::Node& node) {
  auto ic = std::make_shared<InnerConv>();
  if (!ir::channelsLastEnds(node, &ic->ends)) return nullptr;
  const ir::ChannelsLastEnds& e = ic->ends;
  ic->body = std::make_shared<ir::Graph>(*node.subgraph);
  ic->body->nodes.assign(node.subgraph->nodes.begin() + long(e.conv), node.subgraph->nodes.begin() + long(e.tail));
  if (e.in) ic->body->inputs[size_t(e.x_input)] = e.conv_x;
  ic->body->outputs = {e.chain_end};
  ic->node = node;
  ic->node.subgraph = ic->body;
  if (!planConv(g, ic->node, &ic->plan)) return nullptr;
  return ic;
}

}  // namespace

bool canRunOneDnnConvChannelsLast(const ir::Graph& g, const ir::Node& node) { return innerConv(g, node) != nullptr; }

StatusOr<std::unique_ptr<Kernel>> compileOneDnnConvChannelsLast(const ir::Graph& g, const ir::Node& node, bool allow_ref) {
  std::shared_ptr<InnerConv> ic = innerConv(g, node);
  if (!ic) return makeError(StatusCode::kUnsupported, "oneDNN does not take ", node.name, " with channels-last ends");
  try {
    auto k = std::make_unique<OneDnnConvKernel>(ic->plan, nullptr, allow_ref, false, ic->ends.in, ic->ends.out);
    k->keepAlive(ic);
    return std::unique_ptr<Kernel>(std::move(k));
  } catch (const std::exception& e) {
    return makeError(StatusCode::kUnsupported, "oneDNN convolution for ", node.name, ": ", e.what());
  }
}

bool oneDnnConvChannelsLastIsFast(const ir::Graph& g, const ir::Node& node) {
  return compileOneDnnConvChannelsLast(g, node, /*allow_ref=*/false).ok();
}

bool canRunOneDnnConv(const ir::Graph& g, const ir::Node& node) {
  ConvPlan p;
  return planConv(g, node, &p);
}

bool oneDnnConvIsFast(const ir::Graph& g, const ir::Node& node, int block, bool channels_last) {
  ConvPlan p;
  if (!planConv(g, node, &p)) return false;
  // (A graph input stays plain: a grouped convolution from plain to NHWC has only oneDNN's
  // reference code, so probing it blocked would claim a fast kernel the plan cannot give.)
  const LayoutPlan layout = probeLayout(g, block, channels_last, {p.x_tensor, p.output});
  try {
    OneDnnConvKernel probe(std::move(p), &layout, /*allow_ref=*/false);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnnConv(const ir::Graph& g, const ir::Node& node, const LayoutPlan* layout,
                                                    bool allow_ref, bool winograd) {
  ConvPlan p;
  if (!planConv(g, node, &p)) return makeError(StatusCode::kUnsupported, "oneDNN does not take ", node.name);
  try {
    return std::unique_ptr<Kernel>(new OneDnnConvKernel(std::move(p), layout, allow_ref, winograd));
  } catch (const std::exception& e) {  // dnnl::error and allocation failures
    return makeError(StatusCode::kUnsupported, "oneDNN convolution for ", node.name, ": ", e.what());
  }
}

}  // namespace gkrt::cpu

#else  // no oneDNN in this build

namespace gkrt::cpu {
bool canRunOneDnnConv(const ir::Graph&, const ir::Node&) { return false; }
bool oneDnnConvIsFast(const ir::Graph&, const ir::Node&, int, bool) { return false; }
bool canRunOneDnnConvChannelsLast(const ir::Graph&, const ir::Node&) { return false; }
bool oneDnnConvChannelsLastIsFast(const ir::Graph&, const ir::Node&) { return false; }
StatusOr<std::unique_ptr<Kernel>> compileOneDnnConvChannelsLast(const ir::Graph&, const ir::Node&, bool) {
  return makeError(StatusCode::kUnsupported, "this gkrt was built without oneDNN (libdnnl-dev)");
}
StatusOr<std::unique_ptr<Kernel>> compileOneDnnConv(const ir::Graph&, const ir::Node& node, const LayoutPlan*, bool, bool) {
  return makeError(StatusCode::kUnsupported, "this gkrt was built without oneDNN (libdnnl-dev)");
}
}  // namespace gkrt::cpu

#endif
