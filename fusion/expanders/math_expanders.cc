// Expanders of elementwise math and activations (formulas as MindSpore's expanders,
// FUSION_NOTES §4).
#include <cmath>
#include <map>

#include "fusion/expander.h"

namespace gkrt::expanders {
namespace {

bool isFloatNode(Emitter& e) { return isFloat(e.t(e.in(0)).dtype); }

ExpandResult expandGeLU(Emitter& e) {
  const int x = e.in(0);
  if (e.attrs<GeluAttrs>().approximate == GeluApprox::kNone) {  // 0.5 x (1 + erf(x / sqrt 2))
    return e.outputs({e.mul(e.mulScalar(x, 0.5f), e.addScalar(e.op("Erf", {e.mulScalar(x, 0.70710678f)}), 1.0f))});
  }
  const int cube = e.mul(e.mul(x, x), x);
  const int inner = e.mulScalar(e.add(x, e.mulScalar(cube, 0.044715f)), 0.7978845608028654f);
  return e.outputs({e.mul(e.mulScalar(x, 0.5f), e.addScalar(e.tanh(inner), 1.0f))});
}
// x * exp(0.5 a (x - |x|)) / (1 + exp(-a |x|)), a = 1.702
ExpandResult expandFastGeLU(Emitter& e) {
  const int x = e.in(0), ax = e.abs(x);
  const int num = e.mul(x, e.exp(e.mulScalar(e.sub(x, ax), 0.851f)));
  return e.outputs({e.div(num, e.addScalar(e.exp(e.mulScalar(ax, -1.702f)), 1.0f))});
}
ExpandResult expandSiLU(Emitter& e) { return e.outputs({e.mul(e.in(0), e.sigmoid(e.in(0)))}); }
ExpandResult expandSigmoid(Emitter& e) { return e.outputs({e.sigmoid(e.in(0))}); }
ExpandResult expandSoftplus(Emitter& e) {
  const auto& a = e.attrs<SoftplusAttrs>();
  const int x = e.in(0), bx = e.mulScalar(x, a.beta);
  // max(bx, 0) + log(1 + e^-|bx|): e^bx itself overflows float16 from bx = 11.1, below
  // the threshold (tests/fuzz_fusion, seed 20641).
  const int tail = e.log(e.addScalar(e.exp(e.neg(e.abs(bx))), 1.0f));
  const int soft = e.mulScalar(e.add(e.maximum(bx, e.scalar(0, bx)), tail), 1.0f / a.beta);
  return e.outputs({e.select(e.op("Greater", {bx, e.scalar(a.threshold, x)}), x, soft)});
}
ExpandResult expandSquare(Emitter& e) { return e.outputs({e.mul(e.in(0), e.in(0))}); }
ExpandResult expandSquaredDifference(Emitter& e) {
  const int d = e.sub(e.in(0), e.in(1));
  return e.outputs({e.mul(d, d)});
}
// Maximum(x, 0): NaN-propagating like the reference kernel, and a cluster op in every
// column (MindSpore's Cast(x > 0) * x needs Greater, which the CPU column leaves out).
ExpandResult expandReLU(Emitter& e) { return e.outputs({e.maximum(e.in(0), e.scalar(0, e.in(0)))}); }
ExpandResult expandHSigmoid(Emitter& e) {
  const int x = e.in(0);
  const int v = e.addScalar(e.mulScalar(x, 1.0f / 6.0f), 0.5f);
  return e.outputs({e.minimum(e.maximum(v, e.scalar(0, x)), e.scalar(1, x))});
}
ExpandResult expandHSwish(Emitter& e) {
  const int x = e.in(0);
  const int r6 = e.minimum(e.maximum(e.addScalar(x, 3.0f), e.scalar(0, x)), e.scalar(6, x));
  return e.outputs({e.mulScalar(e.mul(x, r6), 1.0f / 6.0f)});
}
ExpandResult expandLeakyReLU(Emitter& e) {
  const int x = e.in(0);
  return e.outputs({e.select(e.op("Less", {x, e.scalar(0, x)}), e.mulScalar(x, e.attrs<AlphaAttrs>().alpha), x)});
}
// max(x, 0) + alpha (exp(min(x, 0)) - 1)
ExpandResult expandElu(Emitter& e) {
  const int x = e.in(0), zero = e.scalar(0, x);
  const int neg = e.mulScalar(e.addScalar(e.exp(e.minimum(x, zero)), -1.0f), e.attrs<AlphaAttrs>().alpha);
  return e.outputs({e.add(e.maximum(x, zero), neg)});
}
ExpandResult expandHShrink(Emitter& e) {
  const int x = e.in(0);
  const int keep = e.op("Greater", {e.abs(x), e.scalar(e.attrs<AlphaAttrs>().alpha, x)});
  return e.outputs({e.select(keep, x, e.scalar(0, x))});
}
ExpandResult expandClip(Emitter& e) {
  const auto& a = e.attrs<ClipAttrs>();
  const int x = e.in(0);
  return e.outputs({e.minimum(e.maximum(x, e.scalar(a.min, x)), e.scalar(a.max, x))});
}
// Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): sign(x) (1 - poly(t) t exp(-x^2)), t = 1/(1+p|x|).
int erfOf(Emitter& e, int x) {
  const float p = 0.3275911f, a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  const int ax = e.abs(x);
  const int t = e.div(e.scalar(1, x), e.addScalar(e.mulScalar(ax, p), 1.0f));
  int poly = e.scalar(a[4], x);
  for (int i = 3; i >= 0; --i) poly = e.addScalar(e.mul(poly, t), a[i]);
  const int tail = e.mul(e.mul(poly, t), e.exp(e.neg(e.mul(x, x))));
  return e.mul(e.op("Sign", {x}), e.sub(e.scalar(1, x), tail));
}
ExpandResult expandErf(Emitter& e) { return e.outputs({erfOf(e, e.in(0))}); }
ExpandResult expandErfc(Emitter& e) { return e.outputs({e.sub(e.scalar(1, e.in(0)), e.op("Erf", {e.in(0)}))}); }
// sign(x) (1 - t) / (1 + t), t = exp(-2|x|): no overflow for large |x|.
ExpandResult expandTanh(Emitter& e) {
  const int x = e.in(0), t = e.exp(e.mulScalar(e.abs(x), -2.0f));
  return e.outputs({e.mul(e.op("Sign", {x}), e.div(e.sub(e.scalar(1, x), t), e.addScalar(t, 1.0f)))});
}
// e^|x| / 2 as e^(|x| - ln 2): e^|x| itself overflows while cosh/sinh still fit
// (float16 from |x| = 11.1, float32 from 88.7; found by tests/fuzz_fusion).
int halfExpAbs(Emitter& e, int ax) { return e.exp(e.addScalar(ax, -0.69314718f)); }
ExpandResult expandCosh(Emitter& e) {
  const int ax = e.abs(e.in(0));
  return e.outputs({e.add(halfExpAbs(e, ax), e.mulScalar(e.exp(e.neg(ax)), 0.5f))});
}
ExpandResult expandSinh(Emitter& e) {
  const int x = e.in(0), ax = e.abs(x);
  return e.outputs({e.mul(e.op("Sign", {x}), e.sub(halfExpAbs(e, ax), e.mulScalar(e.exp(e.neg(ax)), 0.5f)))});
}
ExpandResult expandAcosh(Emitter& e) {  // log(x + sqrt(x^2 - 1))
  const int x = e.in(0);
  return e.outputs({e.log(e.add(x, e.sqrt(e.addScalar(e.mul(x, x), -1.0f))))});
}
ExpandResult expandAsinh(Emitter& e) {  // sign(x) log(|x| + sqrt(x^2 + 1))
  const int x = e.in(0), ax = e.abs(x);
  return e.outputs({e.mul(e.op("Sign", {x}), e.log(e.add(ax, e.sqrt(e.addScalar(e.mul(x, x), 1.0f)))))});
}
ExpandResult expandAddcmul(Emitter& e) {
  return e.outputs({e.add(e.in(0), e.mul(e.in(3), e.mul(e.in(1), e.in(2))))});
}
ExpandResult expandFusedMulAdd(Emitter& e) { return e.outputs({e.add(e.mul(e.in(0), e.in(1)), e.in(2))}); }
ExpandResult expandDivMod(Emitter& e) {
  if (!isFloatNode(e)) return std::nullopt;  // integer rounding stays in the basic op
  const int q = e.div(e.in(0), e.in(1));
  return e.outputs({e.op(e.attrs<RoundingAttrs>().mode == RoundingMode::kFloor ? "Floor" : "Trunc", {q})});
}
ExpandResult expandAddN(Emitter& e) {
  int acc = e.in(0);
  if (e.numInputs() == 1) return std::nullopt;
  for (size_t k = 1; k < e.numInputs(); ++k) acc = e.add(acc, e.in(k));
  return e.outputs({acc});
}
ExpandResult expandAssignAdd(Emitter& e) { return e.outputs({e.add(e.in(0), e.in(1))}); }
ExpandResult expandOnesLike(Emitter& e) {
  return e.outputs({e.op("BroadcastTo", {e.scalar(1, e.in(0))}, ShapeAttrs{e.shape(e.in(0))})});
}
ExpandResult expandZerosLike(Emitter& e) {
  return e.outputs({e.op("BroadcastTo", {e.scalar(0, e.in(0))}, ShapeAttrs{e.shape(e.in(0))})});
}

}  // namespace

void registerMathExpanders(std::map<std::string, ExpanderFn>& m) {
  m["GeLU"] = expandGeLU;
  m["FastGeLU"] = expandFastGeLU;
  m["SiLU"] = expandSiLU;
  m["Sigmoid"] = expandSigmoid;
  m["Softplus"] = expandSoftplus;
  m["Square"] = expandSquare;
  m["SquaredDifference"] = expandSquaredDifference;
  m["ReLU"] = expandReLU;
  m["HSigmoid"] = expandHSigmoid;
  m["HSwish"] = expandHSwish;
  m["LeakyReLU"] = expandLeakyReLU;
  m["Elu"] = expandElu;
  m["HShrink"] = expandHShrink;
  m["Clip"] = expandClip;
  m["Erf"] = expandErf;
  m["Erfc"] = expandErfc;
  m["Tanh"] = expandTanh;
  m["Cosh"] = expandCosh;
  m["Sinh"] = expandSinh;
  m["Acosh"] = expandAcosh;
  m["Asinh"] = expandAsinh;
  m["Addcmul"] = expandAddcmul;
  m["FusedMulAdd"] = expandFusedMulAdd;
  m["DivMod"] = expandDivMod;
  m["AddN"] = expandAddN;
  m["AssignAdd"] = expandAssignAdd;
  m["OnesLike"] = expandOnesLike;
  m["ZerosLike"] = expandZerosLike;
}

}  // namespace gkrt::expanders
