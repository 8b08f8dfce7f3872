// ONNX LSTM, GRU and RNN: one gkrt op each, with the ONNX inputs unchanged and the
// attributes as RecurrentAttrs (activations resolved to one function, alpha and beta per
// direction, as onnxruntime reads them).
#include <algorithm>
#include <cctype>
#include <map>

#include "runtime/ir/ops/recurrent.h"
#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {

namespace {

struct ActivationUse {
  bool alpha, beta;
};

// Which of alpha and beta each activation reads from the attribute lists.
ActivationUse activationUse(RnnActivation fn) {
  switch (fn) {
    case RnnActivation::kAffine:
    case RnnActivation::kScaledTanh:
    case RnnActivation::kHardSigmoid:
      return {true, true};
    case RnnActivation::kLeakyRelu:
    case RnnActivation::kThresholdedRelu:
    case RnnActivation::kElu:
      return {true, false};
    default:
      return {false, false};
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

StatusOr<RnnActivation> activationNamed(const Node& n, const std::string& name) {
  const int count = EnumNames<RnnActivation>::count;
  std::string valid;
  for (int i = 0; i < count; ++i) {
    if (lower(name) == lower(EnumNames<RnnActivation>::names[i])) return static_cast<RnnActivation>(i);
    valid += std::string(i ? ", " : "") + EnumNames<RnnActivation>::names[i];
  }
  return unsupported(n, "activation '" + name + "' is not one ONNX defines for recurrent ops (" + valid + ")");
}

StatusOr<RecurrentAttrs> recurrentAttrs(const Node& n, size_t per_direction) {
  RecurrentAttrs a;
  const std::string direction = attrString(n, "direction", "forward");
  if (direction == "forward")
    a.direction = RnnDirection::kForward;
  else if (direction == "reverse")
    a.direction = RnnDirection::kReverse;
  else if (direction == "bidirectional")
    a.direction = RnnDirection::kBidirectional;
  else
    return unsupported(n, "direction '" + direction + "' (valid: forward, reverse, bidirectional)");
  const size_t dirs = a.direction == RnnDirection::kBidirectional ? 2 : 1;
  a.hidden_size = attrInt(n, "hidden_size", 0);
  a.layout = attrInt(n, "layout", 0);
  if (a.layout != 0 && a.layout != 1) return unsupported(n, "layout " + std::to_string(a.layout) + " (valid: 0, 1)");
  if (findAttr(n, "clip")) {
    a.clip = attrFloat(n, "clip", 0.0f);
    if (!(a.clip > 0.0f)) return unsupported(n, "clip must be a positive threshold, got " + std::to_string(a.clip));
  }
  a.input_forget = attrInt(n, "input_forget", 0) != 0;
  a.linear_before_reset = attrInt(n, "linear_before_reset", 0) != 0;
  if (const auto* acts = findAttr(n, "activations")) {
    const size_t given = static_cast<size_t>(acts->strings_size());
    if (given != per_direction && given != per_direction * dirs) {
      return unsupported(n, "activations lists " + std::to_string(given) + " functions; " + n.op_type() + " takes " +
                                std::to_string(per_direction) + " per direction (" +
                                std::to_string(per_direction * dirs) + " for " + direction + ")");
    }
    std::vector<float> alphas, betas;
    if (const auto* al = findAttr(n, "activation_alpha")) alphas.assign(al->floats().begin(), al->floats().end());
    if (const auto* be = findAttr(n, "activation_beta")) betas.assign(be->floats().begin(), be->floats().end());
    size_t next_alpha = 0, next_beta = 0;
    for (size_t i = 0; i < per_direction * dirs; ++i) {
      ASSIGN_OR_RETURN(RnnActivation fn, activationNamed(n, acts->strings(static_cast<int>(i % given))));
      const ops::Activation def = ops::defaultActivation(fn);
      const ActivationUse use = activationUse(fn);
      a.activations.push_back(fn);
      a.activation_alpha.push_back(use.alpha && next_alpha < alphas.size() ? alphas[next_alpha++] : def.alpha);
      a.activation_beta.push_back(use.beta && next_beta < betas.size() ? betas[next_beta++] : def.beta);
    }
  }
  return a;
}

// Inputs up to the last present one, absent ones as Value{-1}.
std::vector<Value> presentInputs(Context& c, const Node& n, int max_inputs) {
  std::vector<Value> ins;
  for (int k = 0; k < std::min(n.input_size(), max_inputs); ++k) ins.push_back(c.in(n, k));
  while (ins.size() > 3 && ins.back().id < 0) ins.pop_back();
  return ins;
}

Status recurrent(Context& c, const Node& n, Outs& o, const char* op, size_t per_direction, int max_inputs,
                 int outputs) {
  if (n.input_size() < 3 || !c.present(n, 0) || !c.present(n, 1) || !c.present(n, 2)) {
    return unsupported(n, "needs inputs X, W and R");
  }
  if (!isFloat(dtypeOf(c, c.in(n, 0)))) return unsupported(n, "X must be a float tensor");
  ASSIGN_OR_RETURN(RecurrentAttrs a, recurrentAttrs(n, per_direction));
  o = c.op(op, presentInputs(c, n, max_inputs), a, outputs);
  return Status::Ok();
}

Status lstm(Context& c, const Node& n, Outs& o) { return recurrent(c, n, o, "LSTM", 3, 8, 3); }
Status gru(Context& c, const Node& n, Outs& o) { return recurrent(c, n, o, "GRU", 2, 6, 2); }
Status rnn(Context& c, const Node& n, Outs& o) { return recurrent(c, n, o, "RNN", 1, 6, 2); }

}  // namespace

// Its 12 inputs as they are (W and R int8/uint8, transposed against LSTM's), LSTM's
// attributes; gkrt's op computes it as onnxruntime does (runtime/ir/ops/recurrent_quant.h).
Status convertDynamicQuantizeLstm(Context& c, const Node& n, Outs& o) {
  if (n.input_size() < 12) return unsupported(n, "needs W_scale, W_zero_point, R_scale and R_zero_point (inputs 8-11)");
  for (int k : {0, 1, 2, 8, 9, 10, 11}) {
    if (!c.present(n, k)) return unsupported(n, "input " + std::to_string(k) + " is required");
  }
  if (!isFloat(dtypeOf(c, c.in(n, 0)))) return unsupported(n, "X must be a float tensor");
  ASSIGN_OR_RETURN(RecurrentAttrs a, recurrentAttrs(n, 3));
  std::vector<Value> ins;
  for (int k = 0; k < 12; ++k) ins.push_back(c.in(n, k));
  o = c.op("DynamicQuantizeLSTM", ins, a, 3);
  o.resize(std::min<size_t>(o.size(), static_cast<size_t>(n.output_size())));
  return Status::Ok();
}

void registerRecurrentConverters(std::map<std::string, Converter>& t) {
  t["LSTM"] = lstm;
  t["GRU"] = gru;
  t["RNN"] = rnn;
}

}  // namespace gkrt::onnx_import
