// MatMul, BatchMatMul, Gemm, FullyConnected, Conv2D (NCHW/OIHW, groups, dilation),
// MaxPool, AvgPool, GlobalAvgPool and BiasAdd. Products accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/ir/ops/conv_loop.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status dtypeFloatData(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < in.size(); ++k) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  RETURN_IF_ERROR(requireSameDType(n, in, 0, in.size()));
  out = {in[0]->dtype};
  return Status::Ok();
}

// [.., rows, cols] of a matrix operand, transposed on request.
struct MatDims { int64_t rows, cols; };
MatDims matDims(const Shape& s, bool transpose) {
  const int64_t r = s[s.size() - 2], c = s[s.size() - 1];
  return transpose ? MatDims{c, r} : MatDims{r, c};
}

Status shapeMatMul(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<MatMulAttrs>();
  const Shape &sa = in[0]->shape, &sb = in[1]->shape;
  const bool batched = std::string(n.op->name) == "BatchMatMul";
  if (batched ? (sa.size() < 2 || sb.size() < 2) : (sa.size() != 2 || sb.size() != 2)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs ", batched ? "rank >= 2" : "2-D",
                     " operands, got ", shapeToString(sa), " and ", shapeToString(sb));
  }
  const MatDims da = matDims(sa, a.transpose_a), db = matDims(sb, a.transpose_b);
  if (da.cols != db.rows) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " inner dims differ: ", shapeToString(sa),
                     a.transpose_a ? "^T" : "", " x ", shapeToString(sb), a.transpose_b ? "^T" : "");
  }
  Shape batch;
  if (batched) {
    ASSIGN_OR_RETURN(batch, broadcastShapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2)));
  }
  batch.push_back(da.rows);
  batch.push_back(db.cols);
  out = {batch};
  return Status::Ok();
}

Status matMulKernel(const KernelContext& c) {
  const auto& at = c.node.attrs.get<MatMulAttrs>();
  const TensorView &a = c.in(0), &b = c.in(1);
  const MutableTensorView& y = c.out(0);
  const MatDims da = matDims(a.shape, at.transpose_a), db = matDims(b.shape, at.transpose_b);
  const int64_t M = da.rows, K = da.cols, N = db.cols;
  const Shape out_batch(y.shape.begin(), y.shape.end() - 2);
  const Shape a_batch(a.shape.begin(), a.shape.end() - 2), b_batch(b.shape.begin(), b.shape.end() - 2);
  forEachBroadcast<2>(out_batch, {&a_batch, &b_batch}, [&](int64_t bi, const std::array<int64_t, 2>& o) {
    const int64_t abase = o[0] * M * K, bbase = o[1] * K * N, ybase = bi * M * N;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t ai = at.transpose_a ? k * M + i : i * K + k;
          const int64_t bj = at.transpose_b ? j * K + k : k * N + j;
          acc += static_cast<double>(loadF(a.data, a.dtype, abase + ai)) * loadF(b.data, b.dtype, bbase + bj);
        }
        storeF(y.data, y.dtype, ybase + i * N + j, static_cast<float>(acc));
      }
    }
  });
  return Status::Ok();
}

// Gemm(A, B, C?) = alpha * op(A) op(B) + beta * C.
Status shapeGemm(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& g = n.attrs.get<GemmAttrs>();
  const Shape &sa = in[0]->shape, &sb = in[1]->shape;
  if (sa.size() != 2 || sb.size() != 2) {
    return makeError(StatusCode::kInvalidArgument, "Gemm needs 2-D A and B, got ", shapeToString(sa), " and ",
                     shapeToString(sb));
  }
  const MatDims da = matDims(sa, g.transpose_a), db = matDims(sb, g.transpose_b);
  if (da.cols != db.rows) {
    return makeError(StatusCode::kInvalidArgument, "Gemm inner dims differ: ", da.cols, " vs ", db.rows);
  }
  const Shape y{da.rows, db.cols};
  if (in.size() > 2 && in[2]) {
    auto b = broadcastShapes(in[2]->shape, y);
    if (!b.ok() || *b != y) {
      return makeError(StatusCode::kInvalidArgument, "Gemm C of shape ", shapeToString(in[2]->shape),
                       " does not broadcast to ", shapeToString(y));
    }
  }
  out = {y};
  return Status::Ok();
}
Status gemmKernel(const KernelContext& c) {
  const auto& g = c.node.attrs.get<GemmAttrs>();
  const TensorView &a = c.in(0), &b = c.in(1);
  const MutableTensorView& y = c.out(0);
  const MatDims da = matDims(a.shape, g.transpose_a), db = matDims(b.shape, g.transpose_b);
  const int64_t M = da.rows, K = da.cols, N = db.cols;
  const TensorView* cc = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  std::vector<int64_t> cst = cc ? broadcastStrides(cc->shape, y.shape) : std::vector<int64_t>{0, 0};
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t ai = g.transpose_a ? k * M + i : i * K + k;
        const int64_t bj = g.transpose_b ? j * K + k : k * N + j;
        acc += static_cast<double>(loadF(a.data, a.dtype, ai)) * loadF(b.data, b.dtype, bj);
      }
      double v = g.alpha * acc;
      if (cc) v += g.beta * loadF(cc->data, cc->dtype, i * cst[0] + j * cst[1]);
      storeF(y.data, y.dtype, i * N + j, static_cast<float>(v));
    }
  }
  return Status::Ok();
}

// FullyConnected(x [..., K], w [N, K], b? [N]) -> [..., N].
Status shapeFullyConnected(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape &x = in[0]->shape, &w = in[1]->shape;
  if (x.empty() || w.size() != 2 || w[1] != x.back()) {
    return makeError(StatusCode::kInvalidArgument, "FullyConnected needs x [..., K] and w [N, K], got ",
                     shapeToString(x), " and ", shapeToString(w));
  }
  if (in.size() > 2 && in[2] && numElements(in[2]->shape) != w[0]) {
    return makeError(StatusCode::kInvalidArgument, "FullyConnected bias has ", numElements(in[2]->shape),
                     " elements, needs ", w[0]);
  }
  Shape y = x;
  y.back() = w[0];
  out = {y};
  return Status::Ok();
}
Status fullyConnectedKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &w = c.in(1);
  const TensorView* b = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const int64_t K = w.shape[1], N = w.shape[0], rows = x.size() / std::max<int64_t>(K, 1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = b ? loadF(b->data, b->dtype, j) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        acc += static_cast<double>(loadF(x.data, x.dtype, r * K + k)) * loadF(w.data, w.dtype, j * K + k);
      }
      storeF(c.out(0).data, c.out(0).dtype, r * N + j, static_cast<float>(acc));
    }
  }
  return Status::Ok();
}

// ---- Conv2D and pooling -----------------------------------------------------------
// Window attributes (strides, dilations, pads, kernel sizes) between `min` and 2^31: with
// dims of at most 2^40 elements the shape arithmetic then stays inside int64.
Status checkPairs(const char* op, const Ints& v, size_t n, const char* what, int64_t min) {
  if (v.size() != n) return makeError(StatusCode::kInvalidArgument, op, " ", what, " needs ", n, " values, got ", v.size());
  for (int64_t x : v) {
    if (x < min) return makeError(StatusCode::kInvalidArgument, op, " ", what, " value ", x, " is below ", min);
    if (x > (int64_t{1} << 31)) return makeError(StatusCode::kInvalidArgument, op, " ", what, " value ", x, " is above 2^31");
  }
  return Status::Ok();
}

}  // namespace

// Shared with the integer convolutions (quant_linear.cc): x in[0], w in[1], bias in[2].
Status shapeConv2D(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<Conv2DAttrs>();
  const Shape &x = in[0]->shape, &w = in[1]->shape;
  RETURN_IF_ERROR(checkPairs("Conv2D", a.strides, 2, "strides", 1));
  RETURN_IF_ERROR(checkPairs("Conv2D", a.dilations, 2, "dilations", 1));
  RETURN_IF_ERROR(checkPairs("Conv2D", a.pads, 4, "pads", 0));
  if (x.size() != 4 || w.size() != 4) {
    return makeError(StatusCode::kInvalidArgument, "Conv2D needs NCHW input and OIHW weights, got ",
                     shapeToString(x), " and ", shapeToString(w));
  }
  if (a.groups < 1 || a.groups > (int64_t{1} << 31) || x[1] % a.groups != 0 || w[0] % a.groups != 0 ||
      w[1] * a.groups != x[1]) {
    return makeError(StatusCode::kInvalidArgument, "Conv2D groups=", a.groups, " do not fit input channels ", x[1],
                     " and weights ", shapeToString(w), " (weights need ", x[1], "/groups input channels)");
  }
  if (in.size() > 2 && in[2] && numElements(in[2]->shape) != w[0]) {
    return makeError(StatusCode::kInvalidArgument, "Conv2D bias has ", numElements(in[2]->shape), " elements, needs ", w[0]);
  }
  Shape y{x[0], w[0], 0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(a.dilations[d], w[2 + d] - 1, &span)) {
      return makeError(StatusCode::kInvalidArgument, "Conv2D dilation ", a.dilations[d], " times kernel ", w[2 + d],
                       " overflows int64");
    }
    ++span;
    const int64_t padded = x[2 + d] + a.pads[d] + a.pads[d + 2];
    if (padded < span) {
      return makeError(StatusCode::kInvalidArgument, "Conv2D kernel span ", span, " exceeds padded input ", padded);
    }
    y[2 + d] = (padded - span) / a.strides[d] + 1;
  }
  out = {y};
  return Status::Ok();
}

namespace {

Status conv2DKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<Conv2DAttrs>();
  const TensorView &x = c.in(0), &w = c.in(1);
  const TensorView* b = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const MutableTensorView& y = c.out(0);
  directConv2D(
      a, x.shape, w.shape, y.shape, [&](int64_t o) { return b ? static_cast<double>(loadF(b->data, b->dtype, o)) : 0.0; },
      [&](double& acc, int64_t xi, int64_t wi) {
        acc += static_cast<double>(loadF(x.data, x.dtype, xi)) * loadF(w.data, w.dtype, wi);
      },
      [&](int64_t out, double acc, int64_t) { storeF(y.data, y.dtype, out, static_cast<float>(acc)); });
  return Status::Ok();
}

int64_t poolOutLen(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;  // last window must start inside
  return out;
}
Status shapePool(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<PoolAttrs>();
  const Shape& x = in[0]->shape;
  RETURN_IF_ERROR(checkPairs(n.op->name, a.kernel, 2, "kernel", 1));
  RETURN_IF_ERROR(checkPairs(n.op->name, a.strides, 2, "strides", 1));
  RETURN_IF_ERROR(checkPairs(n.op->name, a.pads, 4, "pads", 0));
  for (int64_t d : a.dilations) {
    if (d != 1) return makeError(StatusCode::kUnsupported, n.op->name, " dilations are not supported in 2-D pooling");
  }
  if (x.size() != 4) return makeError(StatusCode::kInvalidArgument, n.op->name, " needs NCHW input, got ", shapeToString(x));
  Shape y{x[0], x[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    if (a.pads[d] >= a.kernel[d] || a.pads[d + 2] >= a.kernel[d]) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " pad must be smaller than the kernel");
    }
    if (x[2 + d] + a.pads[d] + a.pads[d + 2] < a.kernel[d]) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " kernel ", a.kernel[d], " exceeds padded input");
    }
    y[2 + d] = poolOutLen(x[2 + d], a.kernel[d], a.strides[d], a.pads[d], a.pads[d + 2], a.ceil_mode);
  }
  out = {y};
  return Status::Ok();
}
template <bool kMax> Status poolKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<PoolAttrs>();
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const int64_t planes = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = y.shape[2], OW = y.shape[3];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t h0 = oh * a.strides[0] - a.pads[0], w0 = ow * a.strides[1] - a.pads[1];
        const int64_t h1 = std::min(h0 + a.kernel[0], H + a.pads[2]), w1 = std::min(w0 + a.kernel[1], W + a.pads[3]);
        const int64_t padded_count = (h1 - h0) * (w1 - w0);
        double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
          for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w) {
            const double v = loadF(x.data, x.dtype, (p * H + h) * W + w);
            acc = kMax ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (!kMax) acc /= static_cast<double>(a.count_include_pad ? padded_count : std::max<int64_t>(count, 1));
        storeF(y.data, y.dtype, (p * OH + oh) * OW + ow, static_cast<float>(acc));
      }
  return Status::Ok();
}

Status shapeGlobalPool(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& x = in[0]->shape;
  if (x.size() < 3) return makeError(StatusCode::kInvalidArgument, "GlobalAvgPool needs rank >= 3, got ", shapeToString(x));
  Shape y = x;
  for (size_t d = 2; d < y.size(); ++d) y[d] = 1;
  out = {y};
  return Status::Ok();
}
Status globalAvgPoolKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const int64_t planes = x.shape[0] * x.shape[1], area = x.size() / std::max<int64_t>(planes, 1);
  for (int64_t p = 0; p < planes; ++p) {
    double acc = 0.0;
    for (int64_t i = 0; i < area; ++i) acc += loadF(x.data, x.dtype, p * area + i);
    storeF(c.out(0).data, c.out(0).dtype, p, static_cast<float>(area ? acc / area : 0.0));
  }
  return Status::Ok();
}

// BiasAdd(x, b): b added along the channel axis (1 for NCHW, last for NHWC).
int64_t biasAxis(const ir::Node& n, size_t rank) {
  return n.attrs.get<FormatAttrs>().format == DataFormat::kNHWC ? static_cast<int64_t>(rank) - 1 : (rank >= 2 ? 1 : 0);
}
Status shapeBiasAdd(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& x = in[0]->shape;
  if (x.empty()) return makeError(StatusCode::kInvalidArgument, "BiasAdd needs rank >= 1");
  const int64_t ch = x[biasAxis(n, x.size())];
  if (in[1]->shape.size() != 1 || in[1]->shape[0] != ch) {
    return makeError(StatusCode::kInvalidArgument, "BiasAdd bias must be 1-D of ", ch, " channels, got ",
                     shapeToString(in[1]->shape));
  }
  out = {x};
  return Status::Ok();
}
Status biasAddKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &b = c.in(1);
  const AxisSplit s = splitAtAxis(x.shape, biasAxis(c.node, x.shape.size()));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t e = 0; e < s.extent; ++e)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t idx = (o * s.extent + e) * s.inner + i;
        storeF(c.out(0).data, c.out(0).dtype, idx, loadF(x.data, x.dtype, idx) + loadF(b.data, b.dtype, e));
      }
  return Status::Ok();
}

}  // namespace

void registerLinearOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("MatMul")) {
    t.push_back({"MatMul", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kMatMul, dtypeFloatData, shapeMatMul, matMulKernel,
               "2-D op(a) @ op(b), op = optional transpose"});
    t.back().product_inputs = 0b11;
  }
  if constexpr (opSelected("BatchMatMul")) {
    t.push_back({"BatchMatMul", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kMatMul, dtypeFloatData, shapeMatMul,
               matMulKernel, "batched op(a) @ op(b), batch dims broadcast"});
    t.back().product_inputs = 0b11;
  }
  if constexpr (opSelected("Gemm")) {
    t.push_back({"Gemm", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kGemm, dtypeFloatData, shapeGemm, gemmKernel,
               "alpha op(A) op(B) + beta C"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("FullyConnected")) {
    t.push_back({"FullyConnected", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kNone, dtypeFloatData, shapeFullyConnected,
               fullyConnectedKernel, "x [..,K] @ w[N,K]^T + b"});
    t.back().product_inputs = 0b111;
  }
  if constexpr (opSelected("Conv2D")) {
    t.push_back({"Conv2D", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kConv2D, dtypeFloatData, shapeConv2D, conv2DKernel,
               "NCHW x OIHW convolution with stride, pad, dilation, groups, optional bias"});
    t.back().product_inputs = 0b110;
  }
  if constexpr (opSelected("MaxPool")) t.push_back({"MaxPool", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPool, dtypeNumericSame, shapePool, poolKernel<true>,
               "NCHW max over windows (padding ignored)"});
  if constexpr (opSelected("AvgPool")) t.push_back({"AvgPool", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPool, dtypeFloatData, shapePool, poolKernel<false>,
               "NCHW mean over windows (count_include_pad chooses the divisor)"});
  if constexpr (opSelected("GlobalAvgPool")) t.push_back({"GlobalAvgPool", OpClass::kReduce, 1, 1, 1, 1, AttrKind::kNone, dtypeFloatData, shapeGlobalPool,
               globalAvgPoolKernel, "mean over all axes after N, C"});
  if constexpr (opSelected("BiasAdd")) t.push_back({"BiasAdd", OpClass::kBroadcast, 2, 2, 1, 1, AttrKind::kFormat, dtypeFloatData, shapeBiasAdd,
               biasAddKernel, "x + b along the channel axis"});
}

}  // namespace gkrt::ops
