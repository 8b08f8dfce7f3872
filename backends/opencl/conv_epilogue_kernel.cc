#include "backends/opencl/conv_epilogue_kernel.h"

#include <algorithm>
#include <vector>

namespace gkrt::opencl {
namespace {

class ConvEpilogueKernel final : public Kernel {
 public:
  ConvEpilogueKernel(std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest) : conv_(std::move(conv)), rest_(std::move(rest)) {}
  ~ConvEpilogueKernel() override {
    for (cl_mem m : owned_) clReleaseMemObject(m);
  }

  // Operand i of the convolution: the node's input `input`, or a buffer of ours.
  Status addOperand(const std::shared_ptr<ClDevice>& dev, const ConvEpilogueSplit::Operand& o) {
    Operand v;
    v.input = o.input;
    if (o.constant) {
      const ir::Tensor& t = *o.constant;
      cl_int err = CL_SUCCESS;
      const size_t bytes = std::max<size_t>(numElements(t.shape) * dtypeSize(t.dtype), 8);
      cl_mem m = clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, const_cast<uint8_t*>(t.constant->data), &err);
      RETURN_IF_ERROR(clCheck(err, "uploading constant '" + t.name + "'"));
      owned_.push_back(m);
      v.buffer = TensorView{t.dtype, t.shape, m};
    }
    operands_.push_back(v);
    return Status::Ok();
  }

  std::string detail() const override { return "Conv2D, then its epilogue as one generated kernel"; }
  size_t workspaceBytes() const override { return std::max(conv_->workspaceBytes(), rest_->workspaceBytes()); }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    conv_in_.clear();
    for (const Operand& o : operands_) conv_in_.push_back(o.input >= 0 ? in[static_cast<size_t>(o.input)] : o.buffer);
    RETURN_IF_ERROR(conv_->launch(conv_in_, out, workspace));
    rest_in_.assign(in.begin(), in.end());
    rest_in_.push_back(TensorView{out[0].dtype, out[0].shape, out[0].data});
    return rest_->launch(rest_in_, out, workspace);
  }

 private:
  struct Operand {
    int input = -1;
    TensorView buffer;  // data: a cl_mem
  };
  std::unique_ptr<Kernel> conv_, rest_;
  std::vector<Operand> operands_;
  std::vector<cl_mem> owned_;
  std::vector<TensorView> conv_in_, rest_in_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> makeConvEpilogueKernel(const std::shared_ptr<ClDevice>& dev, const ConvEpilogueSplit& split,
                                                         std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> rest) {
  auto k = std::make_unique<ConvEpilogueKernel>(std::move(conv), std::move(rest));
  for (const ConvEpilogueSplit::Operand& o : split.conv_operands) RETURN_IF_ERROR(k->addOperand(dev, o));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::opencl
