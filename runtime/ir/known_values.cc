#include "runtime/ir/known_values.h"

#include <string_view>

#include "runtime/ir/op_def.h"

namespace gkrt::ir {

bool isRandomOp(const OpDef& op) {
  const std::string_view name = op.name;
  return name == "Dropout" || name == "StandardNormal" || name == "UniformReal";
}

Status computeKnownValues(const Graph& g, const Node& n, const std::vector<DType>& dtypes,
                          const std::vector<Shape>& shapes, std::vector<std::shared_ptr<const ConstData>>* values) {
  values->assign(n.outputs.size(), nullptr);
  // Random ops are not values; fused and control-flow nodes are never shape arithmetic.
  if (!n.op->reference || n.subgraph || !n.subgraphs.empty() || isRandomOp(*n.op)) {
    return Status::Ok();
  }
  if (shapes.size() < n.outputs.size()) return Status::Ok();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!isStatic(shapes[k]) || numElements(shapes[k]) > kKnownValueMaxElements) return Status::Ok();
  }
  std::vector<TensorView> inputs(n.inputs.size());
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] < 0) continue;
    const Tensor& t = g.tensors[n.inputs[k]];
    const ConstData* data = t.knownData();
    if (!isStatic(t.shape)) return Status::Ok();
    if (!data && !n.op->reads_only_shapes) return Status::Ok();
    inputs[k] = {t.dtype, t.shape, data ? static_cast<const void*>(data->data) : nullptr};
  }
  // An op reading only shapes still gets a non-null pointer per present input.
  static const uint64_t kNoData = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] >= 0 && !inputs[k].data) inputs[k].data = &kNoData;
  }
  std::vector<std::shared_ptr<std::vector<uint8_t>>> buffers;
  std::vector<MutableTensorView> outputs;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const size_t bytes = static_cast<size_t>(numElements(shapes[k])) * dtypeSize(dtypes[k]);
    buffers.push_back(std::make_shared<std::vector<uint8_t>>(std::max<size_t>(bytes, 1), 0));
    outputs.push_back({dtypes[k], shapes[k], buffers.back()->data()});
  }
  // A kernel that refuses these values (an index out of range, ...) leaves them unknown:
  // the run reports it, as it would without shape arithmetic.
  if (!n.op->reference({n, inputs, outputs}).ok()) return Status::Ok();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    auto c = std::make_shared<ConstData>();
    c->data = buffers[k]->data();
    c->size = static_cast<size_t>(numElements(shapes[k])) * dtypeSize(dtypes[k]);
    c->owner = buffers[k];
    (*values)[k] = std::move(c);
  }
  return Status::Ok();
}

}  // namespace gkrt::ir
