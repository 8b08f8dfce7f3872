#include "backends/cuda/conv_epilogue_kernel.h"

#include <algorithm>
#include <vector>

namespace gkrt::cuda {
namespace {

class ConvEpilogueKernel final : public Kernel {
 public:
  ConvEpilogueKernel(std::shared_ptr<CudaStream> s, std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest)
      : s_(std::move(s)), conv_(std::move(conv)), rest_(std::move(rest)) {}
  ~ConvEpilogueKernel() override {
    for (CUdeviceptr p : owned_) s_->dev->cu->memFree(p);
  }

  // Operand i of the convolution: the node's input `input`, or device memory of ours.
  struct Operand {
    int input = -1;
    TensorView device;
  };
  Status addOperand(int input, const ir::Tensor* constant) {
    Operand o;
    o.input = input;
    if (constant) {
      const size_t bytes = static_cast<size_t>(numElements(constant->shape)) * dtypeSize(constant->dtype);
      ASSIGN_OR_RETURN(o.device.data, upload(constant->constant->data, bytes, "constant '" + constant->name + "'"));
      o.device.dtype = constant->dtype;
      o.device.shape = constant->shape;
    }
    operands_.push_back(o);
    return Status::Ok();
  }
  Status addZeros(int channels) {
    const std::vector<float> zeros(static_cast<size_t>(channels), 0.0f);
    Operand o;
    ASSIGN_OR_RETURN(o.device.data, upload(zeros.data(), zeros.size() * sizeof(float), "a zero bias"));
    o.device.dtype = DType::kFloat32;
    o.device.shape = {channels};
    operands_.push_back(o);
    return Status::Ok();
  }
  size_t operandCount() const { return operands_.size(); }
  Status synchronize() { return check(*s_->dev->cu, s_->dev->cu->streamSynchronize(s_->stream), "uploading a convolution's weights"); }

  size_t workspaceBytes() const override { return conv_->workspaceBytes(); }
  std::string detail() const override { return conv_->detail() + (rest_ ? " + " + rest_->detail() + " over its output" : ""); }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    conv_in_.clear();
    for (const Operand& o : operands_) conv_in_.push_back(o.input >= 0 ? in[static_cast<size_t>(o.input)] : o.device);
    RETURN_IF_ERROR(conv_->launch(conv_in_, out, workspace));
    if (!rest_) return Status::Ok();
    rest_in_.assign(in.begin(), in.end());
    rest_in_.push_back(TensorView{out[0].dtype, out[0].shape, out[0].data});
    return rest_->launch(rest_in_, out, nullptr);
  }

 private:
  StatusOr<const void*> upload(const void* host, size_t bytes, const std::string& what) {
    const Driver& cu = *s_->dev->cu;
    CUdeviceptr d = 0;
    RETURN_IF_ERROR(check(cu, cu.memAlloc(&d, std::max<size_t>(bytes, 8)), "allocating " + what));
    owned_.push_back(d);
    if (bytes) RETURN_IF_ERROR(check(cu, cu.memcpyHtoDAsync(d, host, bytes, s_->stream), "uploading " + what));
    return reinterpret_cast<const void*>(d);
  }

  std::shared_ptr<CudaStream> s_;
  std::unique_ptr<Kernel> conv_, rest_;
  std::vector<Operand> operands_;
  std::vector<CUdeviceptr> owned_;
  std::vector<TensorView> conv_in_, rest_in_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> makeConvEpilogueKernel(std::shared_ptr<CudaStream> stream, const ConvEpilogueSplit& split,
                                                         std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest,
                                                         int zero_bias_channels, int residual_input) {
  auto k = std::make_unique<ConvEpilogueKernel>(std::move(stream), std::move(conv), std::move(rest));
  for (size_t i = 0; i < split.conv_operands.size(); ++i) {
    const ConvEpilogueSplit::Operand& o = split.conv_operands[i];
    if (i == 2 && o.input < 0 && !o.constant && zero_bias_channels > 0) {
      RETURN_IF_ERROR(k->addZeros(zero_bias_channels));
    } else {
      RETURN_IF_ERROR(k->addOperand(o.input, o.constant));
    }
  }
  if (split.conv_operands.size() == 2 && zero_bias_channels > 0) RETURN_IF_ERROR(k->addZeros(zero_bias_channels));
  if (residual_input >= 0) {
    while (k->operandCount() < 3) RETURN_IF_ERROR(k->addOperand(-1, nullptr));
    RETURN_IF_ERROR(k->addOperand(residual_input, nullptr));
  }
  RETURN_IF_ERROR(k->synchronize());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::cuda
