// What the reference kernels of LSTM, GRU and RNN (runtime/ir/ops/recurrent.cc) and the
// cpu backend's recurrent kernel share: the ONNX activation functions, and a node's
// dimensions and per-direction activations resolved once.
//
//   ASSIGN_OR_RETURN(RecurrentSpec s, recurrentSpec(node, x_shape, r_shape));
//   float y = applyActivation(s.act[d][0], pre);   // f of direction d
//
// Layouts follow ONNX: layout 0 has X [seq, batch, input], Y [seq, dirs, batch, hidden],
// Y_h / Y_c / initial states [dirs, batch, hidden]; layout 1 puts batch first
// (X [batch, seq, input], Y [batch, seq, dirs, hidden], states [batch, dirs, hidden]).
// Gate order in W / R / B is ONNX's: LSTM i, o, f, c; GRU z, r, h; RNN one gate.
#pragma once

#include <cmath>
#include <vector>

#include "runtime/ir/attrs.h"
#include "runtime/ir/graph.h"
#include "runtime/ir/shape.h"

namespace gkrt::ops {

enum class RecurrentKind : uint8_t { kRnn = 0, kGru, kLstm };

// One activation with its alpha and beta resolved (defaults of the ONNX op of that name).
struct Activation {
  RnnActivation fn = RnnActivation::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;
};

inline float applyActivation(const Activation& a, float x) {
  switch (a.fn) {
    case RnnActivation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case RnnActivation::kTanh:
      return std::tanh(x);
    case RnnActivation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case RnnActivation::kAffine:
      return a.alpha * x + a.beta;
    case RnnActivation::kLeakyRelu:
      return x < 0.0f ? a.alpha * x : x;
    case RnnActivation::kThresholdedRelu:
      return x > a.alpha ? x : 0.0f;
    case RnnActivation::kScaledTanh:
      return a.alpha * std::tanh(a.beta * x);
    case RnnActivation::kHardSigmoid:
      return std::fmax(0.0f, std::fmin(1.0f, a.alpha * x + a.beta));
    case RnnActivation::kElu:
      return x < 0.0f ? a.alpha * (std::exp(x) - 1.0f) : x;
    case RnnActivation::kSoftsign:
      return x / (1.0f + std::fabs(x));
    case RnnActivation::kSoftplus:
      return x > 20.0f ? x : std::log1p(std::exp(x));
  }
  return x;
}

// Alpha and beta an activation takes when the model gives none.
Activation defaultActivation(RnnActivation fn);

struct RecurrentSpec {
  RecurrentKind kind = RecurrentKind::kRnn;
  int64_t gates = 1;       // 1 (RNN), 3 (GRU), 4 (LSTM)
  int64_t directions = 1;  // 2 when bidirectional
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  bool batch_first = false;  // layout 1
  float clip = 0.0f;         // 0: none
  bool input_forget = false;
  bool linear_before_reset = false;
  std::vector<std::vector<Activation>> act;  // [direction][f, g, h as the op uses them]

  bool reverse_only = false;  // direction == reverse: one direction, run backwards
  // Whether direction d walks the sequence from its end.
  bool reversed(int64_t d) const { return d == 1 || reverse_only; }

  // Flat element offsets in the ONNX layouts.
  int64_t xIndex(int64_t t, int64_t b) const { return (batch_first ? b * seq + t : t * batch + b) * input; }
  int64_t yIndex(int64_t t, int64_t d, int64_t b) const {
    return (batch_first ? (b * seq + t) * directions + d : (t * directions + d) * batch + b) * hidden;
  }
  int64_t stateIndex(int64_t d, int64_t b) const { return (batch_first ? b * directions + d : d * batch + b) * hidden; }
};

RecurrentKind recurrentKind(const ir::Node& n);
// Checks the attributes against the op and the shapes of X and R, and resolves them.
StatusOr<RecurrentSpec> recurrentSpec(const ir::Node& n, const Shape& x, const Shape& r);

}  // namespace gkrt::ops
