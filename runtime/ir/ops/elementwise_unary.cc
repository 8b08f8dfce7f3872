// Elementwise ops of one input: float math, activations, numeric sign ops, predicates,
// Cast. Float math is computed in float32 (float16 storage is widened and narrowed).
#include <cmath>
#include <limits>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
constexpr float kFastGeluAlpha = 1.702f;

template <class F> Status floatUnaryKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const int64_t n = x.size();
  for (int64_t i = 0; i < n; ++i) storeF(y.data, y.dtype, i, f(loadF(x.data, x.dtype, i)));
  return Status::Ok();
}

// Functor with `template <class T> T op(T)`, applied in the tensor's own type for
// integers and in float32 for float types.
template <class F> Status numericUnaryKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const int64_t n = x.size();
  if (isFloat(x.dtype)) {
    for (int64_t i = 0; i < n; ++i) storeF(y.data, y.dtype, i, f(loadF(x.data, x.dtype, i)));
    return Status::Ok();
  }
  withIntegerType(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) y.as<T>()[i] = f(x.as<T>()[i]);
  });
  return Status::Ok();
}

#define FLOAT_FN(Name, expr)                          \
  struct Name {                                       \
    const Attrs& attrs;                               \
    float operator()(float x) const { return expr; }  \
  }
FLOAT_FN(ExpFn, std::exp(x));
FLOAT_FN(LogFn, std::log(x));
FLOAT_FN(SqrtFn, std::sqrt(x));
FLOAT_FN(RsqrtFn, 1.0f / std::sqrt(x));
FLOAT_FN(ReciprocalFn, 1.0f / x);
FLOAT_FN(FloorFn, std::floor(x));
FLOAT_FN(CeilFn, std::ceil(x));
FLOAT_FN(TruncFn, std::trunc(x));
FLOAT_FN(RoundFn, std::nearbyint(x));
FLOAT_FN(SinFn, std::sin(x));
FLOAT_FN(CosFn, std::cos(x));
FLOAT_FN(TanFn, std::tan(x));
FLOAT_FN(TanhFn, std::tanh(x));
FLOAT_FN(AcosFn, std::acos(x));
FLOAT_FN(AcoshFn, std::acosh(x));
FLOAT_FN(AsinFn, std::asin(x));
FLOAT_FN(AsinhFn, std::asinh(x));
FLOAT_FN(AtanFn, std::atan(x));
FLOAT_FN(CoshFn, std::cosh(x));
FLOAT_FN(SinhFn, std::sinh(x));
FLOAT_FN(ErfFn, std::erf(x));
FLOAT_FN(ErfcFn, std::erfc(x));
FLOAT_FN(Expm1Fn, std::expm1(x));
FLOAT_FN(Log1pFn, std::log1p(x));
FLOAT_FN(SigmoidFn, 1.0f / (1.0f + std::exp(-x)));
FLOAT_FN(SiLUFn, x / (1.0f + std::exp(-x)));
FLOAT_FN(FastGeLUFn, x * std::exp(0.5f * kFastGeluAlpha * (x - std::fabs(x))) /
                         (1.0f + std::exp(-kFastGeluAlpha * std::fabs(x))));
FLOAT_FN(ReLU6Fn, std::min(std::max(x, 0.0f), 6.0f));
FLOAT_FN(HSigmoidFn, std::min(std::max(x / 6.0f + 0.5f, 0.0f), 1.0f));
FLOAT_FN(HSwishFn, x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f);
FLOAT_FN(SoftsignFn, x / (1.0f + std::fabs(x)));
#undef FLOAT_FN

struct GeLUFn {
  const Attrs& attrs;
  float operator()(float x) const {
    if (attrs.get<GeluAttrs>().approximate == GeluApprox::kNone) return 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
};
struct SoftplusFn {
  const Attrs& attrs;
  float operator()(float x) const {
    const auto& a = attrs.get<SoftplusAttrs>();
    const float bx = a.beta * x;
    return bx > a.threshold ? x : std::log1p(std::exp(bx)) / a.beta;
  }
};
struct LeakyReLUFn {
  const Attrs& attrs;
  float operator()(float x) const { return x < 0.0f ? attrs.get<AlphaAttrs>().alpha * x : x; }
};
struct EluFn {
  const Attrs& attrs;
  float operator()(float x) const { return x > 0.0f ? x : attrs.get<AlphaAttrs>().alpha * std::expm1(x); }
};
struct HShrinkFn {
  const Attrs& attrs;
  float operator()(float x) const { return std::fabs(x) > attrs.get<AlphaAttrs>().alpha ? x : 0.0f; }
};
struct ClipFn {
  const Attrs& attrs;
  float operator()(float x) const {
    const auto& a = attrs.get<ClipAttrs>();
    return std::min(std::max(x, a.min), a.max);
  }
};

#define NUMERIC_FN(Name, expr)                            \
  struct Name {                                           \
    const Attrs& attrs;                                   \
    template <class T> T operator()(T x) const { return static_cast<T>(expr); } \
  }
NUMERIC_FN(AbsFn, x < T(0) ? T(-x) : x);
NUMERIC_FN(NegFn, -x);
NUMERIC_FN(SignFn, (x > T(0)) - (x < T(0)));
NUMERIC_FN(SquareFn, x * x);
NUMERIC_FN(ReLUFn, !(x <= T(0)) ? x : T(0));  // NaN passes through, as max(x, 0) in numpy/ONNX
NUMERIC_FN(OnesLikeFn, 1);
NUMERIC_FN(ZerosLikeFn, 0);
#undef NUMERIC_FN

Status identityKernel(const KernelContext& c) {
  const size_t bytes = c.in(0).size() * dtypeSize(c.in(0).dtype);
  if (bytes) std::memcpy(c.out(0).data, c.in(0).data, bytes);
  return Status::Ok();
}

template <bool (*Pred)(float)> Status predicateKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  uint8_t* y = c.out(0).as<uint8_t>();
  for (int64_t i = 0, n = x.size(); i < n; ++i) y[i] = Pred(loadF(x.data, x.dtype, i));
  return Status::Ok();
}
bool isFinite(float x) { return std::isfinite(x); }
bool isInf(float x) { return std::isinf(x); }
bool isNan(float x) { return std::isnan(x); }

Status logicalNotKernel(const KernelContext& c) {
  const uint8_t* x = c.in(0).as<uint8_t>();
  uint8_t* y = c.out(0).as<uint8_t>();
  for (int64_t i = 0, n = c.in(0).size(); i < n; ++i) y[i] = !x[i];
  return Status::Ok();
}

// Float-to-int casts truncate toward zero and saturate (NaN -> 0); to bool is "!= 0".
// 16-bit floats go through float32; every other pair converts directly.
Status castKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const int64_t n = x.size();
  if (y.dtype == DType::kBool) {
    const size_t es = dtypeSize(x.dtype);
    const auto* xb = static_cast<const uint8_t*>(x.data);
    if (isFloat(x.dtype) || isNarrowFloat(x.dtype)) {
      for (int64_t i = 0; i < n; ++i) y.as<uint8_t>()[i] = loadF(x.data, x.dtype, i) != 0.0f;
    } else {  // any nonzero byte: exact for every integer width
      for (int64_t i = 0; i < n; ++i) {
        bool nz = false;
        for (size_t k = 0; k < es; ++k) nz |= xb[i * es + k] != 0;
        y.as<uint8_t>()[i] = nz;
      }
    }
    return Status::Ok();
  }
  if (isNarrowFloat(y.dtype)) {  // ONNX Cast: round to nearest even, `saturate`, e8m0's rounding mode
    const CastAttrs& a = c.node.attrs.get<CastAttrs>();
    for (int64_t i = 0; i < n; ++i) y.as<uint8_t>()[i] = floatToNarrow(loadF(x.data, x.dtype, i), y.dtype, a.saturate, a.e8m0_rounding);
    return Status::Ok();
  }
  if (isNarrowInteger(y.dtype)) {  // truncate toward zero, then wrap to the low bits (as ONNX's reference)
    const bool from_float = isFloat(x.dtype) || isNarrowFloat(x.dtype);
    for (int64_t i = 0; i < n; ++i) {
      y.as<int8_t>()[i] = from_float ? static_cast<int8_t>(floatToNarrow(loadF(x.data, x.dtype, i), y.dtype))
                                     : wrapToNarrowInt(loadIndex(x, i), y.dtype);
    }
    return Status::Ok();
  }
  if (is16BitFloat(x.dtype) || is16BitFloat(y.dtype) || isNarrowFloat(x.dtype)) {
    for (int64_t i = 0; i < n; ++i) storeF(y.data, y.dtype, i, loadF(x.data, x.dtype, i));
    return Status::Ok();
  }
  withStorageType(x.dtype, [&](auto s) {
    using S = decltype(s);
    withStorageType(y.dtype, [&](auto d) {
      using D = decltype(d);
      for (int64_t i = 0; i < n; ++i) {
        const S v = x.as<S>()[i];
        y.as<D>()[i] = x.dtype == DType::kBool ? D(v != 0) : castValue<D>(v);
      }
    });
  });
  return Status::Ok();
}

Status dtypeCast(const ir::Node& n, const In&, std::vector<DType>& out) {
  out = {n.attrs.get<CastAttrs>().to};
  return Status::Ok();
}

OpDef floatOp(const char* name, ReferenceKernel k, const char* summary, AttrKind a = AttrKind::kNone) {
  return {name, OpClass::kElementwise, 1, 1, 1, 1, a, dtypeFloatSame, shapeSame, k, summary};
}
OpDef numericOp(const char* name, ReferenceKernel k, const char* summary) {
  return {name, OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeNumericSame, shapeSame, k, summary};
}

}  // namespace

void registerElementwiseUnaryOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Exp")) t.push_back(floatOp("Exp", floatUnaryKernel<ExpFn>, "e^x"));
  if constexpr (opSelected("Log")) t.push_back(floatOp("Log", floatUnaryKernel<LogFn>, "ln x"));
  if constexpr (opSelected("Sqrt")) t.push_back(floatOp("Sqrt", floatUnaryKernel<SqrtFn>, "sqrt(x)"));
  if constexpr (opSelected("Rsqrt")) t.push_back(floatOp("Rsqrt", floatUnaryKernel<RsqrtFn>, "1/sqrt(x)"));
  if constexpr (opSelected("Reciprocal")) t.push_back(floatOp("Reciprocal", floatUnaryKernel<ReciprocalFn>, "1/x"));
  if constexpr (opSelected("Floor")) t.push_back(floatOp("Floor", floatUnaryKernel<FloorFn>, "floor(x)"));
  if constexpr (opSelected("Ceil")) t.push_back(floatOp("Ceil", floatUnaryKernel<CeilFn>, "ceil(x)"));
  if constexpr (opSelected("Trunc")) t.push_back(floatOp("Trunc", floatUnaryKernel<TruncFn>, "x rounded toward zero"));
  if constexpr (opSelected("Round")) t.push_back(floatOp("Round", floatUnaryKernel<RoundFn>, "x rounded half to even"));
  if constexpr (opSelected("Sin")) t.push_back(floatOp("Sin", floatUnaryKernel<SinFn>, "sin(x)"));
  if constexpr (opSelected("Cos")) t.push_back(floatOp("Cos", floatUnaryKernel<CosFn>, "cos(x)"));
  if constexpr (opSelected("Tan")) t.push_back(floatOp("Tan", floatUnaryKernel<TanFn>, "tan(x)"));
  if constexpr (opSelected("Tanh")) t.push_back(floatOp("Tanh", floatUnaryKernel<TanhFn>, "tanh(x)"));
  if constexpr (opSelected("ACos")) t.push_back(floatOp("ACos", floatUnaryKernel<AcosFn>, "acos(x)"));
  if constexpr (opSelected("Acosh")) t.push_back(floatOp("Acosh", floatUnaryKernel<AcoshFn>, "acosh(x)"));
  if constexpr (opSelected("Asin")) t.push_back(floatOp("Asin", floatUnaryKernel<AsinFn>, "asin(x)"));
  if constexpr (opSelected("Asinh")) t.push_back(floatOp("Asinh", floatUnaryKernel<AsinhFn>, "asinh(x)"));
  if constexpr (opSelected("Atan")) t.push_back(floatOp("Atan", floatUnaryKernel<AtanFn>, "atan(x)"));
  if constexpr (opSelected("Cosh")) t.push_back(floatOp("Cosh", floatUnaryKernel<CoshFn>, "cosh(x)"));
  if constexpr (opSelected("Sinh")) t.push_back(floatOp("Sinh", floatUnaryKernel<SinhFn>, "sinh(x)"));
  if constexpr (opSelected("Erf")) t.push_back(floatOp("Erf", floatUnaryKernel<ErfFn>, "erf(x)"));
  if constexpr (opSelected("Erfc")) t.push_back(floatOp("Erfc", floatUnaryKernel<ErfcFn>, "1 - erf(x)"));
  if constexpr (opSelected("Expm1")) t.push_back(floatOp("Expm1", floatUnaryKernel<Expm1Fn>, "e^x - 1"));
  if constexpr (opSelected("Log1p")) t.push_back(floatOp("Log1p", floatUnaryKernel<Log1pFn>, "ln(1 + x)"));
  if constexpr (opSelected("Sigmoid")) t.push_back(floatOp("Sigmoid", floatUnaryKernel<SigmoidFn>, "1/(1+e^-x)"));
  if constexpr (opSelected("SiLU")) t.push_back(floatOp("SiLU", floatUnaryKernel<SiLUFn>, "x*sigmoid(x)"));
  if constexpr (opSelected("GeLU")) t.push_back(floatOp("GeLU", floatUnaryKernel<GeLUFn>,
                      "tanh: 0.5x(1+tanh(0.79788456(x+0.044715x^3))); none: 0.5x(1+erf(x/sqrt2))", AttrKind::kGelu));
  if constexpr (opSelected("FastGeLU")) t.push_back(floatOp("FastGeLU", floatUnaryKernel<FastGeLUFn>, "x*exp(0.851(x-|x|))/(1+exp(-1.702|x|))"));
  if constexpr (opSelected("ReLU6")) t.push_back(floatOp("ReLU6", floatUnaryKernel<ReLU6Fn>, "min(max(x,0),6)"));
  if constexpr (opSelected("HSigmoid")) t.push_back(floatOp("HSigmoid", floatUnaryKernel<HSigmoidFn>, "clamp(x/6+0.5, 0, 1)"));
  if constexpr (opSelected("HSwish")) t.push_back(floatOp("HSwish", floatUnaryKernel<HSwishFn>, "x*min(max(x+3,0),6)/6"));
  if constexpr (opSelected("Softsign")) t.push_back(floatOp("Softsign", floatUnaryKernel<SoftsignFn>, "x/(1+|x|)"));
  if constexpr (opSelected("Softplus")) t.push_back(floatOp("Softplus", floatUnaryKernel<SoftplusFn>, "log(1+e^(beta x))/beta, x where beta x > threshold",
                      AttrKind::kSoftplus));
  if constexpr (opSelected("LeakyReLU")) t.push_back(floatOp("LeakyReLU", floatUnaryKernel<LeakyReLUFn>, "x<0 ? alpha x : x", AttrKind::kAlpha));
  if constexpr (opSelected("Elu")) t.push_back(floatOp("Elu", floatUnaryKernel<EluFn>, "x>0 ? x : alpha(e^x-1)", AttrKind::kAlpha));
  if constexpr (opSelected("HShrink")) t.push_back(floatOp("HShrink", floatUnaryKernel<HShrinkFn>, "|x|>alpha ? x : 0 (alpha = lambd)", AttrKind::kAlpha));
  if constexpr (opSelected("Clip")) t.push_back(floatOp("Clip", floatUnaryKernel<ClipFn>, "min(max(x, min), max)", AttrKind::kClip));
  if constexpr (opSelected("Abs")) t.push_back(numericOp("Abs", numericUnaryKernel<AbsFn>, "|x|"));
  if constexpr (opSelected("Neg")) t.push_back(numericOp("Neg", numericUnaryKernel<NegFn>, "-x"));
  if constexpr (opSelected("Sign")) t.push_back(numericOp("Sign", numericUnaryKernel<SignFn>, "-1, 0 or 1"));
  if constexpr (opSelected("Square")) t.push_back(numericOp("Square", numericUnaryKernel<SquareFn>, "x*x"));
  if constexpr (opSelected("ReLU")) t.push_back(numericOp("ReLU", numericUnaryKernel<ReLUFn>, "max(x, 0), NaN propagates"));
  if constexpr (opSelected("OnesLike")) t.push_back(numericOp("OnesLike", numericUnaryKernel<OnesLikeFn>, "ones of x's shape and dtype"));
  if constexpr (opSelected("ZerosLike")) t.push_back(numericOp("ZerosLike", numericUnaryKernel<ZerosLikeFn>, "zeros of x's shape and dtype"));
  if constexpr (opSelected("IdentityMath")) t.push_back({"IdentityMath", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeFirst, shapeSame,
               identityKernel, "x"});
  if constexpr (opSelected("IsFinite")) t.push_back({"IsFinite", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeFloatToBool, shapeSame,
               predicateKernel<isFinite>, "x is neither inf nor nan"});
  if constexpr (opSelected("IsInf")) t.push_back({"IsInf", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeFloatToBool, shapeSame,
               predicateKernel<isInf>, "x is +-inf"});
  if constexpr (opSelected("IsNan")) t.push_back({"IsNan", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeFloatToBool, shapeSame,
               predicateKernel<isNan>, "x is nan"});
  if constexpr (opSelected("LogicalNot")) t.push_back({"LogicalNot", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kNone, dtypeLogical, shapeSame,
               logicalNotKernel, "!x"});
  if constexpr (opSelected("Cast")) t.push_back({"Cast", OpClass::kElementwise, 1, 1, 1, 1, AttrKind::kCast, dtypeCast, shapeSame, castKernel,
               "x converted to `to`; float->int truncates and saturates (4-/2-bit ints wrap); to float8/float4: round to nearest even, `saturate`"});
}

}  // namespace gkrt::ops
