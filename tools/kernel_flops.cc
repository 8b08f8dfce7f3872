#include "tools/kernel_flops.h"

#include "runtime/ir/op_def.h"

#include <algorithm>
#include <string>

namespace gkrt::tools {
namespace {

double elements(const ir::Graph& g, int t) {
  if (t < 0 || t >= static_cast<int>(g.tensors.size())) return 0;
  const Shape& s = g.tensors[t].shape;
  for (int64_t d : s) if (d < 0) return 0;
  return static_cast<double>(numElements(s));
}

const Shape* shapeOf(const ir::Graph& g, const ir::Node& n, size_t input) {
  if (input >= n.inputs.size() || n.inputs[input] < 0) return nullptr;
  return &g.tensors[n.inputs[input]].shape;
}

bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

}  // namespace

double kernelFlops(const ir::Graph& g, const ir::Node& n) {
  if (n.subgraph) {
    double sum = 0;
    for (const ir::Node& m : n.subgraph->nodes) sum += kernelFlops(*n.subgraph, m);
    return sum;
  }
  const std::string op = n.op ? n.op->name : "";
  const double out = n.outputs.empty() ? 0 : elements(g, n.outputs[0]);
  const Shape* a = shapeOf(g, n, 0);
  const Shape* b = shapeOf(g, n, 1);
  if ((has(op, "MatMul") || op == "Gemm") && a && a->size() >= 2 && !n.outputs.empty()) {
    // out [..., M, N]; A [..., M, K] or, transposed, [..., K, M]
    const Shape& o = g.tensors[n.outputs[0]].shape;
    const int64_t m = o.size() >= 2 ? o[o.size() - 2] : 1;
    const int64_t r = (*a)[a->size() - 2], c = (*a)[a->size() - 1];
    return 2.0 * out * static_cast<double>(r == m ? c : r);
  }
  if ((has(op, "Conv") && !has(op, "Transpose")) && b && !n.outputs.empty()) {
    const Shape& o = g.tensors[n.outputs[0]].shape;  // NCHW: Cout = o[1]; W holds Cout x (Cin/groups) x kh x kw
    const double cout = o.size() >= 2 && o[1] > 0 ? static_cast<double>(o[1]) : 1;
    return 2.0 * out * elements(g, n.inputs[1]) / cout;
  }
  if (op == "ConvTranspose" && a && a->size() >= 2 && (*a)[1] > 0) {
    return 2.0 * elements(g, n.inputs[0]) * elements(g, n.inputs[1]) / static_cast<double>((*a)[1]);
  }
  if (op == "FlashAttention" && a && b && b->size() >= 2) {  // Q [.., S, D] x K [.., T, D], then P x V
    return 4.0 * elements(g, n.inputs[0]) * static_cast<double>((*b)[b->size() - 2]);
  }
  if ((op == "LSTM" || op == "GRU" || op == "RNN") && a && a->size() == 3 && (*a)[2] > 0) {
    const double steps_x_batch = elements(g, n.inputs[0]) / static_cast<double>((*a)[2]);
    return 2.0 * steps_x_batch * (elements(g, n.inputs[1]) + (n.inputs.size() > 2 ? elements(g, n.inputs[2]) : 0));
  }
  double most = out;
  for (int t : n.inputs) most = std::max(most, elements(g, t));
  for (int t : n.outputs) most = std::max(most, elements(g, t));
  return most;
}

}  // namespace gkrt::tools
