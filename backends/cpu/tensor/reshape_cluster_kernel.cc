#include "backends/cpu/tensor/reshape_cluster_kernel.h"

#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

class ReshapeClusterKernel final : public Kernel {
 public:
  ReshapeClusterKernel(DType from, DType to, int64_t n) : from_(from), to_(to), n_(n) {}
  std::string detail() const override { return from_ == to_ ? "copy" : "cast copy"; }
  // Same bytes in and out: the output takes a dying input's bytes and nothing moves.
  int inPlaceInput() const override { return from_ == to_ ? 0 : -1; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    if (from_ == to_) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, size_t(n_) * dtypeSize(from_));
      return Status::Ok();
    }
    if (from_ == DType::kInt64 && to_ == DType::kFloat32) {
      const int64_t* x = in[0].as<int64_t>();
      float* y = out[0].as<float>();
      for (int64_t i = 0; i < n_; ++i) y[i] = static_cast<float>(x[i]);
      return Status::Ok();
    }
    for (int64_t i = 0; i < n_; ++i) ops::storeF(out[0].data, to_, i, ops::loadF(in[0].data, from_, i));
    return Status::Ok();
  }

 private:
  DType from_, to_;
  int64_t n_;
};

}  // namespace

bool canRunReshapeCluster(const ir::Graph& g, const ir::Node& node) {
  if (!node.subgraph && node.op && node.op->op_class == OpClass::kReshape && node.inputs.size() == 1 &&
      node.outputs.size() == 1 && node.inputs[0] >= 0) {  // one reshape op, unfused
    const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
    return isStatic(x.shape) && x.dtype == y.dtype && numElements(x.shape) == numElements(y.shape);
  }
  if (!node.subgraph || node.inputs.size() != 1 || node.outputs.size() != 1 || node.inputs[0] < 0) return false;
  const ir::Graph& body = *node.subgraph;
  int casts = 0;
  int t = body.inputs.empty() ? -1 : body.inputs[0];
  for (const ir::Node& n : body.nodes) {  // one chain, input to output
    if (n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] != t) return false;
    const bool cast = std::strcmp(n.op->name, "Cast") == 0;
    if (!cast && n.op->op_class != OpClass::kReshape) return false;
    casts += cast;
    t = n.outputs[0];
  }
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  if (casts > 1 || t < 0 || !isStatic(x.shape) || numElements(x.shape) != numElements(y.shape)) return false;
  // a Cast from int64/int32 to float32 only (static_cast, as the Cast kernel converts them)
  if (casts && ((x.dtype != DType::kInt64 && x.dtype != DType::kInt32) || y.dtype != DType::kFloat32)) return false;
  return casts || x.dtype == y.dtype;
}

std::unique_ptr<Kernel> compileReshapeCluster(const ir::Graph& g, const ir::Node& node) {
  const ir::Tensor &x = g.tensors[size_t(node.inputs[0])], &y = g.tensors[size_t(node.outputs[0])];
  return std::make_unique<ReshapeClusterKernel>(x.dtype, y.dtype, numElements(x.shape));
}

}  // namespace gkrt::cpu
