#include "backends/reference/reference_backend.h"

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

}  // namespace

std::unique_ptr<Kernel> makeReferenceKernel(const ir::Node& node) { return std::make_unique<NodeReferenceKernel>(node); }

bool ReferenceBackend::supports(const ir::Graph&, const ir::Node& node) const { return node.op && node.op->reference; }

StatusOr<std::unique_ptr<Kernel>> ReferenceBackend::compile(const ir::Graph&, const ir::Node& node) {
  return makeReferenceKernel(node);
}

}  // namespace gkrt
