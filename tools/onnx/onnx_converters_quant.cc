// ONNX quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
// (runtime/ir/ops/quantization.cc), with every attribute up to opset 25: axis,
// block_size, saturate, output_dtype, precision; the integer and QLinear ops
// (runtime/ir/ops/quant_linear.cc): MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv and onnxruntime's com.microsoft QLinearAdd / QLinearMul.
#include <algorithm>
#include <map>
#include <string>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

QuantAttrs quantAttrs(const Node& n) {
  QuantAttrs a;
  a.axis = attrInt(n, "axis", 1);
  a.block_size = attrInt(n, "block_size", 0);
  a.saturate = attrInt(n, "saturate", 1) != 0;
  return a;
}

// Output type: the zero point's, else `output_dtype`, else uint8; x / scale is computed
// in `precision`, else in the scale's type.
Status quantizeLinear(Context& c, const Node& n, Outs& o) {
  QuantAttrs a = quantAttrs(n);
  const int64_t output_dtype = attrInt(n, "output_dtype", 0);
  std::vector<Value> ins = {c.in(n, 0), c.in(n, 1)};
  if (output_dtype) {
    ASSIGN_OR_RETURN(a.to, onnxDType(n, output_dtype));
  }
  if (c.present(n, 2)) {
    const DType zp = dtypeOf(c, c.in(n, 2));
    if (output_dtype && zp != a.to) {
      return makeError(StatusCode::kInvalidModel, "QuantizeLinear: output_dtype ", dtypeName(a.to),
                       " differs from the zero point's type ", dtypeName(zp));
    }
    a.to = zp;
    ins.push_back(c.in(n, 2));
  }
  const int64_t precision = attrInt(n, "precision", 0);
  a.precision = dtypeOf(c, c.in(n, 1));
  if (precision) {
    ASSIGN_OR_RETURN(a.precision, onnxDType(n, precision));
  }
  o = {c.op1("QuantizeLinear", ins, a)};
  return Status::Ok();
}

// Output type: `output_dtype`, else the scale's type.
Status dequantizeLinear(Context& c, const Node& n, Outs& o) {
  QuantAttrs a = quantAttrs(n);
  const int64_t output_dtype = attrInt(n, "output_dtype", 0);
  a.to = dtypeOf(c, c.in(n, 1));
  if (output_dtype) {
    ASSIGN_OR_RETURN(a.to, onnxDType(n, output_dtype));
  }
  std::vector<Value> ins = {c.in(n, 0), c.in(n, 1)};
  if (c.present(n, 2)) ins.push_back(c.in(n, 2));
  // Quantized constants (int8/uint8 weights, int32 biases) stay quantized: the graph
  // keeps their DequantizeLinear so quant_dq_op_q_fusion can hand the integers to an
  // int8 kernel (constant folding at session compile dequantizes them when it does not).
  const DType xt = dtypeOf(c, ins[0]);
  const bool keep = c.isConstant(ins[0]) && (xt == DType::kInt8 || xt == DType::kUInt8 || xt == DType::kInt32);
  o = {keep ? c.builder().op("DequantizeLinear", ins, a, 1)[0] : c.op1("DequantizeLinear", ins, a)};
  return Status::Ok();
}

Status dynamicQuantizeLinear(Context& c, const Node& n, Outs& o) {
  o = c.op("DynamicQuantizeLinear", {c.in(n, 0)}, {}, 3);
  return Status::Ok();
}

std::vector<Value> inputsOf(Context& c, const Node& n) {
  std::vector<Value> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(c.in(n, k));
  return ins;
}

// ConvInteger and QLinearConv: 2-D as gkrt's Conv2D attributes; 1-D runs as 2-D with a
// height of 1 (x and w at inputs xk and wk).
Status quantConv(Context& c, const Node& n, Outs& o, const char* op, int xk, int wk) {
  std::vector<Value> ins = inputsOf(c, n);
  if (static_cast<int>(ins.size()) <= std::max(xk, wk) || !c.present(n, xk) || !c.present(n, wk)) {
    return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "' needs its input ", xk, " (x) and ",
                     wk, " (w), got ", ins.size(), " inputs");
  }
  const Shape xs = shapeOf(c, ins[xk]), ws = shapeOf(c, ins[wk]);
  const bool one_d = xs.size() == 3;
  if (xs.size() != 4 && !one_d) return unsupported(n, "only 1-D and 2-D convolution are supported, got " + shapeToString(xs));
  if (ws.size() != xs.size()) {
    return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "': weights ", shapeToString(ws),
                     " need the rank of x ", shapeToString(xs));
  }
  const size_t spatial = one_d ? 1 : 2;
  for (const char* name : {"strides", "dilations", "pads", "kernel_shape"}) {
    const Ints v = attrInts(n, name, {});
    const size_t want = std::string(name) == "pads" ? 2 * spatial : spatial;
    if (!v.empty() && v.size() != want) {
      return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "': ", name, " has ", v.size(),
                       " values, a ", spatial, "-D convolution needs ", want);
    }
    for (int64_t e : v) {
      if (e < (std::string(name) == "pads" ? 0 : 1) || e > (int64_t{1} << 31)) {
        return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "': ", name, " value ", e,
                         " is out of range");
      }
    }
  }
  auto with1 = [](Shape s) { s.insert(s.begin() + 2, 1); return s; };
  if (one_d) {
    ins[xk] = c.op1("Reshape", {ins[xk]}, ShapeAttrs{with1(xs)});
    ins[wk] = c.op1("Reshape", {ins[wk]}, ShapeAttrs{with1(ws)});
  }
  const Shape x4 = shapeOf(c, ins[xk]), w4 = shapeOf(c, ins[wk]);
  auto as2D = [](Ints v) { return v.size() == 1 ? Ints{1, v[0]} : v; };
  Conv2DAttrs a;
  a.strides = as2D(attrInts(n, "strides", {1, 1}));
  a.dilations = as2D(attrInts(n, "dilations", {1, 1}));
  a.groups = attrInt(n, "group", 1);
  const std::string auto_pad = attrString(n, "auto_pad", "NOTSET");
  Ints pads = attrInts(n, "pads", Ints(one_d ? 2 : 4, 0));
  if (one_d) pads = {0, pads[0], 0, pads[1]};
  if (auto_pad == "VALID") pads = {0, 0, 0, 0};
  else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const int64_t in = x4[2 + d], out = (in + a.strides[d] - 1) / a.strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * a.strides[d] + (w4[2 + d] - 1) * a.dilations[d] + 1 - in);
      pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[d + 2] = total - pads[d];
    }
  } else if (auto_pad != "NOTSET") {
    return unsupported(n, "auto_pad " + auto_pad);
  }
  a.pads = pads;
  Value y = c.op1(op, ins, a);
  if (one_d) {
    Shape ys = shapeOf(c, y);
    ys.erase(ys.begin() + 2);
    y = c.op1("Reshape", {y}, ShapeAttrs{ys});
  }
  o = {y};
  return Status::Ok();
}

// 1-D operands of the matmuls (numpy rules) as 2-D, the added dim dropped after.
Status quantMatMul(Context& c, const Node& n, Outs& o, const char* op, int ak, int bk) {
  std::vector<Value> ins = inputsOf(c, n);
  if (static_cast<int>(ins.size()) <= std::max(ak, bk) || !c.present(n, ak) || !c.present(n, bk)) {
    return makeError(StatusCode::kInvalidModel, n.op_type(), " '", n.name(), "' needs its inputs ", ak, " (a) and ", bk,
                     " (b), got ", ins.size(), " inputs");
  }
  const Shape sa = shapeOf(c, ins[ak]), sb = shapeOf(c, ins[bk]);
  if (sa.empty() || sb.empty()) return unsupported(n, "scalar operands");
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) ins[ak] = c.op1("Reshape", {ins[ak]}, ShapeAttrs{{1, sa[0]}});
  if (vb) ins[bk] = c.op1("Reshape", {ins[bk]}, ShapeAttrs{{sb[0], 1}});
  Value y = c.op1(op, ins);
  if (va || vb) {
    Shape s = shapeOf(c, y);
    if (s.size() < 2) {  // the builder refused the product; its error is reported after the node
      o = {y};
      return Status::Ok();
    }
    if (vb) s.erase(s.end() - 1);
    if (va) s.erase(s.end() - (vb ? 1 : 2));
    y = c.op1("Reshape", {y}, ShapeAttrs{s});
  }
  o = {y};
  return Status::Ok();
}

Status qlinearBinary(Context& c, const Node& n, Outs& o, const char* op) {
  o = {c.op1(op, inputsOf(c, n))};
  return Status::Ok();
}

}  // namespace

void registerQuantConverters(std::map<std::string, Converter>& t) {
  t["QuantizeLinear"] = quantizeLinear;
  t["DequantizeLinear"] = dequantizeLinear;
  t["DynamicQuantizeLinear"] = dynamicQuantizeLinear;
  t["MatMulInteger"] = [](Context& c, const Node& n, Outs& o) { return quantMatMul(c, n, o, "MatMulInteger", 0, 1); };
  t["QLinearMatMul"] = [](Context& c, const Node& n, Outs& o) { return quantMatMul(c, n, o, "QLinearMatMul", 0, 3); };
  t["ConvInteger"] = [](Context& c, const Node& n, Outs& o) { return quantConv(c, n, o, "ConvInteger", 0, 1); };
  t["QLinearConv"] = [](Context& c, const Node& n, Outs& o) { return quantConv(c, n, o, "QLinearConv", 0, 3); };
  t["QLinearAdd"] = [](Context& c, const Node& n, Outs& o) { return qlinearBinary(c, n, o, "QLinearAdd"); };
  t["QLinearMul"] = [](Context& c, const Node& n, Outs& o) { return qlinearBinary(c, n, o, "QLinearMul"); };
}

}  // namespace gkrt::onnx_import
