// DynamicQuantizeLSTM's definition and reference kernel (recurrent_quant.h says what it
// computes). The integer sums are exact (int64); the float operations are the ones the
// cpu kernel does, in the same order.
#include "runtime/ir/ops/recurrent_quant.h"

#include <string>
#include <vector>

#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/recurrent.h"

namespace gkrt::ops {
namespace {

constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7;

const char* kWhat = "DynamicQuantizeLSTM";

// R [dirs, hidden, 4 hidden] read as LSTM's [dirs, 4 hidden, hidden] for recurrentSpec.
StatusOr<RecurrentSpec> quantSpec(const ir::Node& n, const Shape& x, const Shape& r) {
  if (r.size() != 3) return makeError(StatusCode::kInvalidArgument, kWhat, " R must be 3-D, got ", shapeToString(r));
  return recurrentSpec(n, x, {r[0], r[2], r[1]});
}

bool isByte(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

Status dtypeQuantLstm(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireFloat(n, in[kX], kX));
  if (in.size() != 12) {
    return makeError(StatusCode::kInvalidArgument, kWhat, " takes 12 inputs (the last four: W_scale, W_zero_point, R_scale, "
                     "R_zero_point), got ", in.size());
  }
  for (int k : {kW, kR}) {
    if (!in[k] || !isByte(in[k]->dtype)) {
      return makeError(StatusCode::kInvalidArgument, kWhat, " ", k == kW ? "W" : "R", " must be int8 or uint8");
    }
  }
  for (int k : {kB, kInitH, kInitC, kP, kQlstmWScale, kQlstmRScale}) {
    if (static_cast<int>(in.size()) > k && in[k] && in[k]->dtype != DType::kFloat32) {
      return makeError(StatusCode::kInvalidArgument, kWhat, " input ", k, " must be float32, got ", dtypeName(in[k]->dtype));
    }
  }
  for (int k : {kQlstmWZp, kQlstmRZp}) {
    const int of = k == kQlstmWZp ? kW : kR;
    if (!in[k] || in[k]->dtype != in[of]->dtype) {
      return makeError(StatusCode::kInvalidArgument, kWhat, " input ", k, " (zero point) must have ", of == kW ? "W" : "R",
                       "'s type");
    }
  }
  if (!in[kQlstmWScale] || !in[kQlstmRScale]) return makeError(StatusCode::kInvalidArgument, kWhat, " needs W_scale and R_scale");
  if (in[kSeqLens] && !isInteger(in[kSeqLens]->dtype)) {
    return makeError(StatusCode::kInvalidArgument, kWhat, " sequence_lens must be an integer tensor");
  }
  out.assign(n.outputs.size(), DType::kFloat32);
  return Status::Ok();
}

Status expect(const TensorType* t, const char* what, const Shape& want) {
  if (t && t->shape != want) {
    return makeError(StatusCode::kInvalidArgument, kWhat, " ", what, " must be ", shapeToString(want), ", got ",
                     shapeToString(t->shape));
  }
  return Status::Ok();
}

// A scale or zero point: one value, one per direction, or [dirs, 4 hidden].
Status expectParam(const TensorType* t, const char* what, int64_t D, int64_t GH) {
  const int64_t count = numElements(t->shape);
  if (count == 1 || (count == D && t->shape.size() == 1) || t->shape == Shape{D, GH}) return Status::Ok();
  return makeError(StatusCode::kInvalidArgument, kWhat, " ", what, " must hold 1, ", D, " (per direction) or ", D, "x", GH,
                   " (per column) values, got ", shapeToString(t->shape));
}

Status shapeQuantLstm(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(RecurrentSpec s, quantSpec(n, in[kX]->shape, in[kR]->shape));
  const int64_t GH = 4 * s.hidden, D = s.directions;
  RETURN_IF_ERROR(expect(in[kW], "W (directions, input, 4*hidden)", {D, s.input, GH}));
  RETURN_IF_ERROR(expect(in[kR], "R (directions, hidden, 4*hidden)", {D, s.hidden, GH}));
  RETURN_IF_ERROR(expect(in[kB], "B (directions, 8*hidden)", {D, 2 * GH}));
  RETURN_IF_ERROR(expect(in[kSeqLens], "sequence_lens (batch)", {s.batch}));
  const Shape state = s.batch_first ? Shape{s.batch, D, s.hidden} : Shape{D, s.batch, s.hidden};
  RETURN_IF_ERROR(expect(in[kInitH], "initial_h", state));
  RETURN_IF_ERROR(expect(in[kInitC], "initial_c", state));
  RETURN_IF_ERROR(expect(in[kP], "P (directions, 3*hidden)", {D, 3 * s.hidden}));
  RETURN_IF_ERROR(expectParam(in[kQlstmWScale], "W_scale", D, GH));
  RETURN_IF_ERROR(expectParam(in[kQlstmWZp], "W_zero_point", D, GH));
  RETURN_IF_ERROR(expectParam(in[kQlstmRScale], "R_scale", D, GH));
  RETURN_IF_ERROR(expectParam(in[kQlstmRZp], "R_zero_point", D, GH));
  if (numElements(in[kQlstmWScale]->shape) != numElements(in[kQlstmWZp]->shape) ||
      numElements(in[kQlstmRScale]->shape) != numElements(in[kQlstmRZp]->shape)) {
    return makeError(StatusCode::kInvalidArgument, kWhat, " each zero point must have its scale's shape");
  }
  const Shape y = s.batch_first ? Shape{s.batch, s.seq, D, s.hidden} : Shape{s.seq, D, s.batch, s.hidden};
  out = {y, state, state};
  return Status::Ok();
}

// Element (d, column j) of a scale or zero point of `count` values.
int64_t paramIndex(int64_t count, int64_t D, int64_t GH, int64_t d, int64_t j) {
  return count == 1 ? 0 : count == D ? d : d * GH + j;
}

Status quantLstmKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(RecurrentSpec s, quantSpec(c.node, c.in(kX).shape, c.in(kR).shape));
  const int64_t H = s.hidden, GH = 4 * H, I = s.input, D = s.directions, B = s.batch, T = s.seq;
  auto present = [&](int k) { return static_cast<int>(c.inputs.size()) > k && c.in(k).present(); };
  auto f = [&](int k, int64_t i) { return loadF(c.in(k).data, c.in(k).dtype, i); };
  std::vector<int64_t> lens(static_cast<size_t>(B), T);
  if (present(kSeqLens)) {
    for (int64_t b = 0; b < B; ++b) {
      lens[b] = loadIndex(c.in(kSeqLens), b);
      if (lens[b] < 0 || lens[b] > T) {
        return makeError(StatusCode::kInvalidArgument, kWhat, " sequence_lens[", b, "] = ", lens[b], " is outside 0..", T);
      }
    }
  }
  const MutableTensorView* y = c.outputs.size() > 0 && c.out(0).data ? &c.out(0) : nullptr;
  if (y) for (int64_t i = 0; i < y->size(); ++i) storeF(y->data, y->dtype, i, 0.0f);
  // X as uint8, once for every direction.
  std::vector<float> x(static_cast<size_t>(c.in(kX).size()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = f(kX, static_cast<int64_t>(i));
  const U8Quant xq = dynamicU8(x.data(), static_cast<int64_t>(x.size()));
  std::vector<uint8_t> xu(x.size());
  quantizeU8(x.data(), static_cast<int64_t>(x.size()), xq, xu.data());
  const int64_t nws = numElements(c.in(kQlstmWScale).shape), nrs = numElements(c.in(kQlstmRScale).shape);
  // w - wz[column] and r - rz[column] as integers, read once
  auto centred = [&](int k, int zk, int64_t rows, int64_t count) {
    std::vector<int32_t> v(static_cast<size_t>(D * rows * GH));
    for (int64_t d = 0; d < D; ++d)
      for (int64_t k2 = 0; k2 < rows; ++k2)
        for (int64_t j = 0; j < GH; ++j) {
          const int64_t i = (d * rows + k2) * GH + j;
          v[i] = static_cast<int32_t>(loadIndex(c.in(k), i) - loadIndex(c.in(zk), paramIndex(count, D, GH, d, j)));
        }
    return v;
  };
  const std::vector<int32_t> wc = centred(kW, kQlstmWZp, I, nws), rc = centred(kR, kQlstmRZp, H, nrs);
  const auto& act_all = s.act;
  std::vector<float> h(B * H), cell(B * H), hprev(B * H), xw(T * B * GH), pre(GH);
  std::vector<uint8_t> hu(B * H);
  auto clip = [&](float v) { return s.clip > 0.0f ? std::min(s.clip, std::max(-s.clip, v)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const auto& act = act_all[d];
    // X W: sum over k of (x - xz)(w - wz[j]), times float(xs * ws[j]).
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < GH; ++j) {
          const int64_t pi = paramIndex(nws, D, GH, d, j);
          int64_t acc = 0;
          for (int64_t k = 0; k < I; ++k) acc += (static_cast<int64_t>(xu[s.xIndex(t, b) + k]) - xq.zp) * wc[(d * I + k) * GH + j];
          xw[(t * B + b) * GH + j] = static_cast<float>(acc) * (xq.scale * f(kQlstmWScale, pi));
        }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = present(kInitH) ? f(kInitH, s.stateIndex(d, b) + j) : 0.0f;
        cell[b * H + j] = present(kInitC) ? f(kInitC, s.stateIndex(d, b) + j) : 0.0f;
      }
    const int64_t steps = *std::max_element(lens.begin(), lens.end());
    for (int64_t step = 0; step < steps; ++step) {
      hprev = h;
      const U8Quant hq = dynamicU8(hprev.data(), B * H);  // every batch row, as onnxruntime
      quantizeU8(hprev.data(), B * H, hq, hu.data());
      for (int64_t b = 0; b < B; ++b) {
        if (step >= lens[b]) continue;
        const int64_t t = s.reversed(d) ? lens[b] - 1 - step : step;
        for (int64_t j = 0; j < GH; ++j) {
          const int64_t pi = paramIndex(nrs, D, GH, d, j);
          int64_t acc = 0;
          for (int64_t k = 0; k < H; ++k) acc += (static_cast<int64_t>(hu[b * H + k]) - hq.zp) * rc[(d * H + k) * GH + j];
          const float bias = present(kB) ? f(kB, d * 2 * GH + j) + f(kB, d * 2 * GH + GH + j) : 0.0f;
          pre[j] = (xw[(t * B + b) * GH + j] + static_cast<float>(acc) * (hq.scale * f(kQlstmRScale, pi))) + bias;
        }
        float* hb = h.data() + b * H;
        float* cb = cell.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {  // gates i, o, f, c; peepholes (i, o, f)
          const float pi = present(kP) ? f(kP, d * 3 * H + j) : 0.0f, po = present(kP) ? f(kP, d * 3 * H + H + j) : 0.0f,
                      pf = present(kP) ? f(kP, d * 3 * H + 2 * H + j) : 0.0f;
          const float cprev = cb[j];
          const float ig = applyActivation(act[0], clip(pre[j] + pi * cprev));
          const float fg = s.input_forget ? 1.0f - ig : applyActivation(act[0], clip(pre[2 * H + j] + pf * cprev));
          const float cand = applyActivation(act[1], clip(pre[3 * H + j]));
          cb[j] = fg * cprev + ig * cand;
          const float og = applyActivation(act[0], clip(pre[H + j] + po * cb[j]));
          hb[j] = og * applyActivation(act[2], cb[j]);
        }
        if (y) for (int64_t j = 0; j < H; ++j) storeF(y->data, y->dtype, s.yIndex(t, d, b) + j, hb[j]);
      }
    }
    for (size_t o = 1; o < c.outputs.size() && o < 3; ++o) {
      if (!c.out(o).data) continue;
      const std::vector<float>& v = o == 1 ? h : cell;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) storeF(c.out(o).data, c.out(o).dtype, s.stateIndex(d, b) + j, v[b * H + j]);
    }
  }
  return Status::Ok();
}

}  // namespace

void registerRecurrentQuantOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("DynamicQuantizeLSTM"))
    t.push_back({"DynamicQuantizeLSTM", OpClass::kOpaque, 3, 12, 1, 3, AttrKind::kRecurrent, dtypeQuantLstm, shapeQuantLstm,
                 quantLstmKernel,
                 "onnxruntime's DynamicQuantizeLSTM (X, W int8 [dirs, input, 4h], R [dirs, h, 4h], B?, sequence_lens?, "
                 "initial_h?, initial_c?, P?, W_scale, W_zero_point, R_scale, R_zero_point) -> Y, Y_h, Y_c: X and h "
                 "quantized to uint8 at run time, integer products rescaled, then LSTM's gates"});
}

}  // namespace gkrt::ops
