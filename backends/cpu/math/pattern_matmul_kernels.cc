// The matmul pattern ops on oneDNN: each is spelled as the GEMM epilogue cluster it
// stands for (a Fused node: BatchMatMul, then Add bias, Add residual, ReLU or GeLU) and
// handed to the planner that turns such clusters into one matmul with post-ops
// (onednn_kernels.cc), so both paths share one oneDNN set-up. MatMulSplit runs the
// product into the workspace and copies out its column blocks; MatMulAllReduce sums the
// product over the communicator's ranks, then adds the bias once.
#include <cstring>

#include "backends/backend.h"
#include "backends/cpu/isa/cpu_precision.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/reference/reference_backend.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

bool is(const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; }

int residualInput(const ir::Node& n) { return is(n, "MatMulAdd") ? 2 : -1; }
int biasInput(const ir::Node& n) { return is(n, "MatMulAdd") ? 3 : 2; }

// The cluster for `node`: its body reads the pattern node's non-constant inputs as body
// inputs (in order; `input_map` says which), its constants as body constants (so oneDNN
// packs the weights once). `with_bias` false leaves the bias out (MatMulAllReduce).
struct Lowered {
  ir::Node fused;
  std::vector<int> input_map;
};

Lowered lower(const ir::Graph& g, const ir::Node& node, bool with_bias) {
  Lowered l;
  auto body = std::make_shared<ir::Graph>();
  auto take = [&](int k) {
    ir::Tensor t = g.tensors[node.inputs[k]];
    t.value.reset();
    const int id = body->addTensor(t);
    if (!t.isConstant()) {
      body->inputs.push_back(id);
      l.input_map.push_back(k);
    }
    return id;
  };
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  const bool split = is(node, "MatMulSplit");
  Shape product = y.shape;
  if (split) {
    int64_t n = 0;
    for (int t : node.outputs) n += g.tensors[t].shape.back();
    product.back() = n;
  }
  auto step = [&](const char* op, Attrs attrs, std::vector<int> in) {
    const int out = body->addTensor(ir::Tensor{std::string(op) + "_" + std::to_string(body->nodes.size()), y.dtype, product});
    body->nodes.push_back(ir::Node{op, findOp(op), std::move(attrs), std::move(in), {out}});
    return out;
  };
  const MatMulAttrs flags = node.op->attr_kind == AttrKind::kMatMul ? node.attrs.get<MatMulAttrs>() : MatMulAttrs{};
  int chain = step("BatchMatMul", Attrs(flags), {take(0), take(1)});
  const int bias = biasInput(node), res = residualInput(node);
  if (with_bias && static_cast<int>(node.inputs.size()) > bias && node.inputs[bias] >= 0) {
    chain = step("Add", Attrs(), {chain, take(bias)});
  }
  if (res >= 0) chain = step("Add", Attrs(), {chain, take(res)});
  if (is(node, "MatMulRelu")) chain = step("ReLU", Attrs(), {chain});
  if (is(node, "MatMulGelu")) chain = step("GeLU", node.attrs, {chain});
  body->outputs = {chain};
  l.fused.name = node.name + "/onednn";
  l.fused.op = findOp("Fused");
  l.fused.subgraph = body;
  return l;
}

class LoweredMatMul final : public Kernel {
 public:
  LoweredMatMul(const ir::Graph& g, const ir::Node& node, Lowered l, std::unique_ptr<Kernel> inner,
                std::shared_ptr<Communicator> comm)
      : l_(std::move(l)), inner_(std::move(inner)), comm_(std::move(comm)) {
    if (is(node, "MatMulSplit")) {
      for (int t : node.outputs) {
        widths_.push_back(g.tensors[t].shape.back());
        columns_ += widths_.back();
      }
      rows_ = numElements(g.tensors[node.outputs[0]].shape) / widths_[0];
    }
    if (is(node, "MatMulAllReduce")) {
      all_reduce_ = true;
      if (node.inputs.size() > 2) bias_input_ = 2;
    }
  }
  size_t workspaceBytes() const override {
    return product_bytes() + inner_->workspaceBytes();
  }
  std::string detail() const override { return inner_->detail(); }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    std::vector<TensorView> mapped;
    for (int k : l_.input_map) mapped.push_back(in[k]);
    if (widths_.empty()) {
      RETURN_IF_ERROR(inner_->launch(mapped, out, ws));
    } else {
      float* product = static_cast<float*>(ws);
      MutableTensorView whole{out[0].dtype, {rows_, columns_}, product};
      RETURN_IF_ERROR(inner_->launch(mapped, {whole}, static_cast<char*>(ws) + product_bytes()));
      for (int64_t r = 0; r < rows_; ++r) {
        int64_t c0 = 0;
        for (size_t p = 0; p < widths_.size(); ++p) {
          std::memcpy(static_cast<float*>(out[p].data) + r * widths_[p], product + r * columns_ + c0, widths_[p] * sizeof(float));
          c0 += widths_[p];
        }
      }
    }
    if (!all_reduce_) return Status::Ok();
    float* y = static_cast<float*>(out[0].data);
    const int64_t n = numElements(out[0].shape);
    if (comm_) RETURN_IF_ERROR(comm_->allReduceSum(y, static_cast<size_t>(n)));
    if (bias_input_ >= 0) {
      const float* b = in[bias_input_].as<float>();
      const int64_t cols = out[0].shape.back();
      for (int64_t i = 0; i < n; ++i) y[i] += b[i % cols];
    }
    return Status::Ok();
  }

 private:
  size_t product_bytes() const { return widths_.empty() ? 0 : ((rows_ * columns_ * sizeof(float) + 63) / 64) * 64; }

  Lowered l_;  // the cluster the inner kernel's plan points into: outlives it
  std::unique_ptr<Kernel> inner_;
  std::shared_ptr<Communicator> comm_;
  std::vector<int64_t> widths_;
  int64_t rows_ = 0, columns_ = 0;
  bool all_reduce_ = false;
  int bias_input_ = -1;
};

}  // namespace

bool canRunPatternMatMul(const ir::Graph& g, const ir::Node& node) {
  static const char* kOps[] = {"MatMulBiasAdd", "MatMulAdd", "MatMulRelu", "MatMulGelu", "MatMulSplit", "MatMulAllReduce"};
  bool known = false;
  for (const char* op : kOps) known = known || is(node, op);
  if (!known) return false;
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  for (int t : node.outputs) if (!isStatic(g.tensors[t].shape)) return false;
  return true;
}

// oneDNN where the planner takes the cluster; the reference kernel otherwise (builds
// without oneDNN, shapes it declines) — except AllReduce, which must reach the ranks.
StatusOr<std::unique_ptr<Kernel>> compilePatternMatMul(const ir::Graph& g, const ir::Node& node,
                                                       const BackendOptions& options, ThreadPool& pool) {
  const bool all_reduce = is(node, "MatMulAllReduce");
  Lowered l = lower(g, node, !all_reduce);
  if (canRunOneDnn(g, l.fused)) {
    auto inner = compileOneDnn(g, l.fused, cpuUsesBf16(options), &pool);  // --precision bf16 reaches the fused GEMMs too
    if (inner.ok()) {
      std::unique_ptr<Kernel> inner_kernel = std::move(*inner);
      return std::unique_ptr<Kernel>(new LoweredMatMul(g, node, std::move(l), std::move(inner_kernel), options.communicator));
    }
  }
  if (all_reduce && options.communicator) {
    return makeError(StatusCode::kUnsupported, "cpu: ", node.name,
                     " (MatMulAllReduce) needs oneDNN for its product in a tensor-parallel run; disable the "
                     "MatMulAllReduce pass or build with libdnnl-dev");
  }
  return makeReferenceKernel(node);
}

}  // namespace gkrt::cpu
