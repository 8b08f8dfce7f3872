#include "backends/cpu/layout/int8_layout.h"

#include <string>
#include <utility>
#include <vector>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {

void planInt8Nhwc(const ir::Graph& g, LayoutPlan* plan, const std::function<bool(const ir::Node&, int tensor)>& takes_nhwc) {
  const size_t nt = g.tensors.size();
  plan->nhwc.assign(nt, 0);
  if (plan->block <= 0 || plan->channels_last) return;
  std::vector<char> ok(nt, 0), conv(nt, 0), produced(nt, 0);
  std::vector<std::pair<int, int>> ties;  // (x, y) of each lookup or int8 max pool
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
    // A 256-entry lookup (a Gather of int8 values: quant_dq_op_q_fusion's Q(f(DQ(x))))
    // maps each byte where it is, and an int8 max pool pools in either layout: their x
    // and y in one layout (tied below).
    const int tie_x = op == "Gather" && n.inputs.size() == 2 ? 1 : op == "MaxPool" && n.inputs.size() == 1 ? 0 : -1;
    const bool tied = tie_x >= 0 && n.inputs[size_t(tie_x)] >= 0 && takes_nhwc(n, n.inputs[size_t(tie_x)]);
    if (tied) ties.emplace_back(n.inputs[size_t(tie_x)], n.outputs[0]);
    // A channel Concat of int8 tensors (quant_dq_op_q_fusion's, in fire modules) copies in
    // either layout: every input tied to its output.
    const bool concat = op == "Concat" && n.outputs.size() == 1 && takes_nhwc(n, n.outputs[0]);
    if (concat) for (int t : n.inputs) ties.emplace_back(t, n.outputs[0]);
    // The float side of a Q (its input) or DQ (its output) must be blocked.
    const int float_side = op == "QuantizeLinear" ? n.inputs[0] : op == "DequantizeLinear" ? n.outputs[0] : -1;
    const bool float_blocked = float_side >= 0 && plan->isBlocked(float_side);
    const auto visit = [&](int t) {
      if (t < 0 || !ok[t]) return;
      if (!takes_nhwc(n, t) || (!is_conv && !tied && !concat && !float_blocked)) ok[t] = 0;
      if (is_conv) conv[t] = 1;
    };
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int t = n.inputs[k];
      const bool x = (k == 0 && (is_conv || op == "DequantizeLinear")) || (tied && int(k) == tie_x) || concat;
      if (t >= 0 && ok[t] && !x) ok[t] = 0;  // only x is a layout
      else visit(t);
    }
    for (int t : n.outputs) {
      if (t >= 0) produced[t] = 1;
      visit(t);
    }
  }
  // A tie passes a convolution's side on (Q -> MaxPool -> QLinearConv: the pool's input
  // counts as beside the convolution).
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [x, y] : ties) {
      if (conv[x] != conv[y]) conv[x] = conv[y] = 1, changed = true;
    }
  }
  for (size_t t = 0; t < nt; ++t) plan->nhwc[t] = ok[t] && conv[t] && produced[t];
  // A tie's x and y share a layout: where they differ, both plain (every kernel
  // reading or writing an int8 tensor takes plain NCHW, so this never breaks another).
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [x, y] : ties) {
      if (plan->nhwc[x] != plan->nhwc[y]) {
        plan->nhwc[x] = plan->nhwc[y] = 0;
        changed = true;
      }
    }
  }
}

}  // namespace gkrt::cpu
