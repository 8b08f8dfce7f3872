#include "runtime/ir/interpret.h"

#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::ir {

Status interpretGraph(const Graph& g, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs) {
  std::vector<std::vector<uint8_t>> storage(g.tensors.size());
  std::vector<const void*> where(g.tensors.size(), nullptr);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].isConstant()) where[t] = g.tensors[t].constant->data;
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) where[g.inputs[k]] = inputs[k].data;
  for (const Node& n : g.nodes) {
    std::vector<TensorView> in;
    std::vector<MutableTensorView> out;
    for (int t : n.inputs) {
      if (t < 0) { in.push_back({}); continue; }
      in.push_back({g.tensors[t].dtype, g.tensors[t].shape, where[t]});
    }
    for (int t : n.outputs) {
      const Tensor& tt = g.tensors[t];
      storage[t].assign(std::max<size_t>(1, numElements(tt.shape) * dtypeSize(tt.dtype)), 0);
      where[t] = storage[t].data();
      out.push_back({tt.dtype, tt.shape, storage[t].data()});
    }
    RETURN_IF_ERROR(n.op->reference(KernelContext{n, in, out}));
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Tensor& t = g.tensors[g.outputs[k]];
    const size_t bytes = numElements(t.shape) * dtypeSize(t.dtype);
    if (bytes) std::memcpy(outputs[k].data, where[g.outputs[k]], bytes);
  }
  return Status::Ok();
}

}  // namespace gkrt::ir
