// ONNX quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
// (runtime/ir/ops/quantization.cc), with every attribute up to opset 25: axis,
// block_size, saturate, output_dtype, precision.
#include <map>

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
  o = {c.op1("DequantizeLinear", ins, a)};
  return Status::Ok();
}

Status dynamicQuantizeLinear(Context& c, const Node& n, Outs& o) {
  o = c.op("DynamicQuantizeLinear", {c.in(n, 0)}, {}, 3);
  return Status::Ok();
}

}  // namespace

void registerQuantConverters(std::map<std::string, Converter>& t) {
  t["QuantizeLinear"] = quantizeLinear;
  t["DequantizeLinear"] = dequantizeLinear;
  t["DynamicQuantizeLinear"] = dynamicQuantizeLinear;
}

}  // namespace gkrt::onnx_import
