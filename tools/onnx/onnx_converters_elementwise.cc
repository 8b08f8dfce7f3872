// Elementwise ONNX ops: math, activations, comparisons, logic, Cast.
#include <cmath>
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {

StatusOr<DType> onnxDType(const Node& n, int64_t t) {
  auto d = dtypeFromOnnx(static_cast<int>(t));
  if (!d.ok()) return d.status().withContext(n.op_type());
  return d;
}

namespace {

template <const char* kOp> Status unaryOp(Context& c, const Node& n, Outs& o) {
  o = {c.op1(kOp, {c.in(n, 0)})};
  return Status::Ok();
}
template <const char* kOp> Status binaryOp(Context& c, const Node& n, Outs& o) {
  o = {c.op1(kOp, {c.in(n, 0), c.in(n, 1)})};
  return Status::Ok();
}

#define NAME(var, text) constexpr char var[] = text
NAME(kAbs, "Abs"); NAME(kNeg, "Neg"); NAME(kExp, "Exp"); NAME(kLog, "Log"); NAME(kSqrt, "Sqrt");
NAME(kReciprocal, "Reciprocal"); NAME(kFloor, "Floor"); NAME(kCeil, "Ceil"); NAME(kRound, "Round");
NAME(kSin, "Sin"); NAME(kCos, "Cos"); NAME(kTan, "Tan"); NAME(kAsin, "Asin"); NAME(kAcos, "ACos");
NAME(kAtan, "Atan"); NAME(kSinh, "Sinh"); NAME(kCosh, "Cosh"); NAME(kAsinh, "Asinh"); NAME(kAcosh, "Acosh");
NAME(kTanh, "Tanh"); NAME(kSigmoid, "Sigmoid"); NAME(kRelu, "ReLU"); NAME(kSign, "Sign"); NAME(kErf, "Erf");
NAME(kIsNaN, "IsNan"); NAME(kNot, "LogicalNot"); NAME(kSoftsign, "Softsign"); NAME(kHardSwish, "HSwish");
NAME(kIdentity, "IdentityMath");
NAME(kAdd, "Add"); NAME(kSub, "Sub"); NAME(kMul, "Mul"); NAME(kEqual, "Equal");
NAME(kGreater, "Greater"); NAME(kGreaterEqual, "GreaterEqual"); NAME(kLess, "Less"); NAME(kLessEqual, "LessEqual");
NAME(kAnd, "LogicalAnd"); NAME(kOr, "LogicalOr"); NAME(kXor, "LogicalXor");
#undef NAME

// Float division is MindSpore's RealDiv, the op its CPU fusion table clusters (Div is
// not in that column); integers keep Div's truncating division.
Status divide(Context& c, const Node& n, Outs& o) {
  const Value a = c.in(n, 0);
  const bool real = a.id >= 0 && isFloat(dtypeOf(c, a));
  o = {c.op1(real ? "RealDiv" : "Div", {a, c.in(n, 1)})};
  return Status::Ok();
}

Status pow(Context& c, const Node& n, Outs& o) {
  Value base = c.in(n, 0), e = c.in(n, 1);
  if (dtypeOf(c, e) != dtypeOf(c, base)) e = c.op1("Cast", {e}, CastAttrs{dtypeOf(c, base)});
  o = {c.op1("Pow", {base, e})};
  return Status::Ok();
}
Status mod(Context& c, const Node& n, Outs& o) {
  o = {c.op1(attrInt(n, "fmod", 0) ? "Mod" : "FloorMod", {c.in(n, 0), c.in(n, 1)})};
  return Status::Ok();
}
Status where(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Select", {c.in(n, 0), c.in(n, 1), c.in(n, 2)})};
  return Status::Ok();
}
template <bool kMax> Status variadicMinMax(Context& c, const Node& n, Outs& o) {
  Value acc = c.in(n, 0);
  for (int k = 1; k < n.input_size(); ++k) acc = c.op1(kMax ? "Maximum" : "Minimum", {acc, c.in(n, k)});
  o = {acc};
  return Status::Ok();
}
Status sum(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(c.in(n, k));
  o = {ins.size() == 1 ? c.op1("IdentityMath", ins) : c.op1("AddN", ins)};
  return Status::Ok();
}
Status mean(Context& c, const Node& n, Outs& o) {
  RETURN_IF_ERROR(sum(c, n, o));
  o[0] = c.op1("Mul", {o[0], scalarLike(c, 1.0f / static_cast<float>(n.input_size()), o[0])});
  return Status::Ok();
}

Status leakyRelu(Context& c, const Node& n, Outs& o) {
  o = {c.op1("LeakyReLU", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 0.01f)})};
  return Status::Ok();
}
Status elu(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Elu", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 1.0f)})};
  return Status::Ok();
}
Status selu(Context& c, const Node& n, Outs& o) {
  Value e = c.op1("Elu", {c.in(n, 0)}, AlphaAttrs{attrFloat(n, "alpha", 1.67326319217681884765625f)});
  o = {c.op1("Mul", {e, scalarLike(c, attrFloat(n, "gamma", 1.05070102214813232421875f), e)})};
  return Status::Ok();
}
Status hardSigmoid(Context& c, const Node& n, Outs& o) {  // max(0, min(1, alpha x + beta))
  const float alpha = attrFloat(n, "alpha", 0.2f), beta = attrFloat(n, "beta", 0.5f);
  Value x = c.in(n, 0);
  Value lin = c.op1("Add", {c.op1("Mul", {x, scalarLike(c, alpha, x)}), scalarLike(c, beta, x)});
  o = {c.op1("Clip", {lin}, ClipAttrs{0.0f, 1.0f})};
  return Status::Ok();
}
Status softplus(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Softplus", {c.in(n, 0)}, SoftplusAttrs{1.0f, 20.0f})};
  return Status::Ok();
}
Status gelu(Context& c, const Node& n, Outs& o) {
  const std::string a = attrString(n, "approximate", "none");
  o = {c.op1("GeLU", {c.in(n, 0)}, GeluAttrs{a == "tanh" ? GeluApprox::kTanh : GeluApprox::kNone})};
  return Status::Ok();
}
Status prelu(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0), slope = c.in(n, 1);
  Value neg = c.op1("Less", {x, scalarLike(c, 0, x)});
  o = {c.op1("Select", {neg, c.op1("Mul", {x, slope}), x})};
  return Status::Ok();
}
Status isInf(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0), r = c.op1("IsInf", {x});
  if (!attrInt(n, "detect_negative", 1)) r = c.op1("LogicalAnd", {r, c.op1("Greater", {x, scalarLike(c, 0, x)})});
  if (!attrInt(n, "detect_positive", 1)) r = c.op1("LogicalAnd", {r, c.op1("Less", {x, scalarLike(c, 0, x)})});
  o = {r};
  return Status::Ok();
}
Status clip(Context& c, const Node& n, Outs& o) {
  if (!isFloat(dtypeOf(c, c.in(n, 0))) && c.opset() >= 11) {  // integers: exact, bounds in their own type
    Value y = c.in(n, 0);
    if (c.present(n, 1)) y = c.op1("Maximum", {y, c.in(n, 1)});
    if (c.present(n, 2)) y = c.op1("Minimum", {y, c.in(n, 2)});
    o = {y};
    return Status::Ok();
  }
  ClipAttrs a;
  if (c.opset() < 11) {
    a.min = attrFloat(n, "min", a.min);
    a.max = attrFloat(n, "max", a.max);
  } else {
    if (c.present(n, 1)) {
      ASSIGN_OR_RETURN(a.min, c.constFloat(c.in(n, 1), "Clip min"));
    }
    if (c.present(n, 2)) {
      ASSIGN_OR_RETURN(a.max, c.constFloat(c.in(n, 2), "Clip max"));
    }
  }
  if (!isFloat(dtypeOf(c, c.in(n, 0)))) return unsupported(n, "integer inputs are not supported");
  o = {c.op1("Clip", {c.in(n, 0)}, a)};
  return Status::Ok();
}


// `saturate` (opset 19) and `round_mode` (opset 24, float8e8m0 only) of Cast/CastLike.
StatusOr<CastAttrs> castAttrs(const Node& n, DType to) {
  CastAttrs a{to, attrInt(n, "saturate", 1) != 0};
  const std::string mode = attrString(n, "round_mode", "up");
  if (mode == "up") a.e8m0_rounding = E8M0Rounding::kUp;
  else if (mode == "down") a.e8m0_rounding = E8M0Rounding::kDown;
  else if (mode == "nearest") a.e8m0_rounding = E8M0Rounding::kNearest;
  else return makeError(StatusCode::kInvalidModel, n.op_type(), ": round_mode '", mode, "' is not up, down or nearest");
  return a;
}
// int8 weights widened in the graph (weight-only quantization: Cast, then Mul by the
// scales) stay 8 bits in the .gkm: the Cast is kept, so neither it nor its Mul is folded
// here; the session's ConstantFolding widens them, or int8_weight_dynamic_quant keeps them.
bool int8Weights(Context& c, Value x, DType to) {
  const DType from = dtypeOf(c, x);
  return c.isConstant(x) && (from == DType::kInt8 || from == DType::kUInt8) && isFloat(to) &&
         shapeOf(c, x).size() >= 2 && numElements(shapeOf(c, x)) >= 4096;
}
Status cast(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(DType to, onnxDType(n, attrInt(n, "to", 1)));
  ASSIGN_OR_RETURN(CastAttrs a, castAttrs(n, to));
  const Value x = c.in(n, 0);
  o = {int8Weights(c, x, to) ? c.builder().op("Cast", {x}, a, 1)[0] : c.op1("Cast", {x}, a)};
  return Status::Ok();
}
Status castLike(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(CastAttrs a, castAttrs(n, dtypeOf(c, c.in(n, 1))));
  o = {c.op1("Cast", {c.in(n, 0)}, a)};
  return Status::Ok();
}
// Inference: the identity, and an all-true mask. training_mode must be absent or false.
Status dropout(Context& c, const Node& n, Outs& o) {
  if (c.present(n, 2)) {
    ASSIGN_OR_RETURN(Ints training, c.constInts(c.in(n, 2), "Dropout training_mode"));
    if (!training.empty() && training[0]) return unsupported(n, "training_mode=true is not supported");
  }
  Value x = c.in(n, 0);
  HostTensor yes(DType::kBool, {});
  yes.as<uint8_t>()[0] = 1;
  o = {c.op1("IdentityMath", {x}), c.op1("BroadcastTo", {c.constant(yes)}, ShapeAttrs{shapeOf(c, x)})};
  return Status::Ok();
}

}  // namespace

void registerElementwiseConverters(std::map<std::string, Converter>& t) {
  t["Abs"] = unaryOp<kAbs>;
  t["Neg"] = unaryOp<kNeg>;
  t["Exp"] = unaryOp<kExp>;
  t["Log"] = unaryOp<kLog>;
  t["Sqrt"] = unaryOp<kSqrt>;
  t["Reciprocal"] = unaryOp<kReciprocal>;
  t["Floor"] = unaryOp<kFloor>;
  t["Ceil"] = unaryOp<kCeil>;
  t["Round"] = unaryOp<kRound>;
  t["Sin"] = unaryOp<kSin>;
  t["Cos"] = unaryOp<kCos>;
  t["Tan"] = unaryOp<kTan>;
  t["Asin"] = unaryOp<kAsin>;
  t["Acos"] = unaryOp<kAcos>;
  t["Atan"] = unaryOp<kAtan>;
  t["Sinh"] = unaryOp<kSinh>;
  t["Cosh"] = unaryOp<kCosh>;
  t["Asinh"] = unaryOp<kAsinh>;
  t["Acosh"] = unaryOp<kAcosh>;
  t["Tanh"] = unaryOp<kTanh>;
  t["Sigmoid"] = unaryOp<kSigmoid>;
  t["Relu"] = unaryOp<kRelu>;
  t["Sign"] = unaryOp<kSign>;
  t["Erf"] = unaryOp<kErf>;
  t["IsNaN"] = unaryOp<kIsNaN>;
  t["Not"] = unaryOp<kNot>;
  t["Softsign"] = unaryOp<kSoftsign>;
  t["HardSwish"] = unaryOp<kHardSwish>;
  t["Identity"] = unaryOp<kIdentity>;
  t["Add"] = binaryOp<kAdd>;
  t["Sub"] = binaryOp<kSub>;
  t["Mul"] = binaryOp<kMul>;
  t["Div"] = divide;
  t["Equal"] = binaryOp<kEqual>;
  t["Greater"] = binaryOp<kGreater>;
  t["GreaterOrEqual"] = binaryOp<kGreaterEqual>;
  t["Less"] = binaryOp<kLess>;
  t["LessOrEqual"] = binaryOp<kLessEqual>;
  t["And"] = binaryOp<kAnd>;
  t["Or"] = binaryOp<kOr>;
  t["Xor"] = binaryOp<kXor>;
  t["Pow"] = pow;
  t["Mod"] = mod;
  t["Where"] = where;
  t["Max"] = variadicMinMax<true>;
  t["Min"] = variadicMinMax<false>;
  t["Sum"] = sum;
  t["Mean"] = mean;
  t["LeakyRelu"] = leakyRelu;
  t["Elu"] = elu;
  t["Selu"] = selu;
  t["HardSigmoid"] = hardSigmoid;
  t["Softplus"] = softplus;
  t["Gelu"] = gelu;
  t["PRelu"] = prelu;
  t["IsInf"] = isInf;
  t["Clip"] = clip;
  t["Cast"] = cast;
  t["CastLike"] = castLike;
  t["Dropout"] = dropout;
}

}  // namespace gkrt::onnx_import
