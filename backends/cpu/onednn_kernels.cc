#include "backends/cpu/onednn_kernels.h"

#include <string>

#include "runtime/ir/op_def.h"

#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>
#endif

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

class OneDnnMatMul final : public Kernel {
 public:
  OneDnnMatMul(const ir::Graph& g, const ir::Node& node) : stream_(cpuEngine()) {
    const std::string op = node.op->name;
    bool ta = false, tb = false;
    float alpha = 1.0f;
    if (op == "Gemm") {
      const auto& a = node.attrs.get<GemmAttrs>();
      ta = a.transpose_a, tb = a.transpose_b, alpha = a.alpha;
      has_c_ = node.inputs.size() > 2 && node.inputs[2] >= 0;
    } else {
      const auto& a = node.attrs.get<MatMulAttrs>();
      ta = a.transpose_a, tb = a.transpose_b;
    }
    const ir::Tensor& a = g.tensors[node.inputs[0]];
    const ir::Tensor& b = g.tensors[node.inputs[1]];
    const Shape& sy = g.tensors[node.outputs[0]].shape;
    const size_t rank = sy.size();
    const auto a_md = matrixDesc(a.shape, rank, ta);
    const auto b_md = matrixDesc(b.shape, rank, tb);
    const auto y_md = matrixDesc(sy, rank, false);
    const bool const_b = b.isConstant();
    const auto w_md = const_b ? dnnl::memory::desc(b_md.dims(), dt::f32, dnnl::memory::format_tag::any) : b_md;
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    dnnl::post_ops po;
    if (has_c_) {
      c_md_ = matrixDesc(g.tensors[node.inputs[2]].shape, rank, false);
      po.append_binary(dnnl::algorithm::binary_add, c_md_);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, y_md), attr, cpuEngine());
    prim_ = dnnl::matmul(pd);
    a_mem_ = dnnl::memory(a_md, cpuEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(y_md, cpuEngine(), DNNL_MEMORY_NONE);
    if (has_c_) c_mem_ = dnnl::memory(c_md_, cpuEngine(), DNNL_MEMORY_NONE);
    if (const_b) {  // weights: reordered once, here
      dnnl::memory src(b_md, cpuEngine(), const_cast<uint8_t*>(b.constant->data));
      b_mem_ = dnnl::memory(pd.weights_desc(), cpuEngine());
      dnnl::reorder(src, b_mem_).execute(stream_, src, b_mem_);
      stream_.wait();
      prepacked_ = true;
    } else {
      b_mem_ = dnnl::memory(b_md, cpuEngine(), DNNL_MEMORY_NONE);
    }
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    if (out[0].size() == 0) return Status::Ok();
    a_mem_.set_data_handle(const_cast<void*>(in[0].data));
    if (!prepacked_) b_mem_.set_data_handle(const_cast<void*>(in[1].data));
    y_mem_.set_data_handle(out[0].data);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem_}, {DNNL_ARG_WEIGHTS, b_mem_}, {DNNL_ARG_DST, y_mem_}};
    if (has_c_) {
      c_mem_.set_data_handle(const_cast<void*>(in[2].data));
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = c_mem_;
    }
    prim_.execute(stream_, args);
    stream_.wait();
    return Status::Ok();
  }

 private:
  dnnl::stream stream_;
  dnnl::matmul prim_;
  dnnl::memory a_mem_, b_mem_, y_mem_, c_mem_;
  dnnl::memory::desc c_md_;
  bool has_c_ = false, prepacked_ = false;
};

// Conv2D (groups, dilation, asymmetric pads, bias) on NCHW activations as they are in
// the session's arena; the weights reordered once into the layout oneDNN picks.
class OneDnnConv final : public Kernel {
 public:
  OneDnnConv(const ir::Graph& g, const ir::Node& node) : stream_(cpuEngine()) {
    const auto& a = node.attrs.get<Conv2DAttrs>();
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const ir::Tensor& w = g.tensors[node.inputs[1]];
    const Shape& y = g.tensors[node.outputs[0]].shape;
    const int64_t G = a.groups;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc x_md({x[0], x[1], x[2], x[3]}, dt::f32, tag::nchw);
    const dnnl::memory::desc y_md({y[0], y[1], y[2], y[3]}, dt::f32, tag::nchw);
    const dims w_dims = G == 1 ? dims{w.shape[0], w.shape[1], w.shape[2], w.shape[3]}
                               : dims{G, w.shape[0] / G, w.shape[1], w.shape[2], w.shape[3]};
    const dnnl::memory::desc w_plain(w_dims, dt::f32, G == 1 ? tag::oihw : tag::goihw);
    const dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
    has_bias_ = node.inputs.size() > 2 && node.inputs[2] >= 0;
    const dnnl::memory::desc b_md({y[1]}, dt::f32, tag::x);
    const dims strides{a.strides[0], a.strides[1]}, dil{a.dilations[0] - 1, a.dilations[1] - 1};
    const dims pad_l{a.pads[0], a.pads[1]}, pad_r{a.pads[2], a.pads[3]};
    auto desc = has_bias_ ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::convolution_direct, x_md, w_any, b_md, y_md,
                                                            strides, dil, pad_l, pad_r)
                          : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::convolution_direct, x_md, w_any, y_md,
                                                            strides, dil, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, cpuEngine());
    prim_ = dnnl::convolution_forward(pd);
    x_mem_ = dnnl::memory(x_md, cpuEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(y_md, cpuEngine(), DNNL_MEMORY_NONE);
    if (has_bias_) b_mem_ = dnnl::memory(b_md, cpuEngine(), DNNL_MEMORY_NONE);
    dnnl::memory src(w_plain, cpuEngine(), const_cast<uint8_t*>(w.constant->data));
    w_mem_ = dnnl::memory(pd.weights_desc(), cpuEngine());
    dnnl::reorder(src, w_mem_).execute(stream_, src, w_mem_);
    stream_.wait();
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    x_mem_.set_data_handle(const_cast<void*>(in[0].data));
    y_mem_.set_data_handle(out[0].data);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_mem_}, {DNNL_ARG_WEIGHTS, w_mem_}, {DNNL_ARG_DST, y_mem_}};
    if (has_bias_) {
      b_mem_.set_data_handle(const_cast<void*>(in[2].data));
      args[DNNL_ARG_BIAS] = b_mem_;
    }
    prim_.execute(stream_, args);
    stream_.wait();
    return Status::Ok();
  }

 private:
  dnnl::stream stream_;
  dnnl::convolution_forward prim_;
  dnnl::memory x_mem_, w_mem_, b_mem_, y_mem_;
  bool has_bias_ = false;
};

}  // namespace

bool canRunOneDnn(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if (op == "Conv2D") {  // constant weights (reordered once), float32, non-empty
    for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
    const ir::Tensor& w = g.tensors[node.inputs[1]];
    return w.isConstant() && g.tensors[node.inputs[0]].shape.size() == 4 && w.shape.size() == 4 &&
           numElements(g.tensors[node.outputs[0]].shape) > 0 && numElements(g.tensors[node.inputs[0]].shape) > 0;
  }
  if (op != "MatMul" && op != "BatchMatMul" && op != "Gemm") return false;
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  const Shape& sy = g.tensors[node.outputs[0]].shape;
  if (g.tensors[node.outputs[0]].dtype != DType::kFloat32 || sy.size() < 2 || sy.size() > 6 || numElements(sy) == 0) return false;
  for (int t : {node.inputs[0], node.inputs[1]}) {
    if (g.tensors[t].shape.size() < 2 || g.tensors[t].shape.size() > sy.size()) return false;
  }
  if (op == "Gemm") {
    const auto& a = node.attrs.get<GemmAttrs>();
    const bool has_c = node.inputs.size() > 2 && node.inputs[2] >= 0;
    if (has_c && (a.beta != 1.0f || g.tensors[node.inputs[2]].shape.size() > 2)) return false;
  }
  int64_t k = 1;
  for (int t : {node.inputs[0], node.inputs[1]}) k *= numElements(g.tensors[t].shape) > 0 ? 1 : 0;
  return k == 1;  // oneDNN rejects empty operands
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnn(const ir::Graph& g, const ir::Node& node) {
  try {
    if (std::string(node.op->name) == "Conv2D") return std::unique_ptr<Kernel>(new OneDnnConv(g, node));
    return std::unique_ptr<Kernel>(new OneDnnMatMul(g, node));
  } catch (const std::exception& e) {  // dnnl::error and allocation failures
    return makeError(StatusCode::kUnsupported, "oneDNN for ", node.name, ": ", e.what());
  }
}

#else  // no oneDNN in this build

bool canRunOneDnn(const ir::Graph&, const ir::Node&) { return false; }
StatusOr<std::unique_ptr<Kernel>> compileOneDnn(const ir::Graph&, const ir::Node& node) {
  return makeError(StatusCode::kUnsupported, "this gkrt was built without oneDNN (libdnnl-dev)");
}

#endif

}  // namespace gkrt::cpu
