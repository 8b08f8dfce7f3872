#include "runtime/device_fallback.h"

#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

class HostFallbackKernel final : public Kernel {
 public:
  HostFallbackKernel(Backend& device, std::unique_ptr<Kernel> host, const ir::Graph& g, const ir::Node& node)
      : device_(device), host_(std::move(host)), workspace_(host_->workspaceBytes()), updates_(node.op ? node.op->updates_inputs : 0) {
    auto bytes = [&](int t) { return static_cast<size_t>(numElements(g.tensors[t].shape)) * dtypeSize(g.tensors[t].dtype); };
    for (int t : node.inputs) {
      Input in;
      if (t >= 0) {
        const ir::Tensor& tensor = g.tensors[t];
        in.view = {tensor.dtype, tensor.shape, nullptr};
        if (tensor.isConstant()) {
          in.view.data = tensor.constant->data;
        } else {
          in.staging.resize(std::max<size_t>(bytes(t), 1));
          in.view.data = in.staging.data();
          in.copy = bytes(t);
        }
      }
      inputs_.push_back(std::move(in));
    }
    for (int t : node.outputs) {
      staging_out_.emplace_back(std::max<size_t>(bytes(t), 1));
      out_views_.push_back({g.tensors[t].dtype, g.tensors[t].shape, staging_out_.back().data()});
      out_bytes_.push_back(bytes(t));
    }
    for (const Input& in : inputs_) in_views_.push_back(in.view);
  }

  std::string detail() const override { return host_->detail(); }
  int reorders() const override { return host_->reorders(); }
  bool slowPath() const override { return host_->slowPath(); }

  Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs, void*) override {
    for (size_t k = 0; k < inputs_.size(); ++k) {
      if (inputs_[k].copy) RETURN_IF_ERROR(device_.copyToHost(inputs_[k].staging.data(), inputs[k].data, inputs_[k].copy));
    }
    RETURN_IF_ERROR(host_->launch(in_views_, out_views_, workspace_.empty() ? nullptr : workspace_.data()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (outputs[k].data) RETURN_IF_ERROR(device_.copyToDevice(outputs[k].data, out_views_[k].data, out_bytes_[k]));
    }
    for (size_t k = 0; k < inputs_.size(); ++k) {  // inputs the op updates in place go back too
      if ((updates_ >> k & 1u) && inputs_[k].copy) {
        RETURN_IF_ERROR(device_.copyToDevice(const_cast<void*>(inputs[k].data), inputs_[k].staging.data(), inputs_[k].copy));
      }
    }
    return Status::Ok();
  }

 private:
  struct Input {
    TensorView view;
    std::vector<unsigned char> staging;
    size_t copy = 0;  // bytes read back per launch; 0 for constants and absent inputs
  };
  Backend& device_;
  std::unique_ptr<Kernel> host_;
  std::vector<unsigned char> workspace_;
  uint32_t updates_ = 0;
  std::vector<Input> inputs_;
  std::vector<TensorView> in_views_;
  std::vector<std::vector<unsigned char>> staging_out_;
  std::vector<MutableTensorView> out_views_;
  std::vector<size_t> out_bytes_;
};

}  // namespace

std::unique_ptr<Kernel> makeHostFallbackKernel(Backend& device, std::unique_ptr<Kernel> host, const ir::Graph& g,
                                               const ir::Node& node) {
  return std::make_unique<HostFallbackKernel>(device, std::move(host), g, node);
}

}  // namespace gkrt
