// Training ops from the fusion tables, in functional form: optimizers return the
// updated state as outputs instead of writing their inputs (gkrt never mutates a
// model's tensors). Also activation gradients, losses, Dropout and StandardNormal.
#include <cmath>
#include <random>

#include "runtime/ir/ops/elementwise_nary.h"

namespace gkrt::ops {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

#define GRAD_FN(Name, expr) \
  struct Name { const Attrs& attrs; float operator()(const float* v) const { return expr; } }
GRAD_FN(SqrtGradFn, v[1] / (2.0f * v[0]));                 // (y, dy)
GRAD_FN(RsqrtGradFn, -0.5f * v[0] * v[0] * v[0] * v[1]);   // (y, dy)
GRAD_FN(TanhGradFn, v[1] * (1.0f - v[0] * v[0]));          // (y, dy)
GRAD_FN(SigmoidGradFn, (1.0f - v[0]) * v[0] * v[1]);       // (y, dy)
GRAD_FN(ReluGradFn, v[1] > 0.0f ? v[0] : 0.0f);            // (dy, x)
GRAD_FN(FastGeLUGradFn, v[0] * (sigmoid(1.702f * v[1]) +
                                1.702f * v[1] * sigmoid(1.702f * v[1]) * (1.0f - sigmoid(1.702f * v[1]))));  // (dy, x)
GRAD_FN(SiLUGradFn, v[0] * (sigmoid(v[1]) + v[1] * sigmoid(v[1]) * (1.0f - sigmoid(v[1]))));            // (dy, x)
GRAD_FN(SigmoidXentFn, std::max(v[0], 0.0f) - v[0] * v[1] + std::log1p(std::exp(-std::fabs(v[0]))));   // (x, z)
GRAD_FN(SigmoidXentGradFn, (sigmoid(v[0]) - v[1]) * v[2]);                                              // (x, z, dout)
GRAD_FN(AssignFn, v[1]);                                                                                 // (ref, value)
GRAD_FN(AssignAddFn, v[0] + v[1]);                                                                       // (ref, value)
GRAD_FN(LambApplyWeightFn, v[4] - v[2] * ((v[0] > 0.0f && v[1] > 0.0f) ? v[0] / v[1] : 1.0f) * v[3]);
#undef GRAD_FN

struct GeLUGradFn {  // (dy, x[, y])
  const Attrs& attrs;
  float operator()(const float* v) const {
    const float x = v[1];
    if (attrs.get<GeluAttrs>().approximate == GeluApprox::kNone) {
      return v[0] * (0.5f * (1.0f + std::erf(x * 0.70710678f)) + x * std::exp(-0.5f * x * x) * 0.39894228f);
    }
    const float k = 0.7978845608028654f, c = 0.044715f;
    const float t = std::tanh(k * (x + c * x * x * x));
    return v[0] * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x));
  }
};
struct SoftplusGradFn {  // (dy, x)
  const Attrs& attrs;
  float operator()(const float* v) const {
    const auto& a = attrs.get<SoftplusAttrs>();
    return a.beta * v[1] > a.threshold ? v[0] : v[0] * sigmoid(a.beta * v[1]);
  }
};
struct ClipByNormNoDivSumFn {  // Maximum(Select(x0>x1, Sqrt(Select(x0>x1, x0, x2)), x0), x3)
  const Attrs& attrs;
  float operator()(const float* v) const {
    const bool g = v[0] > v[1];
    return std::max(g ? std::sqrt(g ? v[0] : v[2]) : v[0], v[3]);
  }
};
struct DropoutGradFn {  // (dy, mask)
  const Attrs& attrs;
  float operator()(const float* v) const { return v[0] * v[1] / attrs.get<DropoutAttrs>().keep_prob; }
};

// ---- multi-output optimizers: every input broadcasts to input 0's shape -----------
Status shapeLikeFirst(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k]) continue;
    auto b = broadcastShapes(in[0]->shape, in[k]->shape);
    if (!b.ok() || *b != in[0]->shape) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " of shape ",
                       shapeToString(in[k]->shape), " does not broadcast to input 0's ", shapeToString(in[0]->shape));
    }
  }
  out.assign(n.op->max_outputs, in[0]->shape);
  return Status::Ok();
}

template <size_t NIn, size_t NOut, class F> Status multiKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const Shape& shape = c.in(0).shape;
  std::array<const Shape*, NIn> shapes;
  for (size_t k = 0; k < NIn; ++k) shapes[k] = &c.in(k).shape;
  forEachBroadcast<NIn>(shape, shapes, [&](int64_t i, const std::array<int64_t, NIn>& o) {
    float in[NIn], out[NOut];
    for (size_t k = 0; k < NIn; ++k) in[k] = loadF(c.in(k).data, c.in(k).dtype, o[k]);
    f(in, out);
    for (size_t k = 0; k < NOut && k < c.outputs.size(); ++k) storeF(c.out(k).data, c.out(k).dtype, i, out[k]);
  });
  return Status::Ok();
}

// (var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad) -> (var, m, v)
struct AdamFn {
  const Attrs& attrs;
  void operator()(const float* a, float* o) const {
    const float var = a[0], m = a[1], v = a[2], b1p = a[3], b2p = a[4], lr = a[5], b1 = a[6], b2 = a[7], eps = a[8], g = a[9];
    const float m2 = b1 * m + (1 - b1) * g, v2 = b2 * v + (1 - b2) * g * g;
    const float lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    const float step = attrs.get<OptimizerAttrs>().use_nesterov ? b1 * m2 + (1 - b1) * g : m2;
    o[0] = var - lr_t * step / (eps + std::sqrt(v2));
    o[1] = m2;
    o[2] = v2;
  }
};
// (var, m, v, lr, beta1, beta2, epsilon, decay, grad) -> (var, m, v)
struct AdamWeightDecayFn {
  const Attrs& attrs;
  void operator()(const float* a, float* o) const {
    const float var = a[0], m = a[1], v = a[2], lr = a[3], b1 = a[4], b2 = a[5], eps = a[6], decay = a[7], g = a[8];
    const float m2 = b1 * m + (1 - b1) * g, v2 = b2 * v + (1 - b2) * g * g;
    o[0] = var - lr * (m2 / (std::sqrt(v2) + eps) + decay * var);
    o[1] = m2;
    o[2] = v2;
  }
};
// (var, accum, lr, grad, momentum) -> (var, accum)
struct ApplyMomentumFn {
  const Attrs& attrs;
  void operator()(const float* a, float* o) const {
    const float var = a[0], accum = a[1], lr = a[2], g = a[3], mom = a[4];
    const float acc2 = accum * mom + g;
    o[0] = attrs.get<OptimizerAttrs>().use_nesterov ? var - lr * (g + acc2 * mom) : var - lr * acc2;
    o[1] = acc2;
  }
};
// (grad, v, m, var, lr, mul0_x..mul4_x, add2_y) -> (new v, new m, new var)
struct AdamApplyOneWithDecayFn {
  const Attrs& attrs;
  void operator()(const float* a, float* o) const {
    const float g = a[0], v = a[1], m = a[2], var = a[3], lr = a[4];
    const float m2 = a[5] * m + a[6] * g;
    const float v2 = a[7] * v + a[8] * g * g;
    const float update = m2 / (a[10] + std::sqrt(v2)) + a[9] * var;
    o[0] = v2;
    o[1] = m2;
    o[2] = var - lr * update;
  }
};
// (grad, v, m, var, beta1, 1-beta1, beta2, 1-beta2, epsilon, steps, do_use_weight,
//  weight_decay_rate) -> (update, new v, new m)
struct LambApplyOptimizerFn {
  const Attrs& attrs;
  void operator()(const float* a, float* o) const {
    const float g = a[0], v = a[1], m = a[2], var = a[3], b1 = a[4], omb1 = a[5], b2 = a[6], omb2 = a[7];
    const float eps = a[8], steps = a[9], use_w = a[10], wd = a[11];
    const float m2 = b1 * m + omb1 * g, v2 = b2 * v + omb2 * g * g;
    const float next_m = m2 / (1 - std::pow(b1, steps)), next_v = v2 / (1 - std::pow(b2, steps));
    o[0] = next_m / (std::sqrt(next_v) + eps) + use_w * wd * var;
    o[1] = v2;
    o[2] = m2;
  }
};

// Uniform [0,1) draws from mt19937_64 (fully specified by the C++ standard, so results
// are the same on every platform).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Status dropoutKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<DropoutAttrs>();
  std::mt19937_64 rng(static_cast<uint64_t>(a.seed));
  for (int64_t i = 0, n = c.in(0).size(); i < n; ++i) {
    const float keep = uniform01(rng) < a.keep_prob ? 1.0f : 0.0f;
    storeF(c.out(0).data, c.out(0).dtype, i, loadF(c.in(0).data, c.in(0).dtype, i) * keep / a.keep_prob);
    if (c.outputs.size() > 1) storeF(c.out(1).data, c.out(1).dtype, i, keep);
  }
  return Status::Ok();
}
Status dtypeDropout(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const float p = n.attrs.get<DropoutAttrs>().keep_prob;
  if (!(p > 0.0f && p <= 1.0f)) return makeError(StatusCode::kInvalidArgument, n.op->name, " keep_prob ", p, " not in (0, 1]");
  return dtypeFloatSame(n, in, out);
}

Status uniformRealKernel(const KernelContext& c) {
  std::mt19937_64 rng(static_cast<uint64_t>(c.node.attrs.get<StandardNormalAttrs>().seed));
  for (int64_t i = 0, n = c.out(0).size(); i < n; ++i) storeF(c.out(0).data, c.out(0).dtype, i, static_cast<float>(uniform01(rng)));
  return Status::Ok();
}

// Box-Muller on uniform01 draws, two normals per pair.
Status standardNormalKernel(const KernelContext& c) {
  std::mt19937_64 rng(static_cast<uint64_t>(c.node.attrs.get<StandardNormalAttrs>().seed));
  const int64_t n = c.out(0).size();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
    const double r = std::sqrt(-2.0 * std::log(u1));
    storeF(c.out(0).data, c.out(0).dtype, i, static_cast<float>(r * std::cos(2 * M_PI * u2)));
    if (i + 1 < n) storeF(c.out(0).data, c.out(0).dtype, i + 1, static_cast<float>(r * std::sin(2 * M_PI * u2)));
  }
  return Status::Ok();
}
Status dtypeStandardNormal(const ir::Node&, const In&, std::vector<DType>& out) {
  out = {DType::kFloat32};
  return Status::Ok();
}
Status shapeStandardNormal(const ir::Node& n, const In&, std::vector<Shape>& out) {
  const Shape& s = n.attrs.get<StandardNormalAttrs>().shape;
  for (int64_t d : s) {
    if (d < 0) return makeError(StatusCode::kInvalidArgument, "StandardNormal shape has negative dim ", d);
  }
  out = {s};
  return Status::Ok();
}

OpDef ew(const char* name, int nin_min, int nin_max, ReferenceKernel k, const char* summary,
         AttrKind a = AttrKind::kNone) {
  return {name, OpClass::kElementwise, nin_min, nin_max, 1, 1, a, dtypeFloatSame, shapeBroadcast, k, summary};
}
OpDef optimizer(const char* name, int nin, int nout, ReferenceKernel k, const char* summary,
                AttrKind a = AttrKind::kNone) {
  return {name, OpClass::kOpaque, nin, nin, 1, nout, a, dtypeFloatSame, shapeLikeFirst, k, summary};
}

}  // namespace

void registerTrainingOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("SqrtGrad")) t.push_back(ew("SqrtGrad", 2, 2, floatNaryKernel<2, SqrtGradFn>, "(y, dy) -> dy / (2y)"));
  if constexpr (opSelected("RsqrtGrad")) t.push_back(ew("RsqrtGrad", 2, 2, floatNaryKernel<2, RsqrtGradFn>, "(y, dy) -> -0.5 y^3 dy"));
  if constexpr (opSelected("TanhGrad")) t.push_back(ew("TanhGrad", 2, 2, floatNaryKernel<2, TanhGradFn>, "(y, dy) -> dy (1 - y^2)"));
  if constexpr (opSelected("SigmoidGrad")) t.push_back(ew("SigmoidGrad", 2, 2, floatNaryKernel<2, SigmoidGradFn>, "(y, dy) -> (1 - y) y dy"));
  if constexpr (opSelected("ReluGrad")) t.push_back(ew("ReluGrad", 2, 2, floatNaryKernel<2, ReluGradFn>, "(dy, x) -> x > 0 ? dy : 0"));
  if constexpr (opSelected("GeLUGrad")) t.push_back(ew("GeLUGrad", 2, 3, floatNaryKernel<2, GeLUGradFn>, "(dy, x[, y]) -> dy * GeLU'(x)", AttrKind::kGelu));
  if constexpr (opSelected("FastGeLUGrad")) t.push_back(ew("FastGeLUGrad", 2, 2, floatNaryKernel<2, FastGeLUGradFn>, "(dy, x) -> dy * FastGeLU'(x)"));
  if constexpr (opSelected("SiLUGrad")) t.push_back(ew("SiLUGrad", 2, 2, floatNaryKernel<2, SiLUGradFn>, "(dy, x) -> dy (s + x s (1 - s)), s = sigmoid(x)"));
  if constexpr (opSelected("SoftplusGrad")) t.push_back(ew("SoftplusGrad", 2, 2, floatNaryKernel<2, SoftplusGradFn>, "(dy, x) -> dy sigmoid(beta x)",
                 AttrKind::kSoftplus));
  if constexpr (opSelected("SigmoidCrossEntropyWithLogits")) t.push_back(ew("SigmoidCrossEntropyWithLogits", 2, 2, floatNaryKernel<2, SigmoidXentFn>,
                 "(x, z) -> max(x,0) - x z + log(1 + e^-|x|)"));
  if constexpr (opSelected("SigmoidCrossEntropyWithLogitsGrad")) t.push_back(ew("SigmoidCrossEntropyWithLogitsGrad", 3, 3, floatNaryKernel<3, SigmoidXentGradFn>,
                 "(x, z, dout) -> (sigmoid(x) - z) dout"));
  if constexpr (opSelected("ClipByNormNoDivSum")) t.push_back(ew("ClipByNormNoDivSum", 4, 4, floatNaryKernel<4, ClipByNormNoDivSumFn>,
                 "max(x0 > x1 ? sqrt(x0) : x0, x3)"));
  if constexpr (opSelected("DropoutGrad")) t.push_back(ew("DropoutGrad", 2, 2, floatNaryKernel<2, DropoutGradFn>, "(dy, mask) -> dy mask / keep_prob",
                 AttrKind::kDropout));
  if constexpr (opSelected("Assign")) t.push_back({"Assign", OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeLikeFirst,
               floatNaryKernel<2, AssignFn>, "(ref, value) -> value, as the new ref"});
  if constexpr (opSelected("AssignAdd")) t.push_back({"AssignAdd", OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeLikeFirst,
               floatNaryKernel<2, AssignAddFn>, "(ref, value) -> ref + value, as the new ref"});
  if constexpr (opSelected("LambApplyWeightAssign")) t.push_back({"LambApplyWeightAssign", OpClass::kElementwise, 5, 5, 1, 1, AttrKind::kNone, dtypeFloatSame,
               shapeBroadcast, floatNaryKernel<5, LambApplyWeightFn>,
               "(w_norm, g_norm, lr, update, param) -> param - lr * trust_ratio * update"});
  if constexpr (opSelected("Adam")) t.push_back(optimizer("Adam", 10, 3, multiKernel<10, 3, AdamFn>,
                        "(var,m,v,b1^t,b2^t,lr,b1,b2,eps,grad) -> (var,m,v) updated", AttrKind::kOptimizer));
  if constexpr (opSelected("AdamWeightDecay")) t.push_back(optimizer("AdamWeightDecay", 9, 3, multiKernel<9, 3, AdamWeightDecayFn>,
                        "(var,m,v,lr,b1,b2,eps,decay,grad) -> (var,m,v) updated"));
  if constexpr (opSelected("ApplyMomentum")) t.push_back(optimizer("ApplyMomentum", 5, 2, multiKernel<5, 2, ApplyMomentumFn>,
                        "(var,accum,lr,grad,momentum) -> (var,accum) updated", AttrKind::kOptimizer));
  if constexpr (opSelected("AdamApplyOneWithDecay")) t.push_back(optimizer("AdamApplyOneWithDecay", 11, 3, multiKernel<11, 3, AdamApplyOneWithDecayFn>,
                        "(grad,v,m,var,lr,mul0..mul4,add2_y) -> (v,m,var) updated"));
  if constexpr (opSelected("LambApplyOptimizerAssign")) t.push_back(optimizer("LambApplyOptimizerAssign", 12, 3, multiKernel<12, 3, LambApplyOptimizerFn>,
                        "(grad,v,m,var,b1,1-b1,b2,1-b2,eps,steps,use_w,wd) -> (update,v,m)"));
  if constexpr (opSelected("Dropout")) t.push_back({"Dropout", OpClass::kOpaque, 1, 1, 1, 2, AttrKind::kDropout, dtypeDropout, shapeSame, dropoutKernel,
               "(x) -> (x * mask / keep_prob, mask), mask from mt19937_64(seed)"});
  if constexpr (opSelected("UniformReal")) t.push_back({"UniformReal", OpClass::kOpaque, 0, 0, 1, 1, AttrKind::kStandardNormal, dtypeStandardNormal,
               shapeStandardNormal, uniformRealKernel, "float32 U[0,1) samples of `shape` from mt19937_64(seed)"});
  if constexpr (opSelected("StandardNormal")) t.push_back({"StandardNormal", OpClass::kOpaque, 0, 0, 1, 1, AttrKind::kStandardNormal, dtypeStandardNormal,
               shapeStandardNormal, standardNormalKernel, "float32 N(0,1) samples of `shape` from mt19937_64(seed)"});
}

}  // namespace gkrt::ops
