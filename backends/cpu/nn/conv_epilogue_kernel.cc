#include "backends/cpu/nn/conv_epilogue_kernel.h"

#include <string>

#include "backends/conv_epilogue.h"
#include "backends/cpu/fused/fused_elementwise.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

class ConvEpilogueKernel final : public Kernel {
 public:
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    conv_in_.clear();
    for (const Operand& o : conv_operands_) conv_in_.push_back(o.input >= 0 ? in[o.input] : o.constant);
    RETURN_IF_ERROR(conv_->launch(conv_in_, out, ws));
    rest_in_.assign(in.begin(), in.end());
    rest_in_.push_back(TensorView{out[0].dtype, out[0].shape, out[0].data});
    return rest_->launch(rest_in_, out, ws);
  }
  size_t workspaceBytes() const override { return std::max(conv_->workspaceBytes(), rest_->workspaceBytes()); }
  std::string detail() const override {
    const std::string head = conv_->detail();
    return (head.empty() ? "convolution" : head) + ", then its epilogue as one elementwise loop";
  }
  int reorders() const override { return conv_->reorders(); }
  bool slowPath() const override { return conv_->slowPath(); }

  struct Operand {
    int input = -1;
    TensorView constant;
  };
  std::unique_ptr<Kernel> conv_, rest_;
  std::vector<Operand> conv_operands_;
  std::shared_ptr<ir::Graph> rest_body_;
  ir::Node rest_node_;
  std::vector<TensorView> conv_in_, rest_in_;  // reserved at compile
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> compileConvEpilogue(
    const ir::Node& node, ThreadPool& pool,
    const std::function<StatusOr<std::unique_ptr<Kernel>>(const ir::Graph&, const ir::Node&)>& compile_node) {
  ASSIGN_OR_RETURN(ConvEpilogueSplit split, splitConvEpilogue(node));
  auto k = std::make_unique<ConvEpilogueKernel>();
  for (const ConvEpilogueSplit::Operand& o : split.conv_operands) {
    ConvEpilogueKernel::Operand v;
    v.input = o.input;
    if (o.constant) v.constant = TensorView{o.constant->dtype, o.constant->shape, o.constant->constant->data};
    k->conv_operands_.push_back(v);
  }
  ASSIGN_OR_RETURN(k->conv_, compile_node(*split.body, *split.conv));
  k->rest_body_ = split.rest_body;
  k->rest_node_ = split.rest;
  auto rest = compileElementwise(*split.body, k->rest_node_, pool);
  if (!rest.ok()) {
    return makeError(StatusCode::kUnsupported, "cpu: the epilogue of ", node.name, " is not one elementwise loop");
  }
  k->rest_ = std::move(rest).value();
  k->conv_in_.reserve(split.conv->inputs.size());
  k->rest_in_.reserve(split.body->inputs.size() + 1);
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::cpu
