// The integer and quantized linear ops of ONNX and of onnxruntime's quantizer:
//   MatMulInteger(a, b, a_zp?, b_zp?)                 int32 = (a - a_zp) @ (b - b_zp)
//   ConvInteger(x, w, x_zp?, w_zp?)                   int32 = conv(x - x_zp, w - w_zp)
//   QLinearMatMul(a, as, azp, b, bs, bzp, ys, yzp)    y = sat(rint(acc * as*bs/ys) + yzp)
//   QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B?)  y = sat(rint((acc + B) * xs*ws/ys) + yzp)
//   QLinearAdd / QLinearMul (com.microsoft)           c = sat(rint(deq(a) (+|*) deq(b) / cs) + czp)
//   QuantBatchMatMul(a, as, azp, b, bs, bzp, B?)      float32 y = (acc + B) * as*bs   (gkrt: MindSpore's
//       QuantBatchMatmul with its bias, made by inference_qbmm_add_fusion; B int32 per column)
//   MatMulIntegerToFloat(a, b, as, bs, azp?, bzp?, bias?)  float32 y = float(acc) * float(as*bs) + bias
//       (onnxruntime's com.microsoft op; gkrt makes it, and its Relu/Gelu forms with the activation
//       applied last, from the dequantization chain of a dynamically quantized model:
//       fusion/passes/matmul_integer_to_float_fusion.cc)
// Reference kernels follow onnx.reference: integer accumulation in int32 (exact here in
// int64), the rescale multiplier computed in the scales' float type step by step, round
// half to even, saturation to the output type. Scales and zero points are per tensor
// (one element) or per axis: a's per row, b's per column, w's per output channel.
// QLinearAdd/Mul compute in float32 as onnxruntime's MLAS kernels do.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "runtime/ir/ops/conv_loop.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/quant_helpers.h"

namespace gkrt::ops {
namespace {

bool isInt8Like(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

Status requireInt8(const ir::Node& n, const In& in, size_t k, const char* what) {
  if (k >= in.size() || !in[k]) return Status::Ok();
  if (!isInt8Like(in[k]->dtype)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " ", what, " (input ", k, ") must be int8 or uint8, got ",
                     dtypeName(in[k]->dtype));
  }
  return Status::Ok();
}
// A zero point (input zk) has its tensor's (input k) type.
Status requireZeroPointType(const ir::Node& n, const In& in, size_t k, size_t zk) {
  if (zk < in.size() && in[zk] && in[zk]->dtype != in[k]->dtype) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " zero point (input ", zk, ") is ",
                     dtypeName(in[zk]->dtype), " but its tensor (input ", k, ") is ", dtypeName(in[k]->dtype));
  }
  return Status::Ok();
}
// A scale or zero point with 1 element, or `count` elements along one axis.
Status requireParamCount(const ir::Node& n, const In& in, size_t k, int64_t count, const char* what) {
  if (k >= in.size() || !in[k]) return Status::Ok();
  const int64_t e = numElements(in[k]->shape);
  if (e != 1 && e != count) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " ", what, " (input ", k, ") has ", e,
                     " elements; give one (per tensor) or ", count, " (per axis), shape ", shapeToString(in[k]->shape));
  }
  return Status::Ok();
}

int64_t paramIndex(const TensorView* t, int64_t i) { return t->size() == 1 ? 0 : i; }
int64_t zeroPointAt(const TensorView* zp, int64_t i) { return zp ? loadIndex(*zp, paramIndex(zp, i)) : 0; }
double scaleAt(const TensorView& s, int64_t i) { return loadF(s.data, s.dtype, paramIndex(&s, i)); }
const TensorView* optionalIn(const KernelContext& c, size_t k) {
  return c.inputs.size() > k && c.in(k).present() ? &c.in(k) : nullptr;
}

// Stores rint(v) + zp saturated to y's integer type.
void storeRequantized(const MutableTensorView& y, int64_t i, double v, int64_t zp) {
  int64_t lo = 0, hi = 0;
  quantIntRange(y.dtype, lo, hi);
  const double r = std::isnan(v) ? 0.0 : std::nearbyint(std::clamp(v, -9.0e15, 9.0e15));
  const int64_t q = std::clamp<int64_t>(static_cast<int64_t>(r) + zp, lo, hi);
  if (y.dtype == DType::kInt8) y.as<int8_t>()[i] = static_cast<int8_t>(q);
  else y.as<uint8_t>()[i] = static_cast<uint8_t>(q);
}

// ---- matmul --------------------------------------------------------------------
// numpy matmul of two rank >= 2 operands, batch dims broadcast.
Status matMulShape(const ir::Node& n, const Shape& sa, const Shape& sb, Shape& y) {
  if (sa.size() < 2 || sb.size() < 2) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs operands of rank >= 2, got ", shapeToString(sa),
                     " and ", shapeToString(sb));
  }
  if (sa.back() != sb[sb.size() - 2]) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " inner dims differ: ", shapeToString(sa), " x ",
                     shapeToString(sb));
  }
  ASSIGN_OR_RETURN(y, broadcastShapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2)));
  y.push_back(sa[sa.size() - 2]);
  y.push_back(sb.back());
  return Status::Ok();
}

// Calls fn(output index, int32 sum, row i, column j) for every output element.
template <class Fn>
void integerMatMul(const TensorView& a, const TensorView& b, const TensorView* azp, const TensorView* bzp,
                   const Shape& y_shape, Fn&& fn) {
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  const Shape out_batch(y_shape.begin(), y_shape.end() - 2);
  const Shape a_batch(a.shape.begin(), a.shape.end() - 2), b_batch(b.shape.begin(), b.shape.end() - 2);
  std::vector<int64_t> bz(N), col(K);
  for (int64_t j = 0; j < N; ++j) bz[j] = zeroPointAt(bzp, j);
  forEachBroadcast<2>(out_batch, {&a_batch, &b_batch}, [&](int64_t bi, const std::array<int64_t, 2>& o) {
    const int64_t abase = o[0] * M * K, bbase = o[1] * K * N, ybase = bi * M * N;
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t k = 0; k < K; ++k) col[k] = loadIndex(b, bbase + k * N + j) - bz[j];
      for (int64_t i = 0; i < M; ++i) {
        const int64_t az = zeroPointAt(azp, i);
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += (loadIndex(a, abase + i * K + k) - az) * col[k];
        fn(ybase + i * N + j, acc, i, j);
      }
    }
  });
}

Status dtypeMatMulInteger(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireInt8(n, in, 0, "a"));
  RETURN_IF_ERROR(requireInt8(n, in, 1, "b"));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 0, 2));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 1, 3));
  out = {DType::kInt32};
  return Status::Ok();
}
Status shapeMatMulInteger(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  Shape y;
  RETURN_IF_ERROR(matMulShape(n, in[0]->shape, in[1]->shape, y));
  RETURN_IF_ERROR(requireParamCount(n, in, 2, y[y.size() - 2], "a zero point"));
  RETURN_IF_ERROR(requireParamCount(n, in, 3, y.back(), "b zero point"));
  out = {y};
  return Status::Ok();
}
Status matMulIntegerKernel(const KernelContext& c) {
  const MutableTensorView& y = c.out(0);
  integerMatMul(c.in(0), c.in(1), optionalIn(c, 2), optionalIn(c, 3), y.shape,
                [&](int64_t i, int64_t acc, int64_t, int64_t) { y.as<int32_t>()[i] = static_cast<int32_t>(acc); });
  return Status::Ok();
}

// Inputs a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp.
Status dtypeQLinearMatMul(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireInt8(n, in, 0, "a"));
  RETURN_IF_ERROR(requireInt8(n, in, 3, "b"));
  RETURN_IF_ERROR(requireInt8(n, in, 7, "y zero point"));
  for (size_t k : {1, 4, 6}) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 0, 2));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 3, 5));
  out = {in[7]->dtype};
  return Status::Ok();
}
Status shapeQLinearMatMul(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  Shape y;
  RETURN_IF_ERROR(matMulShape(n, in[0]->shape, in[3]->shape, y));
  const int64_t M = y[y.size() - 2], N = y.back();
  RETURN_IF_ERROR(requireParamCount(n, in, 1, M, "a scale"));
  RETURN_IF_ERROR(requireParamCount(n, in, 2, M, "a zero point"));
  RETURN_IF_ERROR(requireParamCount(n, in, 4, N, "b scale"));
  RETURN_IF_ERROR(requireParamCount(n, in, 5, N, "b zero point"));
  RETURN_IF_ERROR(requireParamCount(n, in, 6, M, "y scale"));
  RETURN_IF_ERROR(requireParamCount(n, in, 7, M, "y zero point"));
  out = {y};
  return Status::Ok();
}
Status qlinearMatMulKernel(const KernelContext& c) {
  const TensorView &as = c.in(1), &bs = c.in(4), &ys = c.in(6);
  const TensorView* yzp = &c.in(7);
  const DType st = as.dtype;
  const MutableTensorView& y = c.out(0);
  integerMatMul(c.in(0), c.in(3), &c.in(2), &c.in(5), y.shape, [&](int64_t i, int64_t acc, int64_t r, int64_t col) {
    const double m = roundToFloatType(st, roundToFloatType(st, scaleAt(as, r) * scaleAt(bs, col)) / scaleAt(ys, r));
    storeRequantized(y, i, static_cast<double>(acc) * m, zeroPointAt(yzp, r));
  });
  return Status::Ok();
}

// The integer matmuls with a float32 result: where their operands are, and the bias type.
//   QuantBatchMatMul(a, a_scale, a_zp, b, b_scale, b_zp, bias_int32?)
//   MatMulIntegerToFloat[Relu|Gelu](a, b, a_scale, b_scale, a_zp?, b_zp?, bias_float32?)
struct ToFloatInputs {
  size_t a, as, azp, b, bs, bzp;
  DType bias;
};
ToFloatInputs toFloatInputs(const ir::Node& n) {
  if (std::string(n.op->name) == "QuantBatchMatMul") return {0, 1, 2, 3, 4, 5, DType::kInt32};
  return {0, 2, 4, 1, 3, 5, DType::kFloat32};
}
constexpr size_t kToFloatBias = 6;  // both ops

Status dtypeIntegerMatMulToFloat(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const ToFloatInputs k = toFloatInputs(n);
  RETURN_IF_ERROR(requireInt8(n, in, k.a, "a"));
  RETURN_IF_ERROR(requireInt8(n, in, k.b, "b"));
  for (size_t i : {k.as, k.bs}) RETURN_IF_ERROR(requireFloat(n, in[i], i));
  RETURN_IF_ERROR(requireZeroPointType(n, in, k.a, k.azp));
  RETURN_IF_ERROR(requireZeroPointType(n, in, k.b, k.bzp));
  if (in.size() > kToFloatBias && in[kToFloatBias] && in[kToFloatBias]->dtype != k.bias) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " bias (input 6) must be ", dtypeName(k.bias), ", got ",
                     dtypeName(in[kToFloatBias]->dtype));
  }
  out = {DType::kFloat32};
  return Status::Ok();
}
Status shapeIntegerMatMulToFloat(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const ToFloatInputs k = toFloatInputs(n);
  Shape y;
  RETURN_IF_ERROR(matMulShape(n, in[k.a]->shape, in[k.b]->shape, y));
  const int64_t N = y.back();
  RETURN_IF_ERROR(requireParamCount(n, in, k.as, 1, "a scale"));
  RETURN_IF_ERROR(requireParamCount(n, in, k.azp, 1, "a zero point"));
  RETURN_IF_ERROR(requireParamCount(n, in, k.bs, N, "b scale"));
  RETURN_IF_ERROR(requireParamCount(n, in, k.bzp, N, "b zero point"));
  if (in.size() > kToFloatBias && in[kToFloatBias] && numElements(in[kToFloatBias]->shape) != N) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " bias has ", numElements(in[kToFloatBias]->shape),
                     " elements; it needs one per output column (", N, ")");
  }
  out = {y};
  return Status::Ok();
}
// The int32 sum plus the bias, times as*bs[j] rounded to float32 (the dequantization scale
// MindSpore's kernel takes), in float32.
Status quantBatchMatMulKernel(const KernelContext& c) {
  const TensorView &as = c.in(1), &bs = c.in(4);
  const TensorView* bias = optionalIn(c, 6);
  const MutableTensorView& y = c.out(0);
  integerMatMul(c.in(0), c.in(3), &c.in(2), &c.in(5), y.shape, [&](int64_t i, int64_t acc, int64_t, int64_t col) {
    const float scale = static_cast<float>(scaleAt(as, 0) * scaleAt(bs, col));
    const int64_t sum = acc + (bias ? loadIndex(*bias, col) : 0);
    y.as<float>()[i] = static_cast<float>(sum) * scale;
  });
  return Status::Ok();
}

// ---- convolution ----------------------------------------------------------------
// Calls fn(output index, int32 sum, output channel) for every output element.
template <class Fn>
void integerConv(const Conv2DAttrs& a, const TensorView& x, const TensorView& w, const TensorView* xzp,
                 const TensorView* wzp, const Shape& y_shape, Fn&& fn) {
  const int64_t xz = zeroPointAt(xzp, 0);
  // (int32 sum, weight zero point of the output channel); padding reads x_zp, which adds
  // (x_zp - x_zp) * w = 0, so skipping it is exact.
  directConv2D(
      a, x.shape, w.shape, y_shape, [&](int64_t o) { return std::pair<int64_t, int64_t>{0, zeroPointAt(wzp, o)}; },
      [&](std::pair<int64_t, int64_t>& acc, int64_t xi, int64_t wi) {
        acc.first += (loadIndex(x, xi) - xz) * (loadIndex(w, wi) - acc.second);
      },
      [&](int64_t out, const std::pair<int64_t, int64_t>& acc, int64_t o) { fn(out, acc.first, o); });
}

Status dtypeConvInteger(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireInt8(n, in, 0, "x"));
  RETURN_IF_ERROR(requireInt8(n, in, 1, "w"));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 0, 2));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 1, 3));
  out = {DType::kInt32};
  return Status::Ok();
}
Status shapeConvInteger(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(shapeConv2D(n, {in[0], in[1]}, out));
  RETURN_IF_ERROR(requireParamCount(n, in, 2, 1, "x zero point"));
  return requireParamCount(n, in, 3, in[1]->shape[0], "w zero point");
}
Status convIntegerKernel(const KernelContext& c) {
  const MutableTensorView& y = c.out(0);
  integerConv(c.node.attrs.get<Conv2DAttrs>(), c.in(0), c.in(1), optionalIn(c, 2), optionalIn(c, 3), y.shape,
              [&](int64_t i, int64_t acc, int64_t) { y.as<int32_t>()[i] = static_cast<int32_t>(acc); });
  return Status::Ok();
}

// Inputs x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (int32, optional).
Status dtypeQLinearConv(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireInt8(n, in, 0, "x"));
  RETURN_IF_ERROR(requireInt8(n, in, 3, "w"));
  RETURN_IF_ERROR(requireInt8(n, in, 7, "y zero point"));
  for (size_t k : {1, 4, 6}) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 0, 2));
  RETURN_IF_ERROR(requireZeroPointType(n, in, 3, 5));
  if (in.size() > 8 && in[8] && in[8]->dtype != DType::kInt32) {
    return makeError(StatusCode::kInvalidArgument, "QLinearConv bias B must be int32, got ", dtypeName(in[8]->dtype));
  }
  out = {in[7]->dtype};
  return Status::Ok();
}
Status shapeQLinearConv(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(shapeConv2D(n, {in[0], in[3], in.size() > 8 ? in[8] : nullptr}, out));
  const int64_t O = in[3]->shape[0];
  for (size_t k : {1, 2, 6, 7}) RETURN_IF_ERROR(requireParamCount(n, in, k, 1, "x/y scale or zero point"));
  RETURN_IF_ERROR(requireParamCount(n, in, 4, O, "w scale"));
  return requireParamCount(n, in, 5, O, "w zero point");
}
Status qlinearConvKernel(const KernelContext& c) {
  const TensorView &xs = c.in(1), &ws = c.in(4), &ys = c.in(6);
  const TensorView* bias = optionalIn(c, 8);
  const DType st = xs.dtype;
  const int64_t yz = zeroPointAt(&c.in(7), 0);
  const MutableTensorView& y = c.out(0);
  std::vector<double> m(c.in(3).shape[0]);
  for (size_t o = 0; o < m.size(); ++o) {
    m[o] = roundToFloatType(st, roundToFloatType(st, scaleAt(xs, 0) * scaleAt(ws, o)) / scaleAt(ys, 0));
  }
  integerConv(c.node.attrs.get<Conv2DAttrs>(), c.in(0), c.in(3), &c.in(2), &c.in(5), y.shape,
              [&](int64_t i, int64_t acc, int64_t o) {
                if (bias) acc += loadIndex(*bias, o);
                storeRequantized(y, i, static_cast<double>(acc) * m[o], yz);
              });
  return Status::Ok();
}

// ---- elementwise (com.microsoft) ---------------------------------------------------
// Inputs A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp?; per-tensor parameters.
Status dtypeQLinearBinary(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireInt8(n, in, 0, "A"));
  if (!in[3] || in[3]->dtype != in[0]->dtype) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " B must have A's type ", dtypeName(in[0]->dtype));
  }
  for (size_t k : {1, 4, 6}) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  for (size_t zk : {2, 5, 7}) RETURN_IF_ERROR(requireZeroPointType(n, in, 0, zk));
  out = {in[0]->dtype};
  return Status::Ok();
}
Status shapeQLinearBinary(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  for (size_t k : {1, 2, 4, 5, 6, 7}) RETURN_IF_ERROR(requireParamCount(n, in, k, 1, "scale or zero point"));
  ASSIGN_OR_RETURN(Shape y, broadcastShapes(in[0]->shape, in[3]->shape));
  out = {y};
  return Status::Ok();
}
template <bool kMul> Status qlinearBinaryKernel(const KernelContext& c) {
  const TensorView &a = c.in(0), &b = c.in(3);
  const float as = scaleAt(c.in(1), 0), bs = scaleAt(c.in(4), 0), cs = scaleAt(c.in(6), 0);
  const int64_t az = zeroPointAt(optionalIn(c, 2), 0), bz = zeroPointAt(optionalIn(c, 5), 0);
  const int64_t cz = zeroPointAt(optionalIn(c, 7), 0);
  const MutableTensorView& y = c.out(0);
  const float ra = as / cs, rb = bs / cs, rab = as * bs / cs;
  forEachBroadcast<2>(y.shape, {&a.shape, &b.shape}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    const float fa = static_cast<float>(loadIndex(a, o[0]) - az), fb = static_cast<float>(loadIndex(b, o[1]) - bz);
    const float v = kMul ? fa * fb * rab : fa * ra + fb * rb;
    storeRequantized(y, i, v, cz);
  });
  return Status::Ok();
}

// Each step in float32 as the unfused ops round it: Cast(acc), Mul by float32(as*bs),
// Add bias, then the activation (GeLU's reference formula).
Status matMulIntegerToFloatKernel(const KernelContext& c) {
  const TensorView &as = c.in(2), &bs = c.in(3);
  const TensorView* bias = optionalIn(c, 6);
  const MutableTensorView& y = c.out(0);
  const std::string op = c.node.op->name;
  const bool relu = op == "MatMulIntegerToFloatRelu", gelu = op == "MatMulIntegerToFloatGelu";
  const bool erf_form = gelu && c.node.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone;
  integerMatMul(c.in(0), c.in(1), optionalIn(c, 4), optionalIn(c, 5), y.shape, [&](int64_t i, int64_t acc, int64_t, int64_t col) {
    const float scale = static_cast<float>(scaleAt(as, 0) * scaleAt(bs, col));
    float v = static_cast<float>(acc) * scale;
    if (bias) v += bias->as<float>()[bias->size() == 1 ? 0 : col];
    if (relu) v = v > 0.0f ? v : 0.0f;
    if (gelu && erf_form) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678f));
    else if (gelu) v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    y.as<float>()[i] = v;
  });
  return Status::Ok();
}

}  // namespace

void registerQuantLinearOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("MatMulInteger")) t.push_back({"MatMulInteger", OpClass::kOpaque, 2, 4, 1, 1, AttrKind::kNone,
               dtypeMatMulInteger, shapeMatMulInteger, matMulIntegerKernel,
               "int32 (a - a_zp) @ (b - b_zp); int8/uint8; a_zp per tensor or row, b_zp per tensor or column"});
  if constexpr (opSelected("ConvInteger")) t.push_back({"ConvInteger", OpClass::kOpaque, 2, 4, 1, 1, AttrKind::kConv2D,
               dtypeConvInteger, shapeConvInteger, convIntegerKernel,
               "int32 NCHW conv(x - x_zp, w - w_zp); w_zp per tensor or output channel"});
  if constexpr (opSelected("QLinearMatMul")) t.push_back({"QLinearMatMul", OpClass::kOpaque, 8, 8, 1, 1, AttrKind::kNone,
               dtypeQLinearMatMul, shapeQLinearMatMul, qlinearMatMulKernel,
               "y = sat(rint((a - azp) @ (b - bzp) * as*bs/ys) + yzp); b per tensor or column"});
  if constexpr (opSelected("QuantBatchMatMul")) t.push_back({"QuantBatchMatMul", OpClass::kOpaque, 6, 7, 1, 1, AttrKind::kNone,
               dtypeIntegerMatMulToFloat, shapeIntegerMatMulToFloat, quantBatchMatMulKernel,
               "float32 y = ((a - azp) @ (b - bzp) + B) * as*bs; a per tensor, b per tensor or column, B int32"});
  if constexpr (opSelected("MatMulIntegerToFloat")) t.push_back({"MatMulIntegerToFloat", OpClass::kOpaque, 4, 7, 1, 1, AttrKind::kNone,
               dtypeIntegerMatMulToFloat, shapeIntegerMatMulToFloat, matMulIntegerToFloatKernel,
               "float32 y = (a - azp) @ (b - bzp) * as*bs + bias; a per tensor, b per tensor or column (com.microsoft)"});
  if constexpr (opSelected("MatMulIntegerToFloatRelu")) t.push_back({"MatMulIntegerToFloatRelu", OpClass::kOpaque, 4, 7, 1, 1,
               AttrKind::kNone, dtypeIntegerMatMulToFloat, shapeIntegerMatMulToFloat, matMulIntegerToFloatKernel,
               "relu(MatMulIntegerToFloat(...)) (gkrt)"});
  if constexpr (opSelected("MatMulIntegerToFloatGelu")) t.push_back({"MatMulIntegerToFloatGelu", OpClass::kOpaque, 4, 7, 1, 1,
               AttrKind::kGelu, dtypeIntegerMatMulToFloat, shapeIntegerMatMulToFloat, matMulIntegerToFloatKernel,
               "gelu(MatMulIntegerToFloat(...)), erf or tanh form (gkrt)"});
  if constexpr (opSelected("QLinearConv")) t.push_back({"QLinearConv", OpClass::kOpaque, 8, 9, 1, 1, AttrKind::kConv2D,
               dtypeQLinearConv, shapeQLinearConv, qlinearConvKernel,
               "y = sat(rint((conv(x - xzp, w - wzp) + B) * xs*ws/ys) + yzp); w per tensor or output channel"});
  if constexpr (opSelected("QLinearAdd")) t.push_back({"QLinearAdd", OpClass::kOpaque, 7, 8, 1, 1, AttrKind::kNone,
               dtypeQLinearBinary, shapeQLinearBinary, qlinearBinaryKernel<false>,
               "c = sat(rint(((a - azp) as + (b - bzp) bs) / cs) + czp), broadcast (com.microsoft)"});
  if constexpr (opSelected("QLinearMul")) t.push_back({"QLinearMul", OpClass::kOpaque, 7, 8, 1, 1, AttrKind::kNone,
               dtypeQLinearBinary, shapeQLinearBinary, qlinearBinaryKernel<true>,
               "c = sat(rint((a - azp)(b - bzp) as bs / cs) + czp), broadcast (com.microsoft)"});
}

}  // namespace gkrt::ops
