#include "runtime/control_flow_kernels.h"

#include "runtime/ir/control_flow.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

size_t bytesOf(const Shape& s, DType t) { return static_cast<size_t>(numElements(s)) * dtypeSize(t); }

class ControlFlowKernel final : public Kernel {
 public:
  ControlFlowKernel(ir::Node node, std::vector<std::unique_ptr<Session>> children, ir::ControlFlowFrame frame)
      : node_(std::move(node)), children_(std::move(children)), frame_(std::move(frame)) {
    run_child_ = [this](size_t which, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out) {
      Session& child = *children_[which];
      for (size_t k = 0; k < in.size(); ++k) {
        RETURN_IF_ERROR(child.setInputData(k, in[k].data, bytesOf(in[k].shape, in[k].dtype)));
      }
      RETURN_IF_ERROR(child.run());
      for (size_t k = 0; k < out.size(); ++k) {
        RETURN_IF_ERROR(child.copyOutputData(k, out[k].data, bytesOf(out[k].shape, out[k].dtype)));
      }
      return Status::Ok();
    };
  }

  Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs, void*) override {
    return ir::runControlFlow(node_, inputs, outputs, run_child_, frame_);
  }

 private:
  ir::Node node_;
  std::vector<std::unique_ptr<Session>> children_;
  ir::ControlFlowFrame frame_;
  ir::SubgraphRunner run_child_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> compileControlFlowKernel(const ir::Graph& graph, const ir::Node& node,
                                                           const SessionOptions& options, size_t* buffer_bytes) {
  std::vector<std::unique_ptr<Session>> children;
  for (size_t k = 0; k < node.subgraphs.size(); ++k) {
    if (static_cast<int64_t>(k) == ir::unbuiltBranch(node)) {  // a placeholder: runControlFlow never runs it
      children.push_back(nullptr);
      continue;
    }
    const char* which = node.subgraphs.size() == 2 ? (k == 0 ? "then branch" : "else branch") : "body";
    auto child = Session::create(*node.subgraphs[k], options);
    if (!child.ok()) return child.status().withContext(std::string("compiling the ") + which);
    children.push_back(std::move(child).value());
  }
  std::vector<TensorView> inputs;
  std::vector<MutableTensorView> outputs;
  for (int t : node.inputs) {
    if (t < 0) inputs.push_back({});
    else inputs.push_back({graph.tensors[size_t(t)].dtype, graph.tensors[size_t(t)].shape, nullptr});
  }
  for (int t : node.outputs) outputs.push_back({graph.tensors[size_t(t)].dtype, graph.tensors[size_t(t)].shape, nullptr});
  ASSIGN_OR_RETURN(ir::ControlFlowFrame frame, ir::ControlFlowFrame::prepare(node, inputs, outputs));
  if (buffer_bytes) *buffer_bytes = frame.bufferBytes();
  return std::unique_ptr<Kernel>(new ControlFlowKernel(node, std::move(children), std::move(frame)));
}

}  // namespace gkrt
