#include "backends/cpu/int8_layout.h"

#include <string>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {

void planInt8Nhwc(const ir::Graph& g, LayoutPlan* plan, const std::function<bool(const ir::Node&, int tensor)>& takes_nhwc) {
  const size_t nt = g.tensors.size();
  plan->nhwc.assign(nt, 0);
  if (plan->block <= 0 || plan->channels_last) return;
  std::vector<char> ok(nt, 0), conv(nt, 0), produced(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    const ir::Tensor& x = g.tensors[t];
    ok[t] = (x.dtype == DType::kUInt8 || x.dtype == DType::kInt8) && !x.isConstant() && x.shape.size() == 4 &&
            isStatic(x.shape) && x.shape[1] % plan->block == 0;
  }
  for (int t : g.inputs) if (t >= 0) ok[t] = 0;
  for (int t : g.outputs) if (t >= 0) ok[t] = 0;
  for (const ir::Node& n : g.nodes) {
    const std::string op = n.op ? n.op->name : "";
    const bool is_conv = op == "QLinearConv";
    // The float side of a Q (its input) or DQ (its output) must be blocked.
    const int float_side = op == "QuantizeLinear" ? n.inputs[0] : op == "DequantizeLinear" ? n.outputs[0] : -1;
    const bool float_blocked = float_side >= 0 && plan->isBlocked(float_side);
    const auto visit = [&](int t) {
      if (t < 0 || !ok[t]) return;
      if (!takes_nhwc(n, t) || (!is_conv && !float_blocked)) ok[t] = 0;
      if (is_conv) conv[t] = 1;
    };
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int t = n.inputs[k];
      if (t >= 0 && ok[t] && !(k == 0 && (is_conv || op == "DequantizeLinear"))) ok[t] = 0;  // only x is a layout
      else visit(t);
    }
    for (int t : n.outputs) {
      if (t >= 0) produced[t] = 1;
      visit(t);
    }
  }
  for (size_t t = 0; t < nt; ++t) plan->nhwc[t] = ok[t] && conv[t] && produced[t];
}

}  // namespace gkrt::cpu
