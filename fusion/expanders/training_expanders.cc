// Expanders of gradient and optimizer ops (formulas as MindSpore's, FUSION_NOTES §4).
#include <map>

#include "fusion/expander.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::expanders {
namespace {

ExpandResult expandSqrtGrad(Emitter& e) { return e.outputs({e.div(e.in(1), e.mulScalar(e.in(0), 2.0f))}); }
ExpandResult expandRsqrtGrad(Emitter& e) {
  const int y = e.in(0);
  return e.outputs({e.mul(e.mulScalar(e.mul(e.mul(y, y), y), -0.5f), e.in(1))});
}
ExpandResult expandTanhGrad(Emitter& e) {
  const int y = e.in(0);
  return e.outputs({e.mul(e.in(1), e.sub(e.scalar(1, y), e.mul(y, y)))});
}
ExpandResult expandSigmoidGrad(Emitter& e) {
  const int y = e.in(0);
  return e.outputs({e.mul(e.mul(e.sub(e.scalar(1, y), y), y), e.in(1))});
}
ExpandResult expandReluGrad(Emitter& e) {
  const int dy = e.in(0), x = e.in(1);
  return e.outputs({e.select(e.op("Greater", {x, e.scalar(0, x)}), dy, e.scalar(0, dy))});
}
// dy [0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)], t = tanh(k (x + c x^3))
ExpandResult expandGeLUGrad(Emitter& e) {
  const int dy = e.in(0), x = e.in(1);
  if (e.attrs<GeluAttrs>().approximate == GeluApprox::kNone) {  // Phi(x) + x phi(x)
    const int cdf = e.mulScalar(e.addScalar(e.op("Erf", {e.mulScalar(x, 0.70710678f)}), 1.0f), 0.5f);
    const int pdf = e.mulScalar(e.exp(e.mulScalar(e.mul(x, x), -0.5f)), 0.39894228f);
    return e.outputs({e.mul(dy, e.add(cdf, e.mul(x, pdf)))});
  }
  const float k = 0.7978845608028654f, c = 0.044715f;
  const int x2 = e.mul(x, x);
  const int t = e.tanh(e.mulScalar(e.add(x, e.mulScalar(e.mul(x2, x), c)), k));
  const int left = e.mulScalar(e.addScalar(t, 1.0f), 0.5f);
  const int dt = e.mulScalar(e.addScalar(e.mulScalar(x2, 3 * c), 1.0f), k);
  const int right = e.mul(e.mul(e.mulScalar(x, 0.5f), e.sub(e.scalar(1, t), e.mul(t, t))), dt);
  return e.outputs({e.mul(dy, e.add(left, right))});
}
// d/dx x s(a x) = s + a x s (1 - s)
int sigmoidLinearGrad(Emitter& e, int dy, int x, float a) {
  const int s = e.sigmoid(a == 1.0f ? x : e.mulScalar(x, a));
  const int ds = e.mul(e.mul(a == 1.0f ? x : e.mulScalar(x, a), s), e.sub(e.scalar(1, s), s));
  return e.mul(dy, e.add(s, ds));
}
ExpandResult expandFastGeLUGrad(Emitter& e) { return e.outputs({sigmoidLinearGrad(e, e.in(0), e.in(1), 1.702f)}); }
ExpandResult expandSiLUGrad(Emitter& e) { return e.outputs({sigmoidLinearGrad(e, e.in(0), e.in(1), 1.0f)}); }
ExpandResult expandSoftplusGrad(Emitter& e) {
  const auto& a = e.attrs<SoftplusAttrs>();
  const int dy = e.in(0), x = e.in(1), bx = e.mulScalar(x, a.beta);
  return e.outputs({e.select(e.op("Greater", {bx, e.scalar(a.threshold, x)}), dy, e.mul(dy, e.sigmoid(bx)))});
}
ExpandResult expandDropoutGrad(Emitter& e) {
  return e.outputs({e.mulScalar(e.mul(e.in(0), e.in(1)), 1.0f / e.attrs<DropoutAttrs>().keep_prob)});
}

// m = Cast(x >= y) (x <= y for Minimum); dx = m dout, dy = dout - dx, each summed to its shape.
template <bool kMax> ExpandResult expandMinMaxGrad(Emitter& e) {
  const int x = e.in(0), y = e.in(1), dout = e.in(2);
  const int m = e.cast(e.op(kMax ? "GreaterEqual" : "LessEqual", {x, y}), e.t(dout).dtype);
  const int dx = e.mul(m, dout), dy = e.sub(dout, dx);
  auto sumTo = [&](int v, int like) {
    const Shape &from = e.shape(v), &to = e.shape(like);
    Ints axes;
    const size_t lead = from.size() - to.size();
    for (size_t d = 0; d < from.size(); ++d) if (d < lead || (to[d - lead] == 1 && from[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    return axes.empty() ? v : e.reshape(e.reduceSum(v, axes, true), to);
  };
  return e.outputs({sumTo(dx, x), sumTo(dy, y)});
}

ExpandResult expandClipByNormNoDivSum(Emitter& e) {
  const int x0 = e.in(0), x1 = e.in(1), x2 = e.in(2), x3 = e.in(3);
  const int g = e.op("Greater", {x0, x1});
  return e.outputs({e.maximum(e.select(g, e.sqrt(e.select(g, x0, x2)), x0), x3)});
}

// (var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad)
ExpandResult expandAdam(Emitter& e) {
  const int var = e.in(0), m = e.in(1), v = e.in(2), b1p = e.in(3), b2p = e.in(4), lr = e.in(5);
  const int b1 = e.in(6), b2 = e.in(7), eps = e.in(8), g = e.in(9);
  const int one = e.scalar(1, var);
  const int m2 = e.add(e.mul(b1, m), e.mul(e.sub(one, b1), g));
  const int v2 = e.add(e.mul(b2, v), e.mul(e.sub(one, b2), e.mul(g, g)));
  const int lr_t = e.div(e.mul(lr, e.sqrt(e.sub(one, b2p))), e.sub(one, b1p));
  const int step = e.node().attrs.get<OptimizerAttrs>().use_nesterov ? e.add(e.mul(b1, m2), e.mul(e.sub(one, b1), g)) : m2;
  const int var2 = e.sub(var, e.div(e.mul(lr_t, step), e.add(eps, e.sqrt(v2))));
  return e.outputs({var2, m2, v2});
}
// (var, m, v, lr, beta1, beta2, epsilon, decay, grad)
ExpandResult expandAdamWeightDecay(Emitter& e) {
  const int var = e.in(0), m = e.in(1), v = e.in(2), lr = e.in(3), b1 = e.in(4), b2 = e.in(5);
  const int eps = e.in(6), decay = e.in(7), g = e.in(8), one = e.scalar(1, var);
  const int m2 = e.add(e.mul(b1, m), e.mul(e.sub(one, b1), g));
  const int v2 = e.add(e.mul(b2, v), e.mul(e.sub(one, b2), e.mul(g, g)));
  const int upd = e.add(e.div(m2, e.add(e.sqrt(v2), eps)), e.mul(decay, var));
  return e.outputs({e.sub(var, e.mul(lr, upd)), m2, v2});
}
// (grad, v, m, var, lr, mul0..mul4, add2_y) -> (v, m, var)
ExpandResult expandAdamApplyOneWithDecay(Emitter& e) {
  const int g = e.in(0), v = e.in(1), m = e.in(2), var = e.in(3), lr = e.in(4);
  const int m2 = e.add(e.mul(e.in(5), m), e.mul(e.in(6), g));
  const int v2 = e.add(e.mul(e.in(7), v), e.mul(e.in(8), e.mul(g, g)));
  const int upd = e.add(e.div(m2, e.add(e.in(10), e.sqrt(v2))), e.mul(e.in(9), var));
  std::vector<int> outs = {v2, m2, e.sub(var, e.mul(lr, upd))};
  outs.resize(e.node().outputs.size());
  return e.outputs(outs);
}
// (grad, v, m, var, b1, 1-b1, b2, 1-b2, eps, steps, use_w, wd) -> (update, v, m)
ExpandResult expandLambApplyOptimizer(Emitter& e) {
  const int g = e.in(0), v = e.in(1), m = e.in(2), var = e.in(3), b1 = e.in(4), b2 = e.in(6), steps = e.in(9);
  const int one = e.scalar(1, var);
  const int m2 = e.add(e.mul(b1, m), e.mul(e.in(5), g));
  const int v2 = e.add(e.mul(b2, v), e.mul(e.in(7), e.mul(g, g)));
  const int nm = e.div(m2, e.sub(one, e.op("Pow", {b1, steps})));
  const int nv = e.div(v2, e.sub(one, e.op("Pow", {b2, steps})));
  const int upd = e.add(e.div(nm, e.add(e.sqrt(nv), e.in(8))), e.mul(e.mul(e.in(10), e.in(11)), var));
  std::vector<int> outs = {upd, v2, m2};
  outs.resize(e.node().outputs.size());
  return e.outputs(outs);
}
// (w_norm, g_norm, lr, update, param) -> param - lr * ratio * update
ExpandResult expandLambApplyWeight(Emitter& e) {
  const int wn = e.in(0), gn = e.in(1), zero = e.scalar(0, wn), one = e.scalar(1, wn);
  const int ok = e.op("LogicalAnd", {e.op("Greater", {wn, zero}), e.op("Greater", {gn, zero})});
  const int ratio = e.select(ok, e.div(wn, e.select(ok, gn, one)), one);
  return e.outputs({e.sub(e.in(4), e.mul(e.mul(e.in(2), ratio), e.in(3)))});
}

}  // namespace

void registerTrainingExpanders(std::map<std::string, ExpanderFn>& m) {
  m["SqrtGrad"] = expandSqrtGrad;
  m["RsqrtGrad"] = expandRsqrtGrad;
  m["TanhGrad"] = expandTanhGrad;
  m["SigmoidGrad"] = expandSigmoidGrad;
  m["ReluGrad"] = expandReluGrad;
  m["GeLUGrad"] = expandGeLUGrad;
  m["FastGeLUGrad"] = expandFastGeLUGrad;
  m["SiLUGrad"] = expandSiLUGrad;
  m["SoftplusGrad"] = expandSoftplusGrad;
  m["DropoutGrad"] = expandDropoutGrad;
  m["MaximumGrad"] = expandMinMaxGrad<true>;
  m["MinimumGrad"] = expandMinMaxGrad<false>;
  m["ClipByNormNoDivSum"] = expandClipByNormNoDivSum;
  m["Adam"] = expandAdam;
  m["AdamWeightDecay"] = expandAdamWeightDecay;
  m["AdamApplyOneWithDecay"] = expandAdamApplyOneWithDecay;
  m["LambApplyOptimizerAssign"] = expandLambApplyOptimizer;
  m["LambApplyWeightAssign"] = expandLambApplyWeight;
}

}  // namespace gkrt::expanders
