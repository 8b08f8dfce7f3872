#include "backends/cpu/nn/conv_epilogue_kernel.h"

#include <string>

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

bool isConvEpilogue(const ir::Node& node) {
  return node.subgraph && node.subgraph->nodes.size() > 1 && std::string(node.subgraph->nodes[0].op->name) == "Conv2D" &&
         node.outputs.size() == 1;
}

StatusOr<std::unique_ptr<Kernel>> compileConvEpilogue(
    const ir::Node& node, ThreadPool& pool,
    const std::function<StatusOr<std::unique_ptr<Kernel>>(const ir::Graph&, const ir::Node&)>& compile_node) {
  const ir::Graph& body = *node.subgraph;
  const ir::Node& conv = body.nodes[0];
  auto k = std::make_unique<ConvEpilogueKernel>();
  for (int t : conv.inputs) {
    ConvEpilogueKernel::Operand o;
    if (t >= 0) {
      for (size_t i = 0; i < body.inputs.size(); ++i) if (body.inputs[i] == t) o.input = int(i);
      if (o.input < 0) {
        if (!body.tensors[t].isConstant()) {
          return makeError(StatusCode::kInternal, "cpu: ", node.name, ": the convolution reads a value of its own chain");
        }
        o.constant = TensorView{body.tensors[t].dtype, body.tensors[t].shape, body.tensors[t].constant->data};
      }
    }
    k->conv_operands_.push_back(o);
  }
  ASSIGN_OR_RETURN(k->conv_, compile_node(body, conv));
  // The rest: the body without its convolution, whose output becomes the last input.
  k->rest_body_ = std::make_shared<ir::Graph>(body);
  k->rest_body_->nodes.erase(k->rest_body_->nodes.begin());
  k->rest_body_->inputs.push_back(conv.outputs[0]);
  k->rest_node_ = node;
  k->rest_node_.subgraph = k->rest_body_;
  auto rest = compileElementwise(body, k->rest_node_, pool);
  if (!rest.ok()) {
    return makeError(StatusCode::kUnsupported, "cpu: the epilogue of ", node.name, " is not one elementwise loop");
  }
  k->rest_ = std::move(rest).value();
  k->conv_in_.reserve(conv.inputs.size());
  k->rest_in_.reserve(body.inputs.size() + 1);
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::cpu
