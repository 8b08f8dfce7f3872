// ONNX activations written as gkrt's elementwise ops (so the fusion tables cluster
// them like any chain of basic ops): Celu, Mish, ThresholdedRelu, Shrink, Swish, Atanh.
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

// alpha * Elu(x / alpha) = x > 0 ? x : alpha (e^(x/alpha) - 1).
Status celu(Context& c, const Node& n, Outs& o) {
  const float alpha = attrFloat(n, "alpha", 1.0f);
  if (alpha == 0.0f) return unsupported(n, "alpha must not be 0");
  const Value x = c.in(n, 0);
  const Value e = c.op1("Elu", {c.op1("Mul", {x, scalarLike(c, 1.0f / alpha, x)})}, AlphaAttrs{1.0f});
  o = {c.op1("Mul", {e, scalarLike(c, alpha, x)})};
  return Status::Ok();
}
// x tanh(softplus(x)).
Status mish(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  o = {c.op1("Mul", {x, c.op1("Tanh", {c.op1("Softplus", {x}, SoftplusAttrs{1.0f, 20.0f})})})};
  return Status::Ok();
}
Status thresholdedRelu(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Value above = c.op1("Greater", {x, scalarLike(c, attrFloat(n, "alpha", 1.0f), x)});
  o = {c.op1("Select", {above, x, scalarLike(c, 0.0f, x)})};
  return Status::Ok();
}
// x < -lambd ? x + bias : x > lambd ? x - bias : 0.
Status shrink(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const float lambd = attrFloat(n, "lambd", 0.5f), bias = attrFloat(n, "bias", 0.0f);
  const Value hi = c.op1("Select", {c.op1("Greater", {x, scalarLike(c, lambd, x)}),
                                    c.op1("Sub", {x, scalarLike(c, bias, x)}), scalarLike(c, 0.0f, x)});
  o = {c.op1("Select", {c.op1("Less", {x, scalarLike(c, -lambd, x)}), c.op1("Add", {x, scalarLike(c, bias, x)}), hi})};
  return Status::Ok();
}
Status swish(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  o = {c.op1("Mul", {x, c.op1("Sigmoid", {c.op1("Mul", {x, scalarLike(c, attrFloat(n, "alpha", 1.0f), x)})})})};
  return Status::Ok();
}
// (ln(1 + x) - ln(1 - x)) / 2.
Status atanh(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Value d = c.op1("Sub", {c.op1("Log1p", {x}), c.op1("Log1p", {c.op1("Neg", {x})})});
  o = {c.op1("Mul", {d, scalarLike(c, 0.5f, x)})};
  return Status::Ok();
}

}  // namespace

void registerActivationConverters(std::map<std::string, Converter>& t) {
  t["Celu"] = celu;
  t["Mish"] = mish;
  t["ThresholdedRelu"] = thresholdedRelu;
  t["Shrink"] = shrink;
  t["Swish"] = swish;
  t["Atanh"] = atanh;
}

}  // namespace gkrt::onnx_import
