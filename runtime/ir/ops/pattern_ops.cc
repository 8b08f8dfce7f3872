// The pattern ops the Appendix 3 passes (fusion/passes/pattern_*.cc) make of known
// subgraphs: residual add + norm, SwiGLU, attention, matmul with its epilogue, matmul
// split into parts, and AllReduce across ranks. Reference kernels accumulate in double.
#include <cmath>

#include "runtime/ir/ops/attention_layout.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status dtypeFloatAllSame(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < in.size(); ++k) if (in[k]) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  for (size_t k = 1; k < in.size(); ++k) {
    if (in[k] && in[k]->dtype != in[0]->dtype) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " is ", dtypeName(in[k]->dtype),
                       ", input 0 is ", dtypeName(in[0]->dtype), "; every input needs one float type");
    }
  }
  out.assign(n.outputs.size(), in[0]->dtype);
  return Status::Ok();
}

// x1 and x2 of one float type; gamma and beta any float type (the norm may run in a
// wider type than the add, as add_cast_rms_norm_cast_fusion finds it).
Status dtypeAddNorm(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < in.size(); ++k) if (in[k]) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  RETURN_IF_ERROR(requireSameDType(n, in, 0, 2));
  out.assign(n.outputs.size(), in[0]->dtype);
  return Status::Ok();
}

// ---- AddLayerNorm / AddRmsNorm: (x1, x2, gamma?, beta?) -> (norm(x1 + x2), x1 + x2) ----

Status shapeAddNorm(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  if (in[1]->shape != in[0]->shape) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " adds x1 ", shapeToString(in[0]->shape), " and x2 ",
                     shapeToString(in[1]->shape), ": they need one shape");
  }
  ASSIGN_OR_RETURN(NormRows r, normRowsOf(n, in[0]->shape));
  for (size_t k = 2; k < in.size(); ++k) {
    if (in[k] && numElements(in[k]->shape) != r.cols) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, k == 2 ? " gamma" : " beta", " has ",
                       numElements(in[k]->shape), " elements, the normalised axes hold ", r.cols);
    }
  }
  out = {in[0]->shape, in[0]->shape};
  return Status::Ok();
}

template <bool kRms> Status addNormKernel(const KernelContext& c) {
  const TensorView &x1 = c.in(0), &x2 = c.in(1);
  ASSIGN_OR_RETURN(NormRows r, normRowsOf(c.node, x1.shape));
  const float eps = c.node.attrs.get<NormAttrs>().epsilon;
  const TensorView* gamma = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const TensorView* beta = c.inputs.size() > 3 && c.in(3).present() ? &c.in(3) : nullptr;
  std::vector<double> row(r.cols);
  for (int64_t i = 0; i < r.rows; ++i) {
    double mean = 0.0, sq = 0.0;
    for (int64_t k = 0; k < r.cols; ++k) {
      const int64_t e = i * r.cols + k;
      const float s = loadF(x1.data, x1.dtype, e) + loadF(x2.data, x2.dtype, e);  // the sum as the Add stores it
      storeF(c.out(1).data, c.out(1).dtype, e, s);
      row[k] = loadF(c.out(1).data, c.out(1).dtype, e);
      mean += row[k];
    }
    mean = kRms ? 0.0 : mean / static_cast<double>(r.cols);
    for (int64_t k = 0; k < r.cols; ++k) sq += (row[k] - mean) * (row[k] - mean);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(r.cols) + eps);
    for (int64_t k = 0; k < r.cols; ++k) {
      double v = (row[k] - mean) * rstd;
      if (gamma) v *= loadF(gamma->data, gamma->dtype, k);
      if (beta) v += loadF(beta->data, beta->dtype, k);
      storeF(c.out(0).data, c.out(0).dtype, i * r.cols + k, static_cast<float>(v));
    }
  }
  return Status::Ok();
}

// ---- SwiGLU(x): [a, b] = halves of x along axis; silu(a) * b ---------------------------
Status shapeSwiGLU(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& s = in[0]->shape;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(s.size())));
  if (s.empty() || s[axis] % 2 != 0) {
    return makeError(StatusCode::kInvalidArgument, "SwiGLU splits axis ", axis, " of ", shapeToString(s),
                     " in two halves: it needs an even extent");
  }
  Shape y = s;
  y[axis] /= 2;
  out = {y};
  return Status::Ok();
}
Status swigluKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const int64_t axis = *normalizeAxis(c.node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size()));
  const AxisSplit s = splitAtAxis(x.shape, axis);
  const int64_t half = s.extent / 2;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t e = 0; e < half * s.inner; ++e) {
      const float a = loadF(x.data, x.dtype, o * s.extent * s.inner + e);
      const float b = loadF(x.data, x.dtype, o * s.extent * s.inner + half * s.inner + e);
      storeF(c.out(0).data, c.out(0).dtype, o * half * s.inner + e, a / (1.0f + std::exp(-a)) * b);
    }
  }
  return Status::Ok();
}

// ---- FlashAttention(q, k, v, mask?) = softmax(scale * q k^T + mask) v -----------------
Status shapeFlashAttention(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<AttentionAttrs>();
  AttentionDims q, k, v;
  RETURN_IF_ERROR(attentionDims(a, in[0]->shape, false, &q).withContext("FlashAttention q"));
  RETURN_IF_ERROR(attentionDims(a, in[1]->shape, a.key_transposed, &k).withContext("FlashAttention k"));
  RETURN_IF_ERROR(attentionDims(a, in[2]->shape, false, &v).withContext("FlashAttention v"));
  if (q.b != k.b || q.b != v.b || q.n != k.n || q.n != v.n || q.d != k.d || k.s != v.s) {
    return makeError(StatusCode::kInvalidArgument, "FlashAttention q ", shapeToString(in[0]->shape), ", k ",
                     shapeToString(in[1]->shape), ", v ", shapeToString(in[2]->shape),
                     " disagree on batch, heads, head dim or key length");
  }
  if (in.size() > 3 && in[3]) {
    const Shape scores{q.b, q.n, q.s, k.s};
    auto b = broadcastShapes(in[3]->shape, scores);
    if (!b.ok() || *b != scores) {
      return makeError(StatusCode::kInvalidArgument, "FlashAttention mask ", shapeToString(in[3]->shape),
                       " does not broadcast to the scores ", shapeToString(scores));
    }
  }
  out = {attentionOutputShape(a, q, v.d)};
  return Status::Ok();
}
Status flashAttentionKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<AttentionAttrs>();
  const TensorView &tq = c.in(0), &tk = c.in(1), &tv = c.in(2);
  const TensorView* mask = c.inputs.size() > 3 && c.in(3).present() ? &c.in(3) : nullptr;
  AttentionDims q, k, v, o;
  RETURN_IF_ERROR(attentionDims(a, tq.shape, false, &q));
  RETURN_IF_ERROR(attentionDims(a, tk.shape, a.key_transposed, &k));
  RETURN_IF_ERROR(attentionDims(a, tv.shape, false, &v));
  RETURN_IF_ERROR(attentionDims(a, c.out(0).shape, false, &o));
  std::vector<int64_t> ms;
  if (mask) ms = broadcastStrides(mask->shape, Shape{q.b, q.n, q.s, k.s});
  std::vector<double> p(k.s);
  for (int64_t b = 0; b < q.b; ++b) {
    for (int64_t h = 0; h < q.n; ++h) {
      for (int64_t i = 0; i < q.s; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < k.s; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < q.d; ++d) {
            dot += static_cast<double>(loadF(tq.data, tq.dtype, q.at(b, h, i, d))) * loadF(tk.data, tk.dtype, k.at(b, h, j, d));
          }
          p[j] = static_cast<float>(dot * a.scale);  // the scores as the unfused graph rounds them
          if (mask) p[j] += loadF(mask->data, mask->dtype, b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]);
          mx = std::max(mx, p[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < k.s; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t d = 0; d < v.d; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < k.s; ++j) acc += p[j] * loadF(tv.data, tv.dtype, v.at(b, h, j, d));
          storeF(c.out(0).data, c.out(0).dtype, o.at(b, h, i, d), static_cast<float>(acc / sum));
        }
      }
    }
  }
  return Status::Ok();
}

// ---- MatMul + epilogue: x [.., M, K] @ w [.., K, N] (batch dims broadcast) -------------
// MatMulGelu carries GeluAttrs and so no transposes; the others MatMulAttrs.
MatMulAttrs matmulFlags(const ir::Node& n) {
  return n.op->attr_kind == AttrKind::kMatMul ? n.attrs.get<MatMulAttrs>() : MatMulAttrs{};
}
struct Mm { int64_t m, k, n; Shape batch; };
StatusOr<Mm> matmulDims(const ir::Node& n, const Shape& a, const Shape& b) {
  const MatMulAttrs t = matmulFlags(n);
  if (a.size() < 2 || b.size() < 2) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs operands of rank >= 2, got ", shapeToString(a),
                     " and ", shapeToString(b));
  }
  const int64_t m = t.transpose_a ? a[a.size() - 1] : a[a.size() - 2], ka = t.transpose_a ? a[a.size() - 2] : a.back();
  const int64_t kb = t.transpose_b ? b.back() : b[b.size() - 2], nn = t.transpose_b ? b[b.size() - 2] : b.back();
  if (ka != kb) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " inner dims differ: ", shapeToString(a), " x ",
                     shapeToString(b));
  }
  ASSIGN_OR_RETURN(Shape batch, broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)));
  return Mm{m, ka, nn, batch};
}
Shape matmulOut(const Mm& d, int64_t n) {
  Shape y = d.batch;
  y.push_back(d.m);
  y.push_back(n);
  return y;
}
// Which inputs after (x, w) each op takes: the residual `c` (MatMulAdd) and the bias.
int residualInput(const ir::Node& n) { return std::string(n.op->name) == "MatMulAdd" ? 2 : -1; }
// MatMulAllReduce: (x, w, bias?) -> AllReduce(x @ w) + bias; on one device x @ w + bias.
int biasInput(const ir::Node& n) { return std::string(n.op->name) == "MatMulAdd" ? 3 : 2; }

Status shapeMatMulEpilogue(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(Mm d, matmulDims(n, in[0]->shape, in[1]->shape));
  const int bias = biasInput(n), res = residualInput(n);
  if (static_cast<int>(in.size()) > bias && in[bias] && (in[bias]->shape.size() != 1 || in[bias]->shape[0] != d.n)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " bias ", shapeToString(in[bias]->shape),
                     " must be 1-D with the ", d.n, " output columns");
  }
  out = {matmulOut(d, d.n)};
  if (res >= 0 && in[res]->shape != out[0]) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " adds ", shapeToString(in[res]->shape),
                     " to the product ", shapeToString(out[0]), ": they need one shape");
  }
  return Status::Ok();
}

float epilogue(const ir::Node& n, float v) {
  const std::string op = n.op->name;
  if (op == "MatMulRelu") return v > 0.0f ? v : 0.0f;
  if (op == "MatMulGelu") {
    if (n.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone) return 0.5f * v * (1.0f + std::erf(v * 0.70710678f));
    return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

// Runs fn(out_index, column, value) over op(x) @ op(w) for every output element.
template <class Fn> void forEachProduct(const ir::Node& n, const TensorView& a, const TensorView& b, const Mm& d, Fn&& fn) {
  const MatMulAttrs t = matmulFlags(n);
  const Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  forEachBroadcast<2>(d.batch, {&ab, &bb}, [&](int64_t bi, const std::array<int64_t, 2>& o) {
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < d.k; ++k) {
          const int64_t ai = o[0] * d.m * d.k + (t.transpose_a ? k * d.m + i : i * d.k + k);
          const int64_t bj = o[1] * d.k * d.n + (t.transpose_b ? j * d.k + k : k * d.n + j);
          acc += static_cast<double>(loadF(a.data, a.dtype, ai)) * loadF(b.data, b.dtype, bj);
        }
        fn((bi * d.m + i) * d.n + j, j, acc);
      }
    }
  });
}

Status matmulEpilogueKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(Mm d, matmulDims(c.node, c.in(0).shape, c.in(1).shape));
  const int bias = biasInput(c.node), res = residualInput(c.node);
  const TensorView* b = static_cast<int>(c.inputs.size()) > bias && c.in(bias).present() ? &c.in(bias) : nullptr;
  const MutableTensorView& y = c.out(0);
  forEachProduct(c.node, c.in(0), c.in(1), d, [&](int64_t e, int64_t j, double acc) {
    // Rounded to the tensor type after each step, as the unfused ops store it.
    float v = static_cast<float>(acc);
    if (b) v += loadF(b->data, b->dtype, j);
    if (res >= 0) v += loadF(c.in(res).data, c.in(res).dtype, e);
    storeF(y.data, y.dtype, e, epilogue(c.node, v));
  });
  return Status::Ok();
}

// ---- MatMulSplit(x, w, bias?) -> the product's column blocks of `sizes` ---------------
Status shapeMatMulSplit(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(Mm d, matmulDims(n, in[0]->shape, in[1]->shape));
  if (in.size() > 2 && in[2] && (in[2]->shape.size() != 1 || in[2]->shape[0] != d.n)) {
    return makeError(StatusCode::kInvalidArgument, "MatMulSplit bias ", shapeToString(in[2]->shape),
                     " must be 1-D with the ", d.n, " output columns");
  }
  const Ints& sizes = n.attrs.get<SplitAttrs>().sizes;
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (sizes.size() != n.outputs.size() || total != d.n) {
    return makeError(StatusCode::kInvalidArgument, "MatMulSplit sizes ", shapeToString(sizes), " for ",
                     n.outputs.size(), " outputs must add up to the product's ", d.n, " columns");
  }
  out.clear();
  for (int64_t s : sizes) out.push_back(matmulOut(d, s));
  return Status::Ok();
}
Status matmulSplitKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(Mm d, matmulDims(c.node, c.in(0).shape, c.in(1).shape));
  const Ints& sizes = c.node.attrs.get<SplitAttrs>().sizes;
  const TensorView* b = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  std::vector<int64_t> part(d.n), col(d.n);
  for (int64_t p = 0, j = 0; p < static_cast<int64_t>(sizes.size()); ++p) {
    for (int64_t s = 0; s < sizes[p]; ++s, ++j) part[j] = p, col[j] = s;
  }
  forEachProduct(c.node, c.in(0), c.in(1), d, [&](int64_t e, int64_t j, double acc) {
    float v = static_cast<float>(acc);
    if (b) v += loadF(b->data, b->dtype, j);
    const int64_t row = e / d.n;
    const MutableTensorView& y = c.out(part[j]);
    storeF(y.data, y.dtype, row * sizes[part[j]] + col[j], v);
  });
  return Status::Ok();
}

// ---- AllReduce(x): the sum over every rank's x. One device: x itself. Backends given a
// communicator (runtime/base/communicator.h) sum across ranks instead.
Status allReduceKernel(const KernelContext& c) {
  std::memcpy(c.out(0).data, c.in(0).data, numElements(c.in(0).shape) * dtypeSize(c.in(0).dtype));
  return Status::Ok();
}

}  // namespace

void registerPatternOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("AddLayerNorm")) t.push_back({"AddLayerNorm", OpClass::kOpaque, 2, 4, 2, 2, AttrKind::kNorm, dtypeAddNorm,
               shapeAddNorm, addNormKernel<false>, "(x1, x2, gamma?, beta?) -> (LayerNorm(x1+x2) over [axis, rank), x1+x2)"});
  if constexpr (opSelected("AddRmsNorm")) t.push_back({"AddRmsNorm", OpClass::kOpaque, 3, 3, 2, 2, AttrKind::kNorm, dtypeAddNorm,
               shapeAddNorm, addNormKernel<true>, "(x1, x2, gamma) -> ((x1+x2) / sqrt(mean((x1+x2)^2)+eps) * gamma, x1+x2)"});
  if constexpr (opSelected("SwiGLU")) t.push_back({"SwiGLU", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kAxis, dtypeFloatAllSame, shapeSwiGLU,
               swigluKernel, "[a, b] = halves of x along axis; silu(a) * b"});
  if constexpr (opSelected("FlashAttention")) t.push_back({"FlashAttention", OpClass::kOpaque, 3, 4, 1, 1, AttrKind::kAttention,
               dtypeFloatAllSame, shapeFlashAttention, flashAttentionKernel,
               "(q, k, v, mask?) -> softmax(scale * q k^T + mask) v per batch and head; BNSD or BSND"});
  if constexpr (opSelected("MatMulBiasAdd")) {
    t.push_back({"MatMulBiasAdd", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kMatMul, dtypeFloatAllSame,
               shapeMatMulEpilogue, matmulEpilogueKernel, "(x, w, bias[N]) -> op(x) @ op(w) + bias, batch dims broadcast"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("MatMulAdd")) {
    t.push_back({"MatMulAdd", OpClass::kOpaque, 3, 4, 1, 1, AttrKind::kMatMul, dtypeFloatAllSame,
               shapeMatMulEpilogue, matmulEpilogueKernel, "(x, w, c, bias?) -> op(x) @ op(w) + bias + c (c of the product's shape)"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("MatMulRelu")) {
    t.push_back({"MatMulRelu", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kMatMul, dtypeFloatAllSame,
               shapeMatMulEpilogue, matmulEpilogueKernel, "(x, w, bias?) -> relu(op(x) @ op(w) + bias)"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("MatMulGelu")) {
    t.push_back({"MatMulGelu", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kGelu, dtypeFloatAllSame,
               shapeMatMulEpilogue, matmulEpilogueKernel, "(x, w, bias?) -> gelu(x @ w + bias), erf or tanh form"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("MatMulSplit")) {
    t.push_back({"MatMulSplit", OpClass::kOpaque, 2, 3, 1, 64, AttrKind::kSplit,
               dtypeFloatAllSame, shapeMatMulSplit, matmulSplitKernel,
               "(x, w, bias?) -> op(x) @ op(w) + bias split along the last axis into `sizes`"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("MatMulAllReduce")) {
    t.push_back({"MatMulAllReduce", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kMatMul,
               dtypeFloatAllSame, shapeMatMulEpilogue, matmulEpilogueKernel,
               "(x, w, bias?) -> AllReduce(op(x) @ op(w)) + bias (bias added once, after the sum)"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("AllReduce")) t.push_back({"AllReduce", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kNone, dtypeFloatAllSame,
               shapeSame, allReduceKernel, "sum of x over every rank of the communicator; x itself on one device"});
}

}  // namespace gkrt::ops
