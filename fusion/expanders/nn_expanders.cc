// Expanders of normalisation, softmax, losses, BiasAdd and MatMul (FUSION_NOTES §4).
#include <map>

#include "fusion/expander.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::expanders {
namespace {

// Axes [axis, rank) and their element count.
Ints tailAxes(int64_t axis, size_t rank, const Shape& s, int64_t* count) {
  Ints axes;
  *count = 1;
  for (int64_t d = axis; d < static_cast<int64_t>(rank); ++d) {
    axes.push_back(d);
    *count *= s[d];
  }
  return axes;
}

ExpandResult expandBiasAdd(Emitter& e) {
  const int x = e.in(0), b = e.in(1);
  const Shape& xs = e.shape(x);
  if (e.attrs<FormatAttrs>().format == DataFormat::kNHWC || xs.size() < 2) return e.outputs({e.add(x, b)});
  Shape bs(xs.size() - 1, 1);  // channel on axis 1: [C, 1, 1, ...]
  bs[0] = xs[1];
  return e.outputs({e.add(x, e.reshape(b, bs))});
}

// y = (x - mean) * rsqrt(var + eps) * gamma + beta; outputs (y, mean, var).
ExpandResult expandLayerNorm(Emitter& e) {
  const auto& a = e.attrs<NormAttrs>();
  const int x = e.in(0);
  const Shape& s = e.shape(x);
  auto axis = normalizeAxis(a.axis, static_cast<int64_t>(s.size()));
  if (!axis.ok() || !isFloat(e.t(x).dtype)) return std::nullopt;
  int64_t n;
  const Ints axes = tailAxes(*axis, s.size(), s, &n);
  // 16-bit floats are normalised in float32, as MindSpore's expander does: in float16
  // x - mean loses the digits that a small variance then magnifies (found by
  // tests/fuzz_fusion, seed 4347).
  const DType dt = e.t(x).dtype;
  const bool narrow = is16BitFloat(dt);
  auto wide = [&](int v) { return narrow ? e.cast(v, DType::kFloat32) : v; };
  const int xf = wide(x);
  const int mean = e.mulScalar(e.reduceSum(xf, axes, true), 1.0f / static_cast<float>(n));
  const int d = e.sub(xf, mean);
  const int var = e.mulScalar(e.reduceSum(e.mul(d, d), axes, true), 1.0f / static_cast<float>(n));
  int y = e.mul(d, e.op("Rsqrt", {e.addScalar(var, a.epsilon)}));
  const Shape param(s.begin() + *axis, s.end());
  if (e.numInputs() > 1 && e.in(1) >= 0) y = e.mul(y, e.reshape(wide(e.in(1)), param));
  if (e.numInputs() > 2 && e.in(2) >= 0) y = e.add(y, e.reshape(wide(e.in(2)), param));
  std::vector<int> outs = {y, mean, var};
  outs.resize(e.node().outputs.size());
  if (narrow) for (int& o : outs) o = e.cast(o, dt);
  return e.outputs(outs);
}

int softmaxAxis(Emitter& e) {
  auto a = normalizeAxis(e.attrs<AxisAttrs>().axis, static_cast<int64_t>(e.shape(e.in(0)).size()));
  return a.ok() ? static_cast<int>(*a) : -1;
}

ExpandResult expandSoftmax(Emitter& e) {
  const int axis = softmaxAxis(e), x = e.in(0);
  if (axis < 0) return std::nullopt;
  const int ex = e.exp(e.sub(x, e.reduceMax(x, {axis}, true)));
  return e.outputs({e.div(ex, e.reduceSum(ex, {axis}, true))});
}

ExpandResult expandLogSoftmax(Emitter& e) {
  const int axis = softmaxAxis(e), x = e.in(0);
  if (axis < 0) return std::nullopt;
  const int d = e.sub(x, e.reduceMax(x, {axis}, true));
  return e.outputs({e.sub(d, e.log(e.reduceSum(e.exp(d), {axis}, true)))});
}

ExpandResult expandLogSoftmaxGrad(Emitter& e) {  // dy - exp(y) * sum(dy)
  const int axis = softmaxAxis(e), y = e.in(0), dy = e.in(1);
  if (axis < 0) return std::nullopt;
  return e.outputs({e.sub(dy, e.mul(e.exp(y), e.reduceSum(dy, {axis}, true)))});
}

ExpandResult expandReduceMean(Emitter& e) {
  const int x = e.in(0);
  if (!isFloat(e.t(x).dtype)) return std::nullopt;
  const auto& a = e.attrs<AxesAttrs>();
  auto axes = ops::reduceAxes(a.axes, static_cast<int64_t>(e.shape(x).size()));
  if (!axes.ok()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *axes) n *= e.shape(x)[d];
  if (n == 0) return std::nullopt;
  return e.outputs({e.mulScalar(e.reduceSum(x, a.axes, a.keep_dims), 1.0f / static_cast<float>(n))});
}

// (loss [N], dlogits [N, C]) from log-softmax along axis 1.
ExpandResult expandSoftmaxXent(Emitter& e) {
  const int x = e.in(0), z = e.in(1);
  const int d = e.sub(x, e.reduceMax(x, {1}, true));
  const int logp = e.sub(d, e.log(e.reduceSum(e.exp(d), {1}, true)));
  const int loss = e.neg(e.reduceSum(e.mul(z, logp), {1}, false));
  std::vector<int> outs = {loss, e.sub(e.exp(logp), z)};
  outs.resize(e.node().outputs.size());
  return e.outputs(outs);
}

int reduceLoss(Emitter& e, int loss) {
  const Reduction r = e.attrs<ReductionAttrs>().reduction;
  if (r == Reduction::kNone) return loss;
  const int sum = e.reduceSum(loss, {}, false);
  const int64_t n = numElements(e.shape(loss));
  return r == Reduction::kMean && n ? e.mulScalar(sum, 1.0f / static_cast<float>(n)) : sum;
}

// MindSpore's naive form: p = sigmoid(x); -(pw z log p + (1 - z) log(1 - p)) w.
ExpandResult expandBCEWithLogits(Emitter& e) {
  const int x = e.in(0), z = e.in(1);
  const int p = e.sigmoid(x);
  int pos = e.mul(z, e.log(p));
  if (e.numInputs() > 3 && e.in(3) >= 0) pos = e.mul(pos, e.in(3));
  const int negt = e.mul(e.sub(e.scalar(1, z), z), e.log(e.sub(e.scalar(1, p), p)));
  int loss = e.neg(e.add(pos, negt));
  if (e.numInputs() > 2 && e.in(2) >= 0) loss = e.mul(loss, e.in(2));
  return e.outputs({reduceLoss(e, loss)});
}

ExpandResult expandBinaryCrossEntropy(Emitter& e) {
  const int p = e.in(0), z = e.in(1);
  const int t = e.add(e.mul(z, e.log(p)), e.mul(e.sub(e.scalar(1, z), z), e.log(e.sub(e.scalar(1, p), p))));
  int loss = e.neg(t);
  if (e.numInputs() > 2 && e.in(2) >= 0) loss = e.mul(loss, e.in(2));
  return e.outputs({reduceLoss(e, loss)});
}

// max(x, 0) - x z + log(1 + exp(-|x|))
ExpandResult expandSigmoidXent(Emitter& e) {
  const int x = e.in(0), z = e.in(1);
  const int t = e.log(e.addScalar(e.exp(e.neg(e.abs(x))), 1.0f));
  return e.outputs({e.add(e.sub(e.maximum(x, e.scalar(0, x)), e.mul(x, z)), t)});
}
ExpandResult expandSigmoidXentGrad(Emitter& e) {
  return e.outputs({e.mul(e.sub(e.sigmoid(e.in(0)), e.in(1)), e.in(2))});
}

// K == 1: the product is an outer product, a broadcast Mul.
ExpandResult expandMatMul(Emitter& e) {
  const auto& a = e.attrs<MatMulAttrs>();
  const Shape &sa = e.shape(e.in(0)), &sb = e.shape(e.in(1));
  const int64_t k = a.transpose_a ? sa[sa.size() - 2] : sa.back();
  if (k != 1) return std::nullopt;
  Shape ca = sa, cb = sb;  // as [.., M, 1] and [.., 1, N]
  if (a.transpose_a) std::swap(ca[ca.size() - 1], ca[ca.size() - 2]);
  if (a.transpose_b) std::swap(cb[cb.size() - 1], cb[cb.size() - 2]);
  const int lhs = a.transpose_a ? e.reshape(e.in(0), ca) : e.in(0);
  const int rhs = a.transpose_b ? e.reshape(e.in(1), cb) : e.in(1);
  return e.outputs({e.mul(lhs, rhs)});
}

// (x, dy, var, mean, gamma) -> (dx, dgamma, dbeta), normalised over [axis, rank).
ExpandResult expandLayerNormGrad(Emitter& e) {
  const auto& a = e.attrs<NormAttrs>();
  const int x = e.in(0), dy = e.in(1), var = e.in(2), mean = e.in(3), gamma = e.in(4);
  const Shape& s = e.shape(x);
  auto axis = normalizeAxis(a.axis, static_cast<int64_t>(s.size()));
  if (!axis.ok()) return std::nullopt;
  int64_t n;
  const Ints axes = tailAxes(*axis, s.size(), s, &n);
  Ints lead;
  for (int64_t d = 0; d < *axis; ++d) lead.push_back(d);
  Shape stat = s;
  for (size_t d = *axis; d < s.size(); ++d) stat[d] = 1;
  const Shape param(s.begin() + *axis, s.end());
  const int rstd = e.op("Rsqrt", {e.addScalar(e.reshape(var, stat), a.epsilon)});
  const int xhat = e.mul(e.sub(x, e.reshape(mean, stat)), rstd);
  const int dyg = e.mul(dy, e.reshape(gamma, param));
  const float inv_n = 1.0f / static_cast<float>(n);
  const int mean_dyg = e.mulScalar(e.reduceSum(dyg, axes, true), inv_n);
  const int mean_dyg_xhat = e.mulScalar(e.reduceSum(e.mul(dyg, xhat), axes, true), inv_n);
  const int dx = e.mul(rstd, e.sub(e.sub(dyg, mean_dyg), e.mul(xhat, mean_dyg_xhat)));
  const Shape& gs = e.shape(gamma);
  const int dgamma = e.reshape(e.reduceSum(e.mul(dy, xhat), lead, false), gs);
  const int dbeta = e.reshape(e.reduceSum(dy, lead, false), gs);
  return e.outputs({dx, dgamma, dbeta});
}

ExpandResult expandBiasAddGrad(Emitter& e) {
  const size_t rank = e.shape(e.in(0)).size();
  const int64_t ch = e.attrs<FormatAttrs>().format == DataFormat::kNHWC ? static_cast<int64_t>(rank) - 1 : 1;
  Ints axes;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) if (d != ch) axes.push_back(d);
  return e.outputs({e.reduceSum(e.in(0), axes, false)});
}

}  // namespace

void registerNNExpanders(std::map<std::string, ExpanderFn>& m) {
  m["BiasAdd"] = expandBiasAdd;
  m["LayerNorm"] = expandLayerNorm;
  m["Softmax"] = expandSoftmax;
  m["LogSoftmax"] = expandLogSoftmax;
  m["LogSoftmaxGrad"] = expandLogSoftmaxGrad;
  m["ReduceMean"] = expandReduceMean;
  m["SoftmaxCrossEntropyWithLogits"] = expandSoftmaxXent;
  m["BCEWithLogitsLoss"] = expandBCEWithLogits;
  m["BinaryCrossEntropy"] = expandBinaryCrossEntropy;
  m["SigmoidCrossEntropyWithLogits"] = expandSigmoidXent;
  m["SigmoidCrossEntropyWithLogitsGrad"] = expandSigmoidXentGrad;
  m["MatMul"] = expandMatMul;
  m["BatchMatMul"] = expandMatMul;
  m["LayerNormGrad"] = expandLayerNormGrad;
  m["BiasAddGrad"] = expandBiasAddGrad;
}

}  // namespace gkrt::expanders
