#include "backends/reference/reference_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

class NodeReferenceKernel final : public Kernel {
 public:
  explicit NodeReferenceKernel(const ir::Node& node) : node_(node) {}
  Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs,
                void*) override {
    return node_.op->reference(KernelContext{node_, inputs, outputs});
  }
  // Reshape-class ops are a copy of the same bytes: in place they copy nothing.
  int inPlaceInput() const override { return node_.op->op_class == OpClass::kReshape ? 0 : -1; }

 private:
  const ir::Node& node_;
};

// AllReduce and MatMulAllReduce across ranks: the op's own kernel (a copy; the product
// without its bias), the sum over the communicator, then the bias once.
class CollectiveReferenceKernel final : public Kernel {
 public:
  CollectiveReferenceKernel(const ir::Node& node, std::shared_ptr<Communicator> comm) : node_(node), comm_(std::move(comm)) {
    if (node_.inputs.size() > 2) node_.inputs.resize(2);  // MatMulAllReduce's bias: after the sum
    product_.reserve(2);
  }
  Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs, void*) override {
    product_.assign(inputs.begin(), inputs.begin() + std::min<size_t>(inputs.size(), 2));  // its capacity kept: no allocation after the first run
    RETURN_IF_ERROR(node_.op->reference(KernelContext{node_, product_, outputs}));
    float* y = static_cast<float*>(outputs[0].data);
    const size_t n = static_cast<size_t>(numElements(outputs[0].shape));
    RETURN_IF_ERROR(comm_->allReduceSum(y, n));
    if (inputs.size() > 2 && inputs[2].data) {
      const float* b = static_cast<const float*>(inputs[2].data);
      const size_t cols = static_cast<size_t>(inputs[2].shape[0]);
      for (size_t i = 0; i < n; ++i) y[i] += b[i % cols];
    }
    return Status::Ok();
  }

 private:
  ir::Node node_;
  std::shared_ptr<Communicator> comm_;
  std::vector<TensorView> product_;  // x and w of a launch
};

bool collective(const ir::Node& node) {
  return node.op && (std::strcmp(node.op->name, "AllReduce") == 0 || std::strcmp(node.op->name, "MatMulAllReduce") == 0);
}

}  // namespace

std::unique_ptr<Kernel> makeReferenceKernel(const ir::Node& node) { return std::make_unique<NodeReferenceKernel>(node); }

bool ReferenceBackend::supports(const ir::Graph&, const ir::Node& node) const { return node.op && node.op->reference; }

StatusOr<std::unique_ptr<Kernel>> ReferenceBackend::compile(const ir::Graph& g, const ir::Node& node) {
  if (comm_ && comm_->size() > 1 && collective(node)) {
    if (g.tensors[size_t(node.outputs[0])].dtype != DType::kFloat32) {
      return makeError(StatusCode::kUnsupported, "reference: ", node.op->name, " '", node.name, "' across ranks sums float32 only");
    }
    return std::unique_ptr<Kernel>(new CollectiveReferenceKernel(node, comm_));
  }
  return makeReferenceKernel(node);
}

}  // namespace gkrt
