#include "backends/cpu/onednn/onednn_kernels.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "runtime/ir/op_def.h"

#include "backends/cpu/onednn/onednn_impl.h"
#include "backends/cpu/onednn/onednn_matmul_plan.h"
#include "backends/cpu/quantization/int8_digit_matmul.h"
#include "backends/cpu/onednn/onednn_post_ops.h"
#include "backends/cpu/isa/vector_math.h"

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dnnl::engine& cpuEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A matrix stored with shape `s`, read as `rank` dims (leading ones); `transpose`: the
// innermost two swapped (the same bytes, strides swapped).
dnnl::memory::desc matrixDesc(const Shape& s, size_t rank, bool transpose) {
  dims d(rank, 1), strides(rank, 1);
  for (size_t k = 0; k < s.size(); ++k) d[rank - s.size() + k] = s[k];
  int64_t st = 1;
  for (size_t k = rank; k-- > 0;) {
    strides[k] = st;
    st *= d[k];
  }
  if (transpose) {
    std::swap(d[rank - 1], d[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
  return dnnl::memory::desc(d, dt::f32, strides);
}

bool isFloat32(const ir::Tensor& t) { return t.dtype == DType::kFloat32; }

bool planFor(const ir::Graph& g, const ir::Node& node, MatMulPlan* p) {
  const ir::Graph* body = node.subgraph ? node.subgraph.get() : &g;
  const ir::Node& mm = node.subgraph ? body->nodes[0] : node;
  const std::string op = mm.op->name;
  if (op != "MatMul" && op != "BatchMatMul" && op != "Gemm") return false;
  if (node.subgraph && op == "Gemm") return false;
  const SourceFn source = operandSource(g, node);
  if (op == "Gemm") {
    const auto& a = mm.attrs.get<GemmAttrs>();
    p->ta = a.transpose_a, p->tb = a.transpose_b, p->alpha = a.alpha;
    if (mm.inputs.size() > 2 && mm.inputs[2] >= 0) {
      if (a.beta != 1.0f || body->tensors[mm.inputs[2]].shape.size() > 2 || !isFloat32(body->tensors[mm.inputs[2]])) return false;
      PostOp c;
      c.binary = true, c.alg = dnnl::algorithm::binary_add, c.t = &body->tensors[mm.inputs[2]];
      if (!source(mm.inputs[2], &c.src)) return false;
      p->posts.push_back(c);
    }
  } else {
    const auto& a = mm.attrs.get<MatMulAttrs>();
    p->ta = a.transpose_a, p->tb = a.transpose_b;
  }
  if (mm.inputs.size() < 2 || !source(mm.inputs[0], &p->sa) || !source(mm.inputs[1], &p->sb)) return false;
  p->a = &body->tensors[mm.inputs[0]];
  p->b = &body->tensors[mm.inputs[1]];
  const ir::Tensor& y = body->tensors[mm.outputs[0]];
  p->y = y.shape;
  if (!isFloat32(*p->a) || !isFloat32(*p->b) || !isFloat32(y)) return false;
  if (p->y.size() < 2 || p->y.size() > 6 || numElements(p->y) == 0) return false;
  for (const ir::Tensor* t : {p->a, p->b}) {
    if (t->shape.size() < 2 || t->shape.size() > p->y.size() || numElements(t->shape) == 0) return false;
  }
  if (!node.subgraph) return true;
  return planPostOps(*body, 1, mm.outputs[0], p->y, source, &p->posts);
}

// The same dims and strides in another data type.
dnnl::memory::desc retyped(const dnnl::memory::desc& d, dt type) {
  const dnnl::memory::dims strides(d.data.format_desc.blocking.strides, d.data.format_desc.blocking.strides + d.data.ndims);
  return dnnl::memory::desc(d.dims(), type, strides);
}

// Plain row-major weights whose rows lie a multiple of 4 KiB apart, as the same matrix
// with each row 64 bytes further on; nothing when `d` is not such. oneDNN's gemm:jit (its
// only float32 GEMM without brgemm, as on AVX2) ran such weights at half speed: a
// 128x256x1024 product 1.71 ms against 0.88 for 128x256x1040 (1 thread, AVX2 EPYC; 4 KiB
// strides map every row to the same cache sets).
std::optional<dnnl::memory::desc> paddedRows(const dnnl::memory::desc& d) {
  const auto& blk = d.data.format_desc.blocking;
  const int rank = d.data.ndims;
  if (d.data.format_kind != dnnl_blocked || blk.inner_nblks != 0 || rank < 2 || d.data.data_type != dnnl_f32) return {};
  const dnnl::memory::dims dims = d.dims();
  for (int i = 0; i + 2 < rank; ++i) {
    if (dims[size_t(i)] != 1) return {};  // one matrix (batch dims of 1)
  }
  if (blk.strides[rank - 1] != 1 || blk.strides[rank - 2] != dims[size_t(rank - 1)]) return {};
  if ((blk.strides[rank - 2] * 4) % 4096 != 0) return {};
  const dnnl::memory::dim ld = dims[size_t(rank - 1)] + 16;
  dnnl::memory::dims strides(size_t(rank), 1);
  strides[size_t(rank - 2)] = ld;
  for (int i = rank - 3; i >= 0; --i) strides[size_t(i)] = ld * dims[size_t(rank - 2)];
  return dnnl::memory::desc(dims, dt::f32, strides);
}

class OneDnnMatMul final : public Kernel {
 public:
  OneDnnMatMul(MatMulPlan plan, bool bf16, ThreadPool* pool) : p_(std::move(plan)), stream_(cpuEngine()), pool_(pool) {
    // An erf GeLU ending the chain runs as gkrt's own pass over the product (vector_math.h:
    // oneDNN's gelu_erf post-op costs twice the GEMM's own epilogue time on AVX-512).
    if (pool_ && !p_.posts.empty() && !p_.posts.back().binary && p_.posts.back().alg == dnnl::algorithm::eltwise_gelu_erf) {
      p_.posts.pop_back();
      gelu_tail_ = true;
    }
    // A first post-op adding one row of N values to every row of the product is
    // oneDNN's own bias argument: its brgemm adds it in the accumulator's epilogue, where
    // a binary post-op re-reads the product (a MiniLM layer's four products 3.71 -> 3.28
    // ms at 1 thread on an AMX Xeon) and kept the product batched (below).
    if (p_.alpha == 1.0f && !p_.posts.empty() && rowBias(p_.posts.front(), p_.y)) {
      bias_ = p_.posts.front().src;
      has_bias_ = true;
      p_.posts.erase(p_.posts.begin());
    }
    // Activations [..., M, K] against one 2-D weight matrix, no post-op reading another
    // tensor: one 2-D product of all the rows (oneDNN picks its brgemm kernels for it
    // where the batched form got gemm:jit: 81 against 52 GFLOP/s at 1 thread on an AVX2
    // EPYC, a decoder's prefill projections).
    bool binary_post = false;
    for (const PostOp& po : p_.posts) binary_post = binary_post || po.binary;
    const Shape& as = p_.a->shape;
    const bool flat = !p_.ta && p_.b->shape.size() == 2 && as.size() > 2 && !binary_post && numElements(p_.y) > 0;
    const Shape a_shape = flat ? Shape{numElements(as) / as.back(), as.back()} : as;
    const Shape y_shape = flat ? Shape{numElements(p_.y) / p_.y.back(), p_.y.back()} : p_.y;
    const size_t rank = y_shape.size();
    const auto a_md = matrixDesc(a_shape, rank, p_.ta);
    const auto b_md = matrixDesc(p_.b->shape, rank, p_.tb);
    const auto y_md = matrixDesc(y_shape, rank, false);
    const bool const_b = p_.sb.constant != nullptr;
    const dt wt = bf16 ? dt::bf16 : dt::f32;
    const auto w_md = const_b ? dnnl::memory::desc(b_md.dims(), wt, dnnl::memory::format_tag::any) : retyped(b_md, wt);
    const auto a_use = bf16 ? retyped(a_md, dt::bf16) : a_md;
    dnnl::primitive_attr attr;
    if (p_.alpha != 1.0f) attr.set_output_scales(0, {p_.alpha});
    appendPostOps(p_.posts, rank, &attr, &post_mems_);
    serial_ = numElements(p_.y) * (p_.ta ? as[as.size() - 2] : as.back()) < kSerialMatMulMacs;
    std::optional<OneThreadScope> serial;  // made for the thread count it runs on
    if (serial_) serial.emplace();
    const dnnl::memory::desc bias_md = matrixDesc({p_.y.back()}, rank, false);
    auto desc = [&](const dnnl::memory::desc& w) {
      return has_bias_ ? dnnl::matmul::desc(a_use, w, bias_md, y_md) : dnnl::matmul::desc(a_use, w, y_md);
    };
    dnnl::matmul::primitive_desc pd(desc(w_md), attr, cpuEngine());
    impl_ = pd.impl_info_str();  // its reference code: gkrt's own GEMM instead (the caller's next choice)
    if (const_b && !bf16 && impl_.find("gemm:jit") != std::string::npos) {
      if (auto padded = paddedRows(pd.weights_desc())) {
        dnnl::matmul::primitive_desc padded_pd(desc(*padded), attr, cpuEngine());
        if (padded_pd.impl_info_str() == impl_) {
          pd = padded_pd;
          padded_rows_ = true;
        }
      }
    }
    if (isReferenceImpl(impl_)) throw std::runtime_error("oneDNN has only its reference matmul (" + impl_ + ") here");
    if (bf16) {  // float32 activations converted at each launch into buffers made here
      a_bf16_ = dnnl::memory(a_use, cpuEngine());
      if (!const_b) b_bf16_ = dnnl::memory(w_md, cpuEngine());
    }
    prim_ = dnnl::matmul(pd);
    a_mem_ = dnnl::memory(a_md, cpuEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(y_md, cpuEngine(), DNNL_MEMORY_NONE);
    if (has_bias_) bias_mem_ = dnnl::memory(bias_md, cpuEngine(), DNNL_MEMORY_NONE);
    if (const_b) {  // weights: reordered once, here
      dnnl::memory src(b_md, cpuEngine(), const_cast<void*>(p_.sb.constant));
      b_mem_ = dnnl::memory(pd.weights_desc(), cpuEngine());
      dnnl::reorder(src, b_mem_).execute(stream_, src, b_mem_);
      stream_.wait();
    } else {
      b_mem_ = dnnl::memory(b_md, cpuEngine(), DNNL_MEMORY_NONE);
    }
    if (a_bf16_) a_to_bf16_ = dnnl::reorder(a_mem_, a_bf16_);
    if (b_bf16_) b_to_bf16_ = dnnl::reorder(b_mem_, b_bf16_);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    a_mem_.set_data_handle(const_cast<void*>(p_.sa.at(in)));
    if (!p_.sb.constant) b_mem_.set_data_handle(const_cast<void*>(p_.sb.at(in)));
    y_mem_.set_data_handle(out[0].data);
    OneDnnArgs& args = args_;
    args.set(DNNL_ARG_SRC, a_mem_);
    args.set(DNNL_ARG_WEIGHTS, b_mem_);
    args.set(DNNL_ARG_DST, y_mem_);
    if (has_bias_) {
      bias_mem_.set_data_handle(const_cast<void*>(bias_.at(in)));
      args.set(DNNL_ARG_BIAS, bias_mem_);
    }
    if (a_bf16_) {
      a_to_bf16_.execute(stream_, a_mem_, a_bf16_);
      args.set(DNNL_ARG_SRC, a_bf16_);
    }
    if (b_bf16_) {
      b_to_bf16_.execute(stream_, b_mem_, b_bf16_);
      args.set(DNNL_ARG_WEIGHTS, b_bf16_);
    }
    setPostOpArgs(p_.posts, post_mems_, in, &args);
    {
      std::optional<OneThreadScope> serial;
      if (serial_) serial.emplace();
      args.execute(prim_, stream_);
      stream_.wait();
    }
    if (gelu_tail_) {
      float* y = static_cast<float*>(out[0].data);
      pool_->parallelFor(numElements(p_.y), 1024, 16384, [&](int, int64_t b, int64_t e) { geluErfInPlace(y + b, e - b); });
    }
    return Status::Ok();
  }
  std::string detail() const override { return "oneDNN " + impl_ + (padded_rows_ ? ", weight rows padded" : ""); }

 private:
  MatMulPlan p_;
  std::string impl_;
  dnnl::stream stream_;
  ThreadPool* pool_;
  bool gelu_tail_ = false;
  bool has_bias_ = false;  // the first post-op's row of N values, as oneDNN's bias
  Source bias_;
  bool padded_rows_ = false;  // paddedRows: the weights' rows 64 bytes further apart
  bool serial_ = false;  // under kSerialMatMulMacs: made and run on the calling thread
  dnnl::matmul prim_;
  dnnl::memory a_mem_, b_mem_, y_mem_, bias_mem_;
  dnnl::memory a_bf16_, b_bf16_;         // bf16 runs: the converted activations
  dnnl::reorder a_to_bf16_, b_to_bf16_;
  std::vector<dnnl::memory> post_mems_;  // per post-op; binary ones get a handle at launch
  OneDnnArgs args_;
};

// A convolution-like primitive on float32 activations as they are in the session's
// arena: src, constant weights reordered once into the layout oneDNN picked, optional
// bias, dst.
class OneDnnWeightedKernel : public Kernel {
 public:
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    x_mem_.set_data_handle(const_cast<void*>(in[0].data));
    y_mem_.set_data_handle(out[0].data);
    args_.set(DNNL_ARG_SRC, x_mem_);
    args_.set(DNNL_ARG_WEIGHTS, w_mem_);
    args_.set(DNNL_ARG_DST, y_mem_);
    if (has_bias_) {
      b_mem_.set_data_handle(const_cast<void*>(in[2].data));
      args_.set(DNNL_ARG_BIAS, b_mem_);
    }
    args_.execute(prim_, stream_);
    stream_.wait();
    return Status::Ok();
  }
  std::string detail() const override { return "oneDNN " + impl_; }
  bool slowPath() const override { return isReferenceImpl(impl_); }

 protected:
  OneDnnWeightedKernel() : stream_(cpuEngine()) {}
  void setUp(dnnl::primitive prim, const dnnl::memory::desc& x_md, const dnnl::memory::desc& y_md,
             const dnnl::memory::desc& b_md, const dnnl::memory::desc& w_plain, const dnnl::memory::desc& w_chosen,
             const void* weights) {
    prim_ = std::move(prim);
    x_mem_ = dnnl::memory(x_md, cpuEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(y_md, cpuEngine(), DNNL_MEMORY_NONE);
    if (has_bias_) b_mem_ = dnnl::memory(b_md, cpuEngine(), DNNL_MEMORY_NONE);
    dnnl::memory src(w_plain, cpuEngine(), const_cast<void*>(weights));
    w_mem_ = dnnl::memory(w_chosen, cpuEngine());
    dnnl::reorder(src, w_mem_).execute(stream_, src, w_mem_);
    stream_.wait();
  }
  bool has_bias_ = false;
  std::string impl_;

 private:
  dnnl::stream stream_;
  dnnl::primitive prim_;
  dnnl::memory x_mem_, w_mem_, b_mem_, y_mem_;
  OneDnnArgs args_;
};

// ConvTranspose over 1 to 3 spatial axes as a oneDNN deconvolution: ONNX weights
// {C, M/groups, k...} are read through strides as oneDNN (g)oi* weights and reordered
// once; output_padding is the end padding given back (oneDNN derives it from the
// output dims).
class OneDnnDeconv final : public OneDnnWeightedKernel {
 public:
  OneDnnDeconv(const ir::Graph& g, const ir::Node& node) {
    const auto& a = node.attrs.get<ConvTransposeAttrs>();
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const ir::Tensor& w = g.tensors[node.inputs[1]];
    const Shape& y = g.tensors[node.outputs[0]].shape;
    const size_t sp = x.size() - 2;
    const int64_t G = a.groups;
    using tag = dnnl::memory::format_tag;
    const tag act[] = {tag::ncw, tag::nchw, tag::ncdhw};
    const dnnl::memory::desc x_md(dims(x.begin(), x.end()), dt::f32, act[sp - 1]);
    const dnnl::memory::desc y_md(dims(y.begin(), y.end()), dt::f32, act[sp - 1]);
    // oneDNN's dims {G, O/G, I/G, k...} over ONNX's bytes {G, I/G, O/G, k...}.
    const int64_t O = y[1] / G, I = x[1] / G, K = numElements(Shape(w.shape.begin() + 2, w.shape.end()));
    dims w_dims{O, I}, w_strides{K, O * K};
    int64_t st = K;
    for (size_t d = 0; d < sp; ++d) {
      w_dims.push_back(w.shape[2 + d]);
      st /= w.shape[2 + d];
      w_strides.push_back(st);
    }
    if (G > 1) {
      w_dims.insert(w_dims.begin(), G);
      w_strides.insert(w_strides.begin(), I * O * K);
    }
    const dnnl::memory::desc w_plain(w_dims, dt::f32, w_strides);
    const dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
    has_bias_ = node.inputs.size() > 2 && node.inputs[2] >= 0;
    const dnnl::memory::desc b_md({y[1]}, dt::f32, tag::x);
    dims strides, dil, pad_l, pad_r;
    for (size_t d = 0; d < sp; ++d) {
      strides.push_back(a.strides[d]);
      dil.push_back(a.dilations[d] - 1);
      pad_l.push_back(a.pads[d]);
      pad_r.push_back(a.pads[d + sp] - a.output_padding[d]);
    }
    auto desc = has_bias_ ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                              dnnl::algorithm::deconvolution_direct, x_md, w_any, b_md,
                                                              y_md, strides, dil, pad_l, pad_r)
                          : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                              dnnl::algorithm::deconvolution_direct, x_md, w_any, y_md,
                                                              strides, dil, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(desc, cpuEngine());
    impl_ = pd.impl_info_str();
    setUp(dnnl::deconvolution_forward(pd), x_md, y_md, b_md, w_plain, pd.weights_desc(), w.constant->data);
  }
};
// Constant float32 weights, non-empty tensors, begin pads >= 0 (a negative end pad,
// after output_padding is given back, is a longer output, which oneDNN takes).
bool deconvFits(const ir::Graph& g, const ir::Node& node) {
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  const auto& a = node.attrs.get<ConvTransposeAttrs>();
  const size_t sp = g.tensors[node.inputs[0]].shape.size() - 2;
  for (size_t d = 0; d < sp; ++d) {
    if (a.pads[d] < 0) return false;
  }
  return g.tensors[node.inputs[1]].isConstant() && numElements(g.tensors[node.outputs[0]].shape) > 0 &&
         numElements(g.tensors[node.inputs[0]].shape) > 0;
}

}  // namespace

dnnl::engine& oneDnnEngine() { return cpuEngine(); }

bool rowBias(const PostOp& po, const Shape& y) {
  if (!po.binary || po.alg != dnnl::algorithm::binary_add || po.layout != dnnl::memory::format_tag::undef) return false;
  if (!po.t || !isFloat32(*po.t) || po.t->shape.empty() || po.t->shape.size() > y.size()) return false;
  return po.t->shape.back() == y.back() && numElements(po.t->shape) == y.back();
}


bool canRunOneDnn(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if (op == "ConvTranspose") return deconvFits(g, node);
  MatMulPlan p;
  return planFor(g, node, &p);
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnn(const ir::Graph& g, const ir::Node& node, bool bf16, ThreadPool* pool) {
  try {
    if (std::string(node.op->name) == "ConvTranspose") return std::unique_ptr<Kernel>(new OneDnnDeconv(g, node));
    MatMulPlan p;
    if (!planFor(g, node, &p)) return makeError(StatusCode::kUnsupported, "oneDNN does not take ", node.name);
    // Integer weights times column scales (weight-only int8): their products on the int8
    // matrix units, with float32 accuracy, where the CPU has them.
    if (!bf16) {
      if (std::unique_ptr<Kernel> digits = makeInt8DigitMatMul(p, pool)) return digits;
    }
    return std::unique_ptr<Kernel>(new OneDnnMatMul(std::move(p), bf16, pool));
  } catch (const std::exception& e) {  // dnnl::error and allocation failures
    return makeError(StatusCode::kUnsupported, "oneDNN for ", node.name, ": ", e.what());
  }
}

#else  // no oneDNN in this build

bool canRunOneDnn(const ir::Graph&, const ir::Node&) { return false; }
StatusOr<std::unique_ptr<Kernel>> compileOneDnn(const ir::Graph&, const ir::Node& node, bool, ThreadPool*) {
  return makeError(StatusCode::kUnsupported, "this gkrt was built without oneDNN (libdnnl-dev)");
}

#endif

}  // namespace gkrt::cpu
