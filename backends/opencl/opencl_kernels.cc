#include "backends/opencl/opencl_kernels.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "backends/opencl/library_kernels.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::opencl {
namespace {

cl_mem mem(const void* p) { return static_cast<cl_mem>(const_cast<void*>(p)); }

bool allFloat32(const ir::Graph& g, const ir::Node& node) {
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  for (int t : node.outputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  return true;
}
bool fitsInt(int64_t v) { return v >= 0 && v < INT_MAX; }
// MatMulAllReduce: one rank here (OpenClBackend declines it across ranks), so x @ w + bias.
bool isPatternMatMul(const ir::Node& node) {
  for (const char* op : {"MatMulBiasAdd", "MatMulAdd", "MatMulRelu", "MatMulGelu", "MatMulAllReduce"}) {
    if (std::strcmp(node.op->name, op) == 0) return true;
  }
  return false;
}

// Arguments in order, set at launch.
class ArgList {
 public:
  explicit ArgList(cl_kernel k) : k_(k) {}
  template <class T> ArgList& add(const T& v) {
    if (err_ == CL_SUCCESS) err_ = clSetKernelArg(k_, index_, sizeof(T), &v);
    ++index_;
    return *this;
  }
  ArgList& buffer(const void* p) { return add(mem(p)); }
  cl_int error() const { return err_; }

 private:
  cl_kernel k_;
  cl_uint index_ = 0;
  cl_int err_ = CL_SUCCESS;
};

class ClKernel : public Kernel {
 public:
  ClKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot) : dev_(std::move(dev)), slot_(std::move(slot)) {}

 protected:
  Status ready() const {
    if (!slot_->kernel) return makeError(StatusCode::kInternal, "opencl: kernel ", slot_->entry, " launched before the session's program was built");
    return Status::Ok();
  }
  Status enqueue(const ArgList& args, cl_uint dims, const size_t* global, const size_t* local) {
    RETURN_IF_ERROR(clCheck(args.error(), "setting the arguments of " + slot_->entry + " (" + slot_->what + ")"));
    for (cl_uint d = 0; d < dims; ++d) if (global[d] == 0) return Status::Ok();
    return clCheck(clEnqueueNDRangeKernel(dev_->queue, slot_->kernel, dims, nullptr, global, local, 0, nullptr,
                                          dev_->nextTimedEvent()),
                   "launching " + slot_->entry + " (" + slot_->what + ")");
  }
  // A 1-D grid for a grid-stride loop over `n` items, in work-groups of kElementwiseLocalSize.
  static constexpr size_t kElementwiseLocalSize = 256;
  static size_t gridFor(int64_t n) {
    const int64_t L = kElementwiseLocalSize;
    return static_cast<size_t>(std::min<int64_t>((n + L - 1) / L * L, int64_t(1) << 30));
  }

  std::shared_ptr<ClDevice> dev_;
  std::shared_ptr<KernelSlot> slot_;
};

class GeneratedKernel final : public ClKernel {
 public:
  GeneratedKernel(std::shared_ptr<ClDevice> dev, codegen::RenderedKernel k, std::shared_ptr<KernelSlot> slot, std::vector<cl_mem> extra)
      : ClKernel(std::move(dev), std::move(slot)), k_(std::move(k)), extra_(std::move(extra)) {}
  ~GeneratedKernel() override {
    for (cl_mem m : constants_) clReleaseMemObject(m);
  }

  Status uploadConstants() {
    for (const ir::Tensor* t : k_.constants) {
      cl_int err = CL_SUCCESS;
      const size_t bytes = std::max<size_t>(numElements(t->shape) * dtypeSize(t->dtype), 8);
      cl_mem m = clCreateBuffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                const_cast<uint8_t*>(t->constant->data), &err);
      RETURN_IF_ERROR(clCheck(err, "uploading constant '" + t->name + "'"));
      constants_.push_back(m);
    }
    return Status::Ok();
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    ArgList args(slot_->kernel);
    for (const MutableTensorView& v : out) args.buffer(v.data);
    for (const TensorView& v : in) args.buffer(v.data);
    for (cl_mem m : constants_) args.add(m);
    for (cl_mem m : extra_) args.add(m);
    if (!k_.reduce && !k_.gemm) {
      const size_t local = kElementwiseLocalSize, global = gridFor(k_.items);
      return enqueue(args, 1, &global, &local);
    }
    const size_t local = static_cast<size_t>(k_.local_size);
    // reduce: a grid-stride loop over rows; gemm: one work-group per output tile
    const size_t global = static_cast<size_t>(k_.gemm ? k_.items : std::min<int64_t>(k_.items, 65536)) * local;
    return enqueue(args, 1, &global, &local);
  }

 private:
  codegen::RenderedKernel k_;
  std::vector<cl_mem> constants_;
  std::vector<cl_mem> extra_;  // after the constants (Gather's fault record); not owned
};

// Reshape, ExpandDims, Squeeze, and AllReduce of one rank: the bytes move unchanged.
class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(std::shared_ptr<ClDevice> dev) : dev_(std::move(dev)) {}
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const size_t bytes = static_cast<size_t>(in[0].size()) * dtypeSize(in[0].dtype);
    if (bytes == 0 || in[0].data == out[0].data) return Status::Ok();
    return clCheck(clEnqueueCopyBuffer(dev_->queue, mem(in[0].data), mem(out[0].data), 0, 0, bytes, 0, nullptr, dev_->nextTimedEvent()),
                   "copying a reshaped tensor");
  }

 private:
  std::shared_ptr<ClDevice> dev_;
};

class MatMulKernel final : public ClKernel {
 public:
  MatMulKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot, const ir::Graph& g, const ir::Node& node)
      : ClKernel(std::move(dev), std::move(slot)) {
    const bool gemm = std::strcmp(node.op->name, "Gemm") == 0;
    bool ta = false, tb = false;
    if (gemm) {
      const auto& a = node.attrs.get<GemmAttrs>();
      ta = a.transpose_a, tb = a.transpose_b, alpha_ = a.alpha, beta_ = a.beta;
    } else if (node.op->attr_kind == AttrKind::kMatMul) {  // MatMulGelu carries GeluAttrs: no transposes
      const auto& a = node.attrs.get<MatMulAttrs>();
      ta = a.transpose_a, tb = a.transpose_b;
    }
    const Shape& sa = g.tensors[node.inputs[0]].shape;
    const Shape& sb = g.tensors[node.inputs[1]].shape;
    const Shape& sy = g.tensors[node.outputs[0]].shape;
    M_ = int(sy[sy.size() - 2]), N_ = int(sy[sy.size() - 1]);
    K_ = int(ta ? sa[sa.size() - 2] : sa[sa.size() - 1]);
    sam_ = ta ? 1 : K_, sak_ = ta ? M_ : 1, sbk_ = tb ? 1 : N_, sbn_ = tb ? K_ : 1;
    const Shape yb(sy.begin(), sy.end() - 2), ab(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    ops::forEachBroadcast<2>(yb, {&ab, &bb}, [&](int64_t, const std::array<int64_t, 2>& o) {
      offsets_.push_back(static_cast<int>(o[0] * M_ * K_));
      offsets_.push_back(static_cast<int>(o[1] * K_ * N_));
    });
    batches_ = offsets_.size() / 2;
    has_bias_ = gemm && node.inputs.size() > 2 && node.inputs[2] >= 0;
    if (has_bias_) {
      const Shape& c = g.tensors[node.inputs[2]].shape;
      const std::vector<int64_t> st = ops::broadcastStrides(c, Shape{M_, N_});
      sbm2_ = int(st[0]), sbn2_ = int(st[1]);
    }
    // The matmul pattern ops: (x, w, bias[N]?) or MatMulAdd's (x, w, residual, bias?).
    if (isPatternMatMul(node)) {
      const bool add = std::strcmp(node.op->name, "MatMulAdd") == 0;
      bias_input_ = add ? 3 : 2;
      has_bias_ = static_cast<int>(node.inputs.size()) > bias_input_ && node.inputs[bias_input_] >= 0;
      sbm2_ = 0, sbn2_ = 1;
      if (add) residual_input_ = 2;
      if (std::strcmp(node.op->name, "MatMulRelu") == 0) act_ = 1;
      if (std::strcmp(node.op->name, "MatMulGelu") == 0) {
        act_ = node.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone ? 2 : 3;
      }
    }
  }
  ~MatMulKernel() override {
    if (offs_) clReleaseMemObject(offs_);
  }

  Status upload() {
    cl_int err = CL_SUCCESS;
    offs_ = clCreateBuffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                           std::max<size_t>(offsets_.size(), 2) * sizeof(int), offsets_.data(), &err);
    return clCheck(err, "uploading batch offsets");
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    ArgList args(slot_->kernel);
    args.buffer(out[0].data).buffer(in[0].data).buffer(in[1].data).add(offs_);
    args.add(M_).add(N_).add(K_).add(sam_).add(sak_).add(sbk_).add(sbn_).add(alpha_);
    args.buffer(has_bias_ ? in[bias_input_].data : nullptr).add(int(has_bias_)).add(beta_).add(sbm2_).add(sbn2_);
    args.buffer(residual_input_ >= 0 ? in[residual_input_].data : nullptr).add(int(residual_input_ >= 0)).add(act_);
    const size_t T = kMatMulTile;
    const size_t global[3] = {(size_t(N_) + T - 1) / T * T, (size_t(M_) + T - 1) / T * T, batches_};
    const size_t local[3] = {T, T, 1};
    return enqueue(args, 3, global, local);
  }

 private:
  int M_ = 0, N_ = 0, K_ = 0, sam_ = 0, sak_ = 0, sbk_ = 0, sbn_ = 0, sbm2_ = 0, sbn2_ = 0;
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool has_bias_ = false;
  int bias_input_ = 2, residual_input_ = -1, act_ = 0;
  size_t batches_ = 0;
  std::vector<int> offsets_;
  cl_mem offs_ = nullptr;
};

class ConvKernel final : public ClKernel {
 public:
  ConvKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot, const ir::Graph& g, const ir::Node& node)
      : ClKernel(std::move(dev), std::move(slot)), a_(node.attrs.get<Conv2DAttrs>()) {
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const Shape& w = g.tensors[node.inputs[1]].shape;
    const Shape& y = g.tensors[node.outputs[0]].shape;
    dims_ = {int(x[0]), int(x[1]), int(x[2]), int(x[3]), int(y[1]), int(y[2]), int(y[3]), int(w[2]), int(w[3])};
    total_ = numElements(y);
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    const bool bias = in.size() > 2 && in[2].present();
    ArgList args(slot_->kernel);
    args.buffer(out[0].data).buffer(in[0].data).buffer(in[1].data).buffer(bias ? in[2].data : nullptr).add(int(bias));
    for (int d : dims_) args.add(d);
    args.add(int(a_.strides[0])).add(int(a_.strides[1])).add(int(a_.pads[0])).add(int(a_.pads[1]));
    args.add(int(a_.dilations[0])).add(int(a_.dilations[1])).add(int(a_.groups));
    const size_t global = gridFor(total_);
    return enqueue(args, 1, &global, nullptr);
  }

 private:
  Conv2DAttrs a_;
  std::vector<int> dims_;
  int64_t total_ = 0;
};

class PoolKernel final : public ClKernel {
 public:
  PoolKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot, const ir::Graph& g, const ir::Node& node)
      : ClKernel(std::move(dev), std::move(slot)), a_(node.attrs.get<PoolAttrs>()), max_(std::strcmp(node.op->name, "MaxPool") == 0) {
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const Shape& y = g.tensors[node.outputs[0]].shape;
    dims_ = {int(x[0] * x[1]), int(x[2]), int(x[3]), int(y[2]), int(y[3])};
    total_ = numElements(y);
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    ArgList args(slot_->kernel);
    args.buffer(out[0].data).buffer(in[0].data).add(int(max_)).add(int(a_.count_include_pad));
    for (int d : dims_) args.add(d);
    args.add(int(a_.kernel[0])).add(int(a_.kernel[1])).add(int(a_.strides[0])).add(int(a_.strides[1]));
    args.add(int(a_.pads[0])).add(int(a_.pads[1])).add(int(a_.pads[2])).add(int(a_.pads[3]));
    const size_t global = gridFor(total_);
    return enqueue(args, 1, &global, nullptr);
  }

 private:
  PoolAttrs a_;
  bool max_;
  std::vector<int> dims_;
  int64_t total_ = 0;
};

class SoftmaxKernel final : public ClKernel {
 public:
  SoftmaxKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot, const ir::Graph& g, const ir::Node& node)
      : ClKernel(std::move(dev), std::move(slot)), log_(std::strcmp(node.op->name, "LogSoftmax") == 0) {
    const Shape& s = g.tensors[node.inputs[0]].shape;
    int64_t axis = node.attrs.get<AxisAttrs>().axis;
    if (axis < 0) axis += static_cast<int64_t>(s.size());
    const ops::AxisSplit split = s.empty() ? ops::AxisSplit{1, 1, 1} : ops::splitAtAxis(s, axis);
    lanes_ = split.outer * split.inner, extent_ = int(split.extent), inner_ = int(std::max<int64_t>(split.inner, 1));
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    ArgList args(slot_->kernel);
    args.buffer(out[0].data).buffer(in[0].data).add(int(log_)).add(cl_long(lanes_)).add(extent_).add(inner_);
    const size_t global = gridFor(lanes_);
    return enqueue(args, 1, &global, nullptr);
  }

 private:
  bool log_;
  int64_t lanes_ = 0;
  int extent_ = 0, inner_ = 1;
};

// A norm over axes [axis, rank) of input 0 as rows of `cols` elements.
void normRows(const ir::Graph& g, const ir::Node& node, int* rows, int* cols) {
  const auto r = ops::normRowsOf(node, g.tensors[node.inputs[0]].shape);  // validated at shape inference
  *rows = r.ok() ? int(r->rows) : 0, *cols = r.ok() ? int(r->cols) : 0;
}

class LayerNormKernel final : public ClKernel {
 public:
  LayerNormKernel(std::shared_ptr<ClDevice> dev, std::shared_ptr<KernelSlot> slot, const ir::Graph& g, const ir::Node& node)
      : ClKernel(std::move(dev), std::move(slot)) {
    normRows(g, node, &rows_, &cols_);
    eps_ = node.attrs.get<NormAttrs>().epsilon;
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    RETURN_IF_ERROR(ready());
    const bool gamma = in.size() > 1 && in[1].present(), beta = in.size() > 2 && in[2].present();
    const bool mean = out.size() > 1 && out[1].data, var = out.size() > 2 && out[2].data;
    const int flags = (gamma ? 1 : 0) | (beta ? 2 : 0) | (mean ? 4 : 0) | (var ? 8 : 0);
    ArgList args(slot_->kernel);
    args.buffer(out[0].data).buffer(mean ? out[1].data : nullptr).buffer(var ? out[2].data : nullptr).buffer(in[0].data);
    args.buffer(gamma ? in[1].data : nullptr).buffer(beta ? in[2].data : nullptr).add(flags).add(rows_).add(cols_).add(eps_);
    const size_t local = kLayerNormLocalSize, global = static_cast<size_t>(std::min(rows_, 65536)) * local;
    return enqueue(args, 1, &global, &local);
  }

 private:
  int rows_ = 0, cols_ = 0;
  float eps_ = 1e-5f;
};

bool isOp(const ir::Node& node, std::initializer_list<const char*> names) {
  for (const char* n : names) if (std::strcmp(node.op->name, n) == 0) return true;
  return false;
}

}  // namespace

bool libraryRuns(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || node.subgraph) return false;
  if (node.op->op_class == OpClass::kReshape || isOp(node, {"AllReduce"})) {  // AllReduce of one rank: its input
    return node.inputs.size() == 1 && node.inputs[0] >= 0 && node.outputs.size() == 1 &&
           g.tensors[node.inputs[0]].dtype == g.tensors[node.outputs[0]].dtype;
  }
  if (!allFloat32(g, node)) return false;
  for (int t : node.outputs) if (t >= 0 && !fitsInt(numElements(g.tensors[t].shape))) return false;
  for (int t : node.inputs) if (t >= 0 && !fitsInt(numElements(g.tensors[t].shape))) return false;
  if (isPatternMatMul(node)) return g.tensors[node.outputs[0]].shape.size() >= 2 && node.inputs.size() >= 2;
  if (isOp(node, {"MatMul", "BatchMatMul", "Gemm"})) {
    if (g.tensors[node.outputs[0]].shape.size() < 2 || node.inputs.size() < 2) return false;
    if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const Shape& c = g.tensors[node.inputs[2]].shape;
      if (c.size() > 2 || g.tensors[node.outputs[0]].shape.size() != 2) return false;
    }
    return true;
  }
  if (isOp(node, {"Conv2D"})) {
    return g.tensors[node.inputs[0]].shape.size() == 4 && g.tensors[node.inputs[1]].shape.size() == 4 &&
           node.attrs.get<Conv2DAttrs>().groups > 0;
  }
  if (isOp(node, {"MaxPool", "AvgPool"})) return node.outputs.size() == 1 && g.tensors[node.inputs[0]].shape.size() == 4;
  if (isOp(node, {"Softmax", "LogSoftmax"})) return true;
  if (isOp(node, {"LayerNorm"})) {
    const Shape& s = g.tensors[node.inputs[0]].shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    int64_t axis = node.attrs.get<NormAttrs>().axis;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return false;
    int64_t cols = 1;
    for (int64_t d = axis; d < rank; ++d) cols *= s[d];
    for (size_t k = 1; k < 3 && k < node.inputs.size(); ++k) {
      if (node.inputs[k] >= 0 && numElements(g.tensors[node.inputs[k]].shape) != cols) return false;
    }
    return true;
  }
  return false;
}

StatusOr<std::unique_ptr<Kernel>> makeLibraryKernel(const std::shared_ptr<ClDevice>& dev, const ir::Graph& g,
                                                    const ir::Node& node, std::shared_ptr<KernelSlot> slot) {
  if (node.op->op_class == OpClass::kReshape || isOp(node, {"AllReduce"})) return std::unique_ptr<Kernel>(new CopyKernel(dev));
  if (isOp(node, {"MatMul", "BatchMatMul", "Gemm"}) || isPatternMatMul(node)) {
    slot->entry = "gk_matmul";
    auto k = std::make_unique<MatMulKernel>(dev, std::move(slot), g, node);
    RETURN_IF_ERROR(k->upload());
    return std::unique_ptr<Kernel>(std::move(k));
  }
  if (isOp(node, {"Conv2D"})) {
    slot->entry = "gk_conv2d";
    return std::unique_ptr<Kernel>(new ConvKernel(dev, std::move(slot), g, node));
  }
  if (isOp(node, {"MaxPool", "AvgPool"})) {
    slot->entry = "gk_pool";
    return std::unique_ptr<Kernel>(new PoolKernel(dev, std::move(slot), g, node));
  }
  if (isOp(node, {"Softmax", "LogSoftmax"})) {
    slot->entry = "gk_softmax";
    return std::unique_ptr<Kernel>(new SoftmaxKernel(dev, std::move(slot), g, node));
  }
  if (isOp(node, {"LayerNorm"})) {
    slot->entry = "gk_layernorm";
    return std::unique_ptr<Kernel>(new LayerNormKernel(dev, std::move(slot), g, node));
  }
  return makeError(StatusCode::kInternal, "opencl: no library kernel for ", node.op->name);
}

StatusOr<std::unique_ptr<Kernel>> makeGeneratedKernel(const std::shared_ptr<ClDevice>& dev, codegen::RenderedKernel k,
                                                      std::shared_ptr<KernelSlot> slot, std::vector<cl_mem> extra) {
  auto kernel = std::make_unique<GeneratedKernel>(dev, std::move(k), std::move(slot), std::move(extra));
  RETURN_IF_ERROR(kernel->uploadConstants());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace gkrt::opencl
