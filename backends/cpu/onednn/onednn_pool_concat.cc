#include "backends/cpu/onednn/onednn_pool_concat.h"

#include <stdexcept>
#include <string>

#include "runtime/ir/op_def.h"

#ifdef GKRT_HAVE_DNNL
#include "backends/cpu/onednn/onednn_impl.h"
#include "backends/cpu/onednn/onednn_post_ops.h"

namespace gkrt::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

bool float4d(const ir::Tensor& t) {
  return t.dtype == DType::kFloat32 && t.shape.size() == 4 && numElements(t.shape) > 0 && isStatic(t.shape);
}

// `layout`'s block for s (0 without a plan).
dnnl::memory::desc actDesc(const Shape& s, bool blocked, const LayoutPlan* layout) {
  const int block = layout ? layout->blockOf(s[1]) : 0;
  return dnnl::memory::desc({s[0], s[1], s[2], s[3]}, dt::f32, activationTag(blocked, block, layout && layout->channels_last));
}

// A [N, C, 1, 1] tensor has the same bytes plain and blocked when C is a multiple of
// the block: such an output is written in the input's layout.
bool layoutFree(const Shape& s, int block) { return block > 0 && s[2] * s[3] == 1 && s[1] % block == 0; }

class OneDnnPoolKernel final : public Kernel {
 public:
  OneDnnPoolKernel(const ir::Graph& g, const ir::Node& node, const LayoutPlan* layout, bool allow_ref)
      : stream_(oneDnnEngine()) {
    const std::string op = node.op->name;
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const Shape& y = g.tensors[node.outputs[0]].shape;
    const int block = layout ? layout->blockOf(x[1]) : 0;
    const bool xb = layout && layout->isBlocked(node.inputs[0]);
    const bool yb = layout && layout->isBlocked(node.outputs[0]);
    const auto x_md = actDesc(x, xb, layout), y_md = actDesc(y, yb, layout);
    // Pooling wants one layout on both sides: blocked when either is (and the
    // channels allow); the other side is reordered through the workspace.
    const bool pool_blocked = (xb || yb) && block > 0 && x[1] % block == 0;
    const auto px_md = actDesc(x, pool_blocked, layout), py_md = actDesc(y, pool_blocked, layout);
    dnnl::memory::dims k{x[2], x[3]}, st{1, 1}, pl{0, 0}, pr{0, 0};
    dnnl::algorithm alg = dnnl::algorithm::pooling_avg_exclude_padding;
    if (op != "GlobalAvgPool") {
      const auto& a = node.attrs.get<PoolAttrs>();
      k = {a.kernel[0], a.kernel[1]};
      st = {a.strides[0], a.strides[1]};
      pl = {a.pads[0], a.pads[1]};
      for (int d = 0; d < 2; ++d) pr[d] = (y[2 + d] - 1) * st[d] + k[d] - x[2 + d] - pl[d];  // ceil_mode included
      alg = op == "MaxPool" ? dnnl::algorithm::pooling_max
            : a.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                  : dnnl::algorithm::pooling_avg_exclude_padding;
    }
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, px_md, py_md, st, k, pl, pr);
    dnnl::pooling_forward::primitive_desc pd(desc, oneDnnEngine());
    impl_ = pd.impl_info_str();
    if (!allow_ref && isReferenceImpl(impl_)) throw std::runtime_error("only oneDNN's reference pooling takes it");
    prim_ = dnnl::pooling_forward(pd);
    // A [N, C, 1, 1] side has the same bytes in both layouts: read or written as it is.
    x_mem_ = dnnl::memory(layoutFree(x, block) ? px_md : x_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(layoutFree(y, block) ? py_md : y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    if (px_md != x_md && !layoutFree(x, block)) {
      px_mem_ = dnnl::memory(px_md, oneDnnEngine(), DNNL_MEMORY_NONE);
      x_reorder_ = dnnl::reorder(x_mem_, px_mem_);
      x_bytes_ = (px_md.get_size() + 63) / 64 * 64;
    }
    if (py_md != y_md && !layoutFree(y, block)) {
      py_mem_ = dnnl::memory(py_md, oneDnnEngine(), DNNL_MEMORY_NONE);
      y_reorder_ = dnnl::reorder(py_mem_, y_mem_);
      y_bytes_ = py_md.get_size();
    }
  }
  std::string detail() const override {
    return "oneDNN " + impl_ + (reorders() ? ", " + std::to_string(reorders()) + " reorder" + (reorders() > 1 ? "s" : "") : "");
  }
  bool slowPath() const override { return isReferenceImpl(impl_); }
  int reorders() const override { return (x_bytes_ > 0) + (y_bytes_ > 0); }
  size_t workspaceBytes() const override { return x_bytes_ + y_bytes_; }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    x_mem_.set_data_handle(const_cast<void*>(in[0].data));
    y_mem_.set_data_handle(out[0].data);
    dnnl::memory src = x_mem_, dst = y_mem_;
    if (x_bytes_) {
      px_mem_.set_data_handle(ws);
      x_reorder_.execute(stream_, x_mem_, px_mem_);
      src = px_mem_;
    }
    if (y_bytes_) {
      py_mem_.set_data_handle(static_cast<char*>(ws) + x_bytes_);
      dst = py_mem_;
    }
    prim_.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    if (y_bytes_) y_reorder_.execute(stream_, py_mem_, y_mem_);
    stream_.wait();
    return Status::Ok();
  }

 private:
  dnnl::stream stream_;
  dnnl::primitive prim_;
  dnnl::memory x_mem_, y_mem_, px_mem_, py_mem_;
  dnnl::reorder x_reorder_, y_reorder_;
  size_t x_bytes_ = 0, y_bytes_ = 0;
  std::string impl_;
};

class OneDnnConcatKernel final : public Kernel {
 public:
  OneDnnConcatKernel(const ir::Graph& g, const ir::Node& node, const LayoutPlan* layout) : stream_(oneDnnEngine()) {
    std::vector<dnnl::memory::desc> mds;
    for (int t : node.inputs) {
      mds.push_back(actDesc(g.tensors[t].shape, layout && layout->isBlocked(t), layout));
      src_mems_.push_back(dnnl::memory(mds.back(), oneDnnEngine(), DNNL_MEMORY_NONE));
    }
    const auto y_md = actDesc(g.tensors[node.outputs[0]].shape, layout && layout->isBlocked(node.outputs[0]), layout);
    dnnl::concat::primitive_desc pd(y_md, 1, mds, oneDnnEngine());
    impl_ = pd.impl_info_str();
    prim_ = dnnl::concat(pd);
    y_mem_ = dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
  }
  // oneDNN's "ref:any" concat is one reorder primitive per input (its jit reorders) into
  // the output's slice, not reference arithmetic: ppocr_det's plain 24-channel inputs into
  // a 16-channel-blocked output at 27-30 GB/s. Not a slow path, so not marked as one.
  std::string detail() const override { return "oneDNN " + impl_ + (impl_.rfind("ref", 0) == 0 ? " (a reorder per input)" : ""); }
  bool slowPath() const override { return false; }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    std::unordered_map<int, dnnl::memory> args;
    for (size_t k = 0; k < in.size(); ++k) {
      src_mems_[k].set_data_handle(const_cast<void*>(in[k].data));
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = src_mems_[k];
    }
    y_mem_.set_data_handle(out[0].data);
    args[DNNL_ARG_DST] = y_mem_;
    prim_.execute(stream_, args);
    stream_.wait();
    return Status::Ok();
  }

 private:
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::vector<dnnl::memory> src_mems_;
  dnnl::memory y_mem_;
  std::string impl_;
};

}  // namespace

bool canRunOneDnnPoolOrConcat(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if (node.inputs.empty() || node.outputs.size() != 1 || !float4d(g.tensors[node.outputs[0]])) return false;
  for (int t : node.inputs) if (t < 0 || !float4d(g.tensors[t])) return false;
  if (op == "Concat") {
    const auto& a = node.attrs.get<AxisAttrs>();
    return (a.axis == 1 || a.axis == -3) && node.inputs.size() >= 2;
  }
  if (op == "GlobalAvgPool") return true;
  if (op != "MaxPool" && op != "AvgPool") return false;
  const auto& a = node.attrs.get<PoolAttrs>();
  for (int64_t d : a.dilations) if (d != 1) return false;  // dilated windows: the own kernel
  return !(op == "AvgPool" && a.ceil_mode && a.count_include_pad);
}

bool oneDnnPoolIsFast(const ir::Graph& g, const ir::Node& node, int block, bool channels_last) {
  if (std::string(node.op->name) == "Concat") return true;
  const LayoutPlan layout = probeLayout(g, block, channels_last, {node.inputs[0], node.outputs[0]});
  try {
    OneDnnPoolKernel probe(g, node, &layout, /*allow_ref=*/false);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnnPoolOrConcat(const ir::Graph& g, const ir::Node& node,
                                                             const LayoutPlan* layout, bool allow_ref) {
  try {
    if (std::string(node.op->name) == "Concat") return std::unique_ptr<Kernel>(new OneDnnConcatKernel(g, node, layout));
    return std::unique_ptr<Kernel>(new OneDnnPoolKernel(g, node, layout, allow_ref));
  } catch (const std::exception& e) {
    return makeError(StatusCode::kUnsupported, "oneDNN for ", node.name, ": ", e.what());
  }
}

}  // namespace gkrt::cpu

#else

namespace gkrt::cpu {
bool canRunOneDnnPoolOrConcat(const ir::Graph&, const ir::Node&) { return false; }
bool oneDnnPoolIsFast(const ir::Graph&, const ir::Node&, int, bool) { return false; }
StatusOr<std::unique_ptr<Kernel>> compileOneDnnPoolOrConcat(const ir::Graph&, const ir::Node&, const LayoutPlan*, bool) {
  return makeError(StatusCode::kUnsupported, "this gkrt was built without oneDNN (libdnnl-dev)");
}
}  // namespace gkrt::cpu

#endif
