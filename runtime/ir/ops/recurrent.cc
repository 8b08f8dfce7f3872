// ONNX LSTM, GRU and RNN: forward, reverse and bidirectional, initial states,
// sequence_lens, LSTM peepholes and input_forget, GRU linear_before_reset, clip, every
// activation ONNX lists, layout 0 and 1. Inputs as in ONNX: X, W, R, B?, sequence_lens?,
// initial_h?, and for LSTM initial_c?, P?. Outputs Y, Y_h (, Y_c).
// Reference kernels follow the ONNX formulas step by step; products accumulate in double.
#include "runtime/ir/ops/recurrent.h"

#include <algorithm>
#include <string>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

Activation defaultActivation(RnnActivation fn) {
  switch (fn) {
    case RnnActivation::kAffine:
      return {fn, 1.0f, 0.0f};
    case RnnActivation::kLeakyRelu:
      return {fn, 0.01f, 0.0f};
    case RnnActivation::kThresholdedRelu:
      return {fn, 1.0f, 0.0f};
    case RnnActivation::kScaledTanh:
      return {fn, 1.0f, 1.0f};
    case RnnActivation::kHardSigmoid:
      return {fn, 0.2f, 0.5f};
    case RnnActivation::kElu:
      return {fn, 1.0f, 0.0f};
    default:
      return {fn, 0.0f, 0.0f};
  }
}

RecurrentKind recurrentKind(const ir::Node& n) {
  const std::string name = n.op ? n.op->name : "";
  return name == "LSTM" || name == "DynamicQuantizeLSTM" ? RecurrentKind::kLstm : name == "GRU" ? RecurrentKind::kGru : RecurrentKind::kRnn;
}

namespace {

constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7;

// Activations each op takes, per direction, and their ONNX defaults.
std::vector<RnnActivation> defaultActivations(RecurrentKind k) {
  switch (k) {
    case RecurrentKind::kLstm:
      return {RnnActivation::kSigmoid, RnnActivation::kTanh, RnnActivation::kTanh};
    case RecurrentKind::kGru:
      return {RnnActivation::kSigmoid, RnnActivation::kTanh};
    case RecurrentKind::kRnn:
      return {RnnActivation::kTanh};
  }
  return {};
}

}  // namespace

StatusOr<RecurrentSpec> recurrentSpec(const ir::Node& n, const Shape& x, const Shape& r) {
  const auto& a = n.attrs.get<RecurrentAttrs>();
  const char* op = n.op->name;
  RecurrentSpec s;
  s.kind = recurrentKind(n);
  s.gates = s.kind == RecurrentKind::kLstm ? 4 : s.kind == RecurrentKind::kGru ? 3 : 1;
  s.directions = a.direction == RnnDirection::kBidirectional ? 2 : 1;
  s.reverse_only = a.direction == RnnDirection::kReverse;
  if (a.layout != 0 && a.layout != 1) {
    return makeError(StatusCode::kInvalidArgument, op, " layout must be 0 or 1, got ", a.layout);
  }
  s.batch_first = a.layout == 1;
  if (x.size() != 3) {
    return makeError(StatusCode::kInvalidArgument, op, " X must be 3-D (", s.batch_first ? "batch, seq" : "seq, batch",
                     ", input), got ", shapeToString(x));
  }
  s.seq = s.batch_first ? x[1] : x[0];
  s.batch = s.batch_first ? x[0] : x[1];
  s.input = x[2];
  if (r.size() != 3) return makeError(StatusCode::kInvalidArgument, op, " R must be 3-D, got ", shapeToString(r));
  s.hidden = r[2];
  if (a.hidden_size != 0 && a.hidden_size != s.hidden) {
    return makeError(StatusCode::kInvalidArgument, op, " hidden_size=", a.hidden_size, " but R ", shapeToString(r),
                     " has hidden size ", s.hidden);
  }
  if (a.clip < 0.0f) return makeError(StatusCode::kInvalidArgument, op, " clip must be positive, got ", a.clip);
  s.clip = a.clip;
  if (a.input_forget && s.kind != RecurrentKind::kLstm) {
    return makeError(StatusCode::kInvalidArgument, op, " has no input_forget (LSTM only)");
  }
  if (a.linear_before_reset && s.kind != RecurrentKind::kGru) {
    return makeError(StatusCode::kInvalidArgument, op, " has no linear_before_reset (GRU only)");
  }
  s.input_forget = a.input_forget;
  s.linear_before_reset = a.linear_before_reset;

  const std::vector<RnnActivation> defaults = defaultActivations(s.kind);
  const size_t per_dir = defaults.size();
  std::vector<RnnActivation> fns = a.activations.empty() ? defaults : a.activations;
  if (fns.size() != per_dir && fns.size() != per_dir * s.directions) {
    return makeError(StatusCode::kInvalidArgument, op, " takes ", per_dir, " activations per direction (",
                     per_dir * s.directions, " in all), got ", fns.size());
  }
  for (const Floats* list : {&a.activation_alpha, &a.activation_beta}) {
    if (!list->empty() && list->size() != a.activations.size()) {
      return makeError(StatusCode::kInvalidArgument, op,
                       " activation_alpha/beta need one value per listed activation (", a.activations.size(), "), got ",
                       list->size());
    }
  }
  s.act.assign(static_cast<size_t>(s.directions), {});
  for (int64_t d = 0; d < s.directions; ++d) {
    for (size_t k = 0; k < per_dir; ++k) {
      const size_t i = fns.size() == per_dir ? k : d * per_dir + k;
      Activation act = defaultActivation(fns[i]);
      if (!a.activation_alpha.empty()) act.alpha = a.activation_alpha[i];
      if (!a.activation_beta.empty()) act.beta = a.activation_beta[i];
      s.act[d].push_back(act);
    }
  }
  return s;
}

namespace {

Status dtypeRecurrent(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireFloat(n, in[kX], kX));
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k]) continue;
    if (static_cast<int>(k) == kSeqLens) {
      if (!isInteger(in[k]->dtype)) {
        return makeError(StatusCode::kInvalidArgument, n.op->name, " sequence_lens must be an integer tensor, got ",
                         dtypeName(in[k]->dtype));
      }
    } else if (in[k]->dtype != in[kX]->dtype) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " is ", dtypeName(in[k]->dtype),
                       ", X is ", dtypeName(in[kX]->dtype), "; all float inputs need one dtype");
    }
  }
  out.assign(n.outputs.size(), in[kX]->dtype);
  return Status::Ok();
}

Status expectShape(const ir::Node& n, const TensorType* t, const char* what, const Shape& want) {
  if (t && t->shape != want) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " ", what, " must be ", shapeToString(want), ", got ",
                     shapeToString(t->shape));
  }
  return Status::Ok();
}

Status shapeRecurrent(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(RecurrentSpec s, recurrentSpec(n, in[kX]->shape, in[kR]->shape));
  const int64_t gh = s.gates * s.hidden, D = s.directions;
  RETURN_IF_ERROR(expectShape(n, in[kW], "W (directions, gates*hidden, input)", {D, gh, s.input}));
  RETURN_IF_ERROR(expectShape(n, in[kR], "R (directions, gates*hidden, hidden)", {D, gh, s.hidden}));
  auto opt = [&](int k) { return static_cast<int>(in.size()) > k ? in[k] : nullptr; };
  RETURN_IF_ERROR(expectShape(n, opt(kB), "B (directions, 2*gates*hidden)", {D, 2 * gh}));
  RETURN_IF_ERROR(expectShape(n, opt(kSeqLens), "sequence_lens (batch)", {s.batch}));
  const Shape state = s.batch_first ? Shape{s.batch, D, s.hidden} : Shape{D, s.batch, s.hidden};
  RETURN_IF_ERROR(expectShape(n, opt(kInitH), "initial_h", state));
  if (s.kind == RecurrentKind::kLstm) {
    RETURN_IF_ERROR(expectShape(n, opt(kInitC), "initial_c", state));
    RETURN_IF_ERROR(expectShape(n, opt(kP), "P (directions, 3*hidden)", {D, 3 * s.hidden}));
  }
  const Shape y = s.batch_first ? Shape{s.batch, s.seq, D, s.hidden} : Shape{s.seq, D, s.batch, s.hidden};
  out = {y, state, state};
  return Status::Ok();
}

std::vector<float> floatsOf(const TensorView& t) {
  std::vector<float> v(t.present() ? static_cast<size_t>(t.size()) : 0);
  for (size_t i = 0; i < v.size(); ++i) v[i] = loadF(t.data, t.dtype, static_cast<int64_t>(i));
  return v;
}

// x * m[row] over `len` elements, in double.
double dotRow(const float* x, const float* m, int64_t row, int64_t len) {
  double acc = 0.0;
  for (int64_t k = 0; k < len; ++k) acc += static_cast<double>(x[k]) * m[row * len + k];
  return acc;
}

Status recurrentKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(RecurrentSpec s, recurrentSpec(c.node, c.in(kX).shape, c.in(kR).shape));
  auto input = [&](int k) { return static_cast<int>(c.inputs.size()) > k ? floatsOf(c.in(k)) : std::vector<float>{}; };
  const std::vector<float> x = input(kX), w = input(kW), r = input(kR), bias = input(kB), init_h = input(kInitH),
                           init_c = input(kInitC), peep = input(kP);
  const int64_t H = s.hidden, G = s.gates, I = s.input;
  std::vector<int64_t> lens(static_cast<size_t>(s.batch), s.seq);
  if (static_cast<int>(c.inputs.size()) > kSeqLens && c.in(kSeqLens).present()) {
    for (int64_t b = 0; b < s.batch; ++b) {
      lens[b] = loadIndex(c.in(kSeqLens), b);
      if (lens[b] < 0 || lens[b] > s.seq) {
        return makeError(StatusCode::kInvalidArgument, c.node.op->name, " sequence_lens[", b, "] = ", lens[b],
                         " is outside 0..", s.seq);
      }
    }
  }
  const MutableTensorView* y = c.outputs.size() > 0 && c.out(0).data ? &c.out(0) : nullptr;
  if (y)
    for (int64_t i = 0; i < y->size(); ++i) storeF(y->data, y->dtype, i, 0.0f);

  std::vector<float> h(H), cell(H), hprev(H), cprev(H), pre(G * H), rh(H);
  auto clip = [&](float v) { return s.clip > 0.0f ? std::min(s.clip, std::max(-s.clip, v)) : v; };
  for (int64_t d = 0; d < s.directions; ++d) {
    const float* wd = w.data() + d * G * H * I;
    const float* rd = r.data() + d * G * H * H;
    const float* wb = bias.empty() ? nullptr : bias.data() + d * 2 * G * H;
    const float* rb = wb ? wb + G * H : nullptr;
    const float* pd = peep.empty() ? nullptr : peep.data() + d * 3 * H;
    const auto& act = s.act[d];
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[j] = init_h.empty() ? 0.0f : init_h[s.stateIndex(d, b) + j];
        cell[j] = init_c.empty() ? 0.0f : init_c[s.stateIndex(d, b) + j];
      }
      for (int64_t step = 0; step < lens[b]; ++step) {
        const int64_t t = s.reversed(d) ? lens[b] - 1 - step : step;
        const float* xt = x.data() + s.xIndex(t, b);
        hprev = h;
        cprev = cell;
        // X W^T + Wb for every gate; R products are added per op below.
        for (int64_t g = 0; g < G * H; ++g) pre[g] = static_cast<float>(dotRow(xt, wd, g, I) + (wb ? wb[g] : 0.0f));
        auto recur = [&](int64_t g, const float* hv) {
          return static_cast<float>(dotRow(hv, rd, g, H) + (rb ? rb[g] : 0.0f));
        };
        if (s.kind == RecurrentKind::kRnn) {
          for (int64_t j = 0; j < H; ++j) h[j] = applyActivation(act[0], clip(pre[j] + recur(j, hprev.data())));
        } else if (s.kind == RecurrentKind::kGru) {
          std::vector<float> z(H), rg(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = applyActivation(act[0], clip(pre[j] + recur(j, hprev.data())));
            rg[j] = applyActivation(act[0], clip(pre[H + j] + recur(H + j, hprev.data())));
          }
          if (!s.linear_before_reset) {
            for (int64_t j = 0; j < H; ++j) rh[j] = rg[j] * hprev[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const float lin =
                s.linear_before_reset ? rg[j] * recur(2 * H + j, hprev.data()) : recur(2 * H + j, rh.data());
            const float cand = applyActivation(act[1], clip(pre[2 * H + j] + lin));
            h[j] = (1.0f - z[j]) * cand + z[j] * hprev[j];
          }
        } else {  // LSTM, gates i, o, f, c; peepholes P = (i, o, f)
          for (int64_t j = 0; j < H; ++j) {
            const float pi = pd ? pd[j] : 0.0f, po = pd ? pd[H + j] : 0.0f, pf = pd ? pd[2 * H + j] : 0.0f;
            const float ig = applyActivation(act[0], clip(pre[j] + recur(j, hprev.data()) + pi * cprev[j]));
            const float fg =
                s.input_forget
                    ? 1.0f - ig
                    : applyActivation(act[0], clip(pre[2 * H + j] + recur(2 * H + j, hprev.data()) + pf * cprev[j]));
            const float cand = applyActivation(act[1], clip(pre[3 * H + j] + recur(3 * H + j, hprev.data())));
            cell[j] = fg * cprev[j] + ig * cand;
            const float og = applyActivation(act[0], clip(pre[H + j] + recur(H + j, hprev.data()) + po * cell[j]));
            h[j] = og * applyActivation(act[2], cell[j]);
          }
        }
        if (y)
          for (int64_t j = 0; j < H; ++j) storeF(y->data, y->dtype, s.yIndex(t, d, b) + j, h[j]);
      }
      for (size_t o = 1; o < c.outputs.size() && o < 3; ++o) {
        if (!c.out(o).data) continue;
        const std::vector<float>& v = o == 1 ? h : cell;
        for (int64_t j = 0; j < H; ++j) storeF(c.out(o).data, c.out(o).dtype, s.stateIndex(d, b) + j, v[j]);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void registerRecurrentOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("LSTM")) {
    t.push_back({"LSTM", OpClass::kOpaque, 3, 8, 1, 3, AttrKind::kRecurrent, dtypeRecurrent, shapeRecurrent,
                 recurrentKernel,
                 "ONNX LSTM (X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?) -> Y, Y_h, Y_c; gates i,o,f,c"});
    t.back().product_inputs = 0b10001110;
  }
  if constexpr (opSelected("GRU")) {
    t.push_back({"GRU", OpClass::kOpaque, 3, 6, 1, 2, AttrKind::kRecurrent, dtypeRecurrent, shapeRecurrent,
                 recurrentKernel, "ONNX GRU (X, W, R, B?, sequence_lens?, initial_h?) -> Y, Y_h; gates z,r,h"});
    t.back().product_inputs = 0b1110;
  }
  if constexpr (opSelected("RNN")) {
    t.push_back({"RNN", OpClass::kOpaque, 3, 6, 1, 2, AttrKind::kRecurrent, dtypeRecurrent, shapeRecurrent,
                 recurrentKernel,
                 "ONNX RNN (X, W, R, B?, sequence_lens?, initial_h?) -> Y, Y_h; H = f(X W^T + H R^T + Wb + Rb)"});
    t.back().product_inputs = 0b1110;
  }
}

}  // namespace gkrt::ops
