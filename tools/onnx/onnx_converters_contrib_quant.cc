// onnxruntime's quantized operators (domain com.microsoft), as its quantizer writes them
// (onnxruntime.quantization: quantize_dynamic, quantize_static in QOperator format,
// matmul_4bits_quantizer), each as the float op between DequantizeLinear and
// QuantizeLinear, so quant_dq_op_q_fusion hands them to the int8 kernels where gkrt has
// one, and the reference computes them exactly as dequantize-op-quantize elsewhere:
//   QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax (its `opset` semantics),
//   QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool (channels_last too),
//   QLinearWhere, QGemm (int32 C at a_scale * b_scale; float output without y_scale);
//   MatMulIntegerToFloat: gkrt's op of that name;
//   DynamicQuantizeMatMul: A quantized to uint8 at run time as onnxruntime does
//     (DynamicQuantizeLinear), then MatMulInteger x a_scale * b_scale + bias (one
//     MatMulIntegerToFloat after matmul_integer_to_float_fusion);
//   DynamicQuantizeLSTM: gkrt's op of that name (onnx_converters_recurrent.cc), X and h
//     quantized at run time as onnxruntime does (runtime/ir/ops/recurrent_quant.h);
//   GatherBlockQuantized: the 4- or 8-bit block-quantized table dequantized, then Gather.
#include <map>
#include <optional>
#include <set>

#include "tools/onnx/onnx_attention_parts.h"

namespace gkrt::onnx_import {

StatusOr<Outs> convertAs(Context& c, const Node& n, const std::string& op_type, const std::vector<Value>& ins, int outputs,
                         const std::set<std::string>& drop_attrs) {
  Node m;
  m.set_op_type(op_type);
  m.set_name(n.name());
  for (const auto& a : n.attribute()) {
    if (!drop_attrs.count(a.name())) *m.add_attribute() = a;
  }
  for (Value v : ins) {
    const std::string name = v.id >= 0 ? "__gkrt_value_" + std::to_string(v.id) : "";
    if (v.id >= 0 && !c.has(name)) c.bind(name, v);
    m.add_input(name);
  }
  for (int k = 0; k < outputs; ++k) m.add_output(n.name() + "__gkrt_out_" + std::to_string(k));
  const Converter* f = findConverter(op_type);
  if (!f) return makeError(StatusCode::kInternal, "no converter for ", op_type);
  Outs o;
  RETURN_IF_ERROR((*f)(c, m, o));
  return o;
}

namespace {

// The zero point at input k, or a zero of `like`'s integer type (QuantizeLinear's
// default would be uint8 whatever x is).
Value zeroPointOr(Context& c, const Node& n, int k, DType like) {
  if (c.present(n, k)) return c.in(n, k);
  HostTensor z(like, {});
  return c.constant(z);
}

Value dequantize(Context& c, Value x, Value scale, Value zp, int64_t axis = 1) {
  QuantAttrs a;
  a.axis = axis;
  a.to = dtypeOf(c, scale);
  // Quantized constants stay quantized, as a standard DequantizeLinear's do (its converter):
  // quant_dq_op_q_fusion hands them to an int8 kernel, or ConstantFolding widens them.
  const DType xt = dtypeOf(c, x);
  if (c.isConstant(x) && (xt == DType::kInt8 || xt == DType::kUInt8 || xt == DType::kInt32)) {
    return c.builder().op("DequantizeLinear", {x, scale, zp}, a, 1)[0];
  }
  return c.op1("DequantizeLinear", {x, scale, zp}, a);
}

Value quantize(Context& c, Value y, Value scale, Value zp) {
  QuantAttrs a;
  a.to = dtypeOf(c, zp);
  a.precision = dtypeOf(c, scale);
  return c.op1("QuantizeLinear", {y, scale, zp}, a);
}

// X, X_scale, X_zero_point?, Y_scale, Y_zero_point? around one float op.
Status qlinearUnary(Context& c, const Node& n, Outs& o, const std::string& op_type, const std::set<std::string>& drop) {
  const Value x = c.in(n, 0);
  const DType t = dtypeOf(c, x);
  const Value xf = dequantize(c, x, c.in(n, 1), zeroPointOr(c, n, 2, t));
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, op_type, {xf}, 1, drop));
  o = {quantize(c, y[0], c.in(n, 3), zeroPointOr(c, n, 4, t))};
  return Status::Ok();
}

}  // namespace

Value channelsFirst(Context& c, Value x) {
  const int64_t r = static_cast<int64_t>(shapeOf(c, x).size());
  Ints perm = {0, r - 1};
  for (int64_t d = 1; d < r - 1; ++d) perm.push_back(d);
  return c.op1("Transpose", {x}, PermAttrs{perm});
}

Value channelsLast(Context& c, Value x) {
  const int64_t r = static_cast<int64_t>(shapeOf(c, x).size());
  Ints perm = {0};
  for (int64_t d = 2; d < r; ++d) perm.push_back(d);
  perm.push_back(1);
  return c.op1("Transpose", {x}, PermAttrs{perm});
}

namespace {

Status qlinearPool(Context& c, const Node& n, Outs& o, bool global) {
  const Value x = c.in(n, 0);
  const DType t = dtypeOf(c, x);
  const bool channels_last = attrInt(n, "channels_last", 0) != 0;
  Value xf = dequantize(c, x, c.in(n, 1), zeroPointOr(c, n, 2, t));
  if (channels_last) xf = channelsFirst(c, xf);
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, global ? "GlobalAveragePool" : "AveragePool", {xf}, 1, {"channels_last"}));
  Value yf = channels_last ? channelsLast(c, y[0]) : y[0];
  o = {quantize(c, yf, c.in(n, 3), zeroPointOr(c, n, 4, t))};
  return Status::Ok();
}

// `opset` < 13: softmax over the input flattened to 2-D at `axis`; else along `axis`.
Status qlinearSoftmax(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const DType t = dtypeOf(c, x);
  const Value xf = dequantize(c, x, c.in(n, 1), zeroPointOr(c, n, 2, t));
  const Shape s = shapeOf(c, x);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = attrInt(n, "axis", attrInt(n, "opset", 1) < 13 ? 1 : -1);
  if (axis < 0) axis += r;
  Value yf;
  if (attrInt(n, "opset", 1) < 13 && axis != r - 1) {
    Ints flat = {1, 1};
    for (int64_t d = 0; d < r; ++d) {
      if (s[d] < 0) return unsupported(n, "opset < 13 softmax over a flattened dynamic shape");
      flat[d < axis ? 0 : 1] *= s[d];
    }
    const Value x2 = c.op1("Reshape", {xf}, ShapeAttrs{flat});
    yf = c.op1("Reshape", {c.op1("Softmax", {x2}, AxisAttrs{1})}, ShapeAttrs{Ints(s.begin(), s.end())});
  } else {
    yf = c.op1("Softmax", {xf}, AxisAttrs{axis});
  }
  o = {quantize(c, yf, c.in(n, 3), c.in(n, 4))};
  return Status::Ok();
}

// Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
Status qlinearConcat(Context& c, const Node& n, Outs& o) {
  if (n.input_size() < 5 || (n.input_size() - 2) % 3) return unsupported(n, "needs Y_scale, Y_zero_point and triples of X, scale, zero point");
  std::vector<Value> xs;
  for (int k = 2; k < n.input_size(); k += 3) xs.push_back(dequantize(c, c.in(n, k), c.in(n, k + 1), c.in(n, k + 2)));
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, "Concat", xs, 1, {}));
  o = {quantize(c, y[0], c.in(n, 0), c.in(n, 1))};
  return Status::Ok();
}

Status qlinearWhere(Context& c, const Node& n, Outs& o) {
  const Value x = dequantize(c, c.in(n, 1), c.in(n, 2), c.in(n, 3));
  const Value y = dequantize(c, c.in(n, 4), c.in(n, 5), c.in(n, 6));
  o = {quantize(c, c.op1("Where", {c.in(n, 0), x, y}), c.in(n, 7), c.in(n, 8))};
  return Status::Ok();
}

// Y = alpha * A' B' (dequantized) + C * a_scale * b_scale, quantized when y_scale is given.
Status qgemm(Context& c, const Node& n, Outs& o) {
  const bool trans_b = attrInt(n, "transB", 0) != 0;
  const Value a = dequantize(c, c.in(n, 0), c.in(n, 1), c.in(n, 2));
  const Value b_scale = c.in(n, 4);
  const Value b = dequantize(c, c.in(n, 3), b_scale, c.in(n, 5), trans_b ? 0 : 1);
  std::vector<Value> ins = {a, b};
  if (c.present(n, 6)) {  // int32, at scale a_scale * b_scale (per column with b)
    const Value cf = c.op1("Cast", {c.in(n, 6)}, CastAttrs{DType::kFloat32});
    ins.push_back(c.op1("Mul", {cf, c.op1("Mul", {c.in(n, 1), b_scale})}));
  }
  ASSIGN_OR_RETURN(Outs y, convertAs(c, n, "Gemm", ins, 1, {}));
  o = {c.present(n, 7) ? quantize(c, y[0], c.in(n, 7), zeroPointOr(c, n, 8, dtypeOf(c, c.in(n, 0)))) : y[0]};
  return Status::Ok();
}

Status matMulIntegerToFloat(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins;
  for (int k = 0; k < std::min(n.input_size(), 7); ++k) ins.push_back(c.in(n, k));
  while (ins.size() > 4 && ins.back().id < 0) ins.pop_back();
  o = {c.op1("MatMulIntegerToFloat", ins)};
  return Status::Ok();
}

// Written as quantize_dynamic writes it unoptimised, so matmul_integer_to_float_fusion makes
// it (with the bias and a GeLU/ReLU after it) one int8 matmul: the integer product of the
// run-time quantized A and B, times a_scale * b_scale, + bias, as onnxruntime computes it.
Status dynamicQuantizeMatMul(Context& c, const Node& n, Outs& o) {
  const auto q = c.op("DynamicQuantizeLinear", {c.in(n, 0)}, {}, 3);
  std::vector<Value> ins = {q[0], c.in(n, 1), q[2]};
  if (c.present(n, 3)) ins.push_back(c.in(n, 3));
  const Value acc = c.op1("Cast", {c.op1("MatMulInteger", ins)}, CastAttrs{DType::kFloat32});
  const Value y = c.op1("Mul", {acc, c.op1("Mul", {q[1], c.in(n, 2)})});
  o = {c.present(n, 4) ? c.op1("Add", {y, c.in(n, 4)}) : y};
  return Status::Ok();
}

// int8 w [dirs, rows, 4H] with scale/zero point [dirs] or [dirs, 4H] -> float [dirs, 4H, rows].
// data: uint8 holding two 4-bit values a byte (low nibble first) along the last axis, or
// int4/uint4/int8/uint8 elements; scales: data's shape with quantize_axis in blocks;
// zero points as the data (4-bit packed in uint8 along the last axis; default 8 for
// 4-bit in uint8, 0 for int4, 128 for 8-bit uint8).
StatusOr<HostTensor> dequantizeBlocks(Context& c, const Node& n) {
  ASSIGN_OR_RETURN(HostTensor data, c.constant(c.in(n, 0), "GatherBlockQuantized data"));
  ASSIGN_OR_RETURN(HostTensor scales, c.constant(c.in(n, 2), "GatherBlockQuantized scales"));
  const int64_t bits = attrInt(n, "bits", 4), block = attrInt(n, "block_size", 128);
  if (bits != 4 && bits != 8) return unsupported(n, "bits must be 4 or 8");
  if (block < 16 || (block & (block - 1))) return unsupported(n, "block_size must be a power of 2, at least 16");
  Shape shape = data.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t qaxis = attrInt(n, "quantize_axis", 1);
  if (qaxis < 0) qaxis += rank;
  if (qaxis < 0 || qaxis >= rank) return unsupported(n, "quantize_axis out of range");
  const bool packed = data.dtype() == DType::kUInt8 && bits == 4;
  if (packed) {
    if (qaxis != rank - 1) return unsupported(n, "4-bit data packed in uint8 needs quantize_axis = the last axis");
    shape.back() *= 2;
  }
  auto element = [&](const HostTensor& t, int64_t i, bool is_packed) -> int {
    if (is_packed) {
      const uint8_t byte = t.as<uint8_t>()[i / 2];
      return (i % 2) ? byte >> 4 : byte & 15;
    }
    return static_cast<int>(ops::loadF(t.data(), t.dtype(), i));
  };
  std::optional<HostTensor> zps;
  if (c.present(n, 3)) {
    ASSIGN_OR_RETURN(HostTensor z, c.constant(c.in(n, 3), "GatherBlockQuantized zero_points"));
    zps = z;
  }
  const int default_zp = packed ? 8 : data.dtype() == DType::kUInt8 ? 128 : data.dtype() == DType::kUInt4 ? 8 : 0;
  int64_t inner = 1;
  for (int64_t d = qaxis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t along = shape[qaxis], blocks = (along + block - 1) / block;
  if (scales.size() != numElements(shape) / along * blocks) {
    return unsupported(n, "scales must hold one value per block of block_size along quantize_axis");
  }
  HostTensor out(dtypeOf(c, c.in(n, 2)), shape);
  const int64_t count = numElements(shape);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t in_axis = (i / inner) % along, outer = i / (inner * along), rest = i % inner;
    const int64_t s = (outer * blocks + in_axis / block) * inner + rest;
    const int zp = zps ? element(*zps, s, packed) : default_zp;
    ops::storeF(out.data(), out.dtype(), i, static_cast<float>(element(data, i, packed) - zp) * ops::loadF(scales.data(), scales.dtype(), s));
  }
  return out;
}

Status gatherBlockQuantized(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(HostTensor table, dequantizeBlocks(c, n));
  Node gather;  // Gather(table, indices, axis = gather_axis)
  gather.set_name(n.name());
  auto* axis = gather.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(attrInt(n, "gather_axis", 0));
  ASSIGN_OR_RETURN(o, convertAs(c, gather, "Gather", {c.constant(table), c.in(n, 1)}, 1, {}));
  return Status::Ok();
}

}  // namespace

void registerContribQuantConverters(std::map<std::string, Converter>& t) {
  const std::string ms = "com.microsoft.";
  t[ms + "QLinearSigmoid"] = [](Context& c, const Node& n, Outs& o) { return qlinearUnary(c, n, o, "Sigmoid", {}); };
  t[ms + "QLinearLeakyRelu"] = [](Context& c, const Node& n, Outs& o) { return qlinearUnary(c, n, o, "LeakyRelu", {}); };
  t[ms + "QLinearSoftmax"] = qlinearSoftmax;
  t[ms + "QLinearConcat"] = qlinearConcat;
  t[ms + "QLinearGlobalAveragePool"] = [](Context& c, const Node& n, Outs& o) { return qlinearPool(c, n, o, true); };
  t[ms + "QLinearAveragePool"] = [](Context& c, const Node& n, Outs& o) { return qlinearPool(c, n, o, false); };
  t[ms + "QLinearWhere"] = qlinearWhere;
  t[ms + "QGemm"] = qgemm;
  t[ms + "MatMulIntegerToFloat"] = matMulIntegerToFloat;
  t[ms + "DynamicQuantizeMatMul"] = dynamicQuantizeMatMul;
  t[ms + "DynamicQuantizeLSTM"] = convertDynamicQuantizeLstm;
  t[ms + "GatherBlockQuantized"] = gatherBlockQuantized;
}

}  // namespace gkrt::onnx_import
