// Helpers shared by the ONNX op converters.
#pragma once

#include <map>
#include <set>
#include <string>

#include "runtime/ir/ops/op_helpers.h"
#include "tools/onnx/onnx_context.h"
#include "tools/onnx/onnx_import.h"

namespace gkrt::onnx_import {

using Node = onnx::NodeProto;
using Outs = std::vector<Value>;

inline Status unsupported(const Node& n, const std::string& what) {
  return makeError(StatusCode::kUnsupported, n.op_type(), ": ", what);
}
inline Shape shapeOf(Context& c, Value v) { return c.tensor(v).shape; }
inline DType dtypeOf(Context& c, Value v) { return c.tensor(v).dtype; }
inline Value scalarLike(Context& c, float v, Value like) {
  HostTensor t(dtypeOf(c, like), {});
  ops::storeF(t.data(), t.dtype(), 0, v);
  return c.constant(t);
}
StatusOr<DType> onnxDType(const Node& n, int64_t t);
// Axes from the input `input` (opset >= since_opset) or the `axes` attribute.
StatusOr<Ints> axesOf(Context& c, const Node& n, int input, int64_t since_opset);

void registerElementwiseConverters(std::map<std::string, Converter>& t);
void registerNNConverters(std::map<std::string, Converter>& t);
void registerTensorConverters(std::map<std::string, Converter>& t);
void registerRecurrentConverters(std::map<std::string, Converter>& t);
// com.microsoft DynamicQuantizeLSTM as gkrt's op of that name (onnx_converters_recurrent.cc).
Status convertDynamicQuantizeLstm(Context& c, const Node& n, Outs& o);
void registerControlConverters(std::map<std::string, Converter>& t);
void registerIndexingConverters(std::map<std::string, Converter>& t);
void registerActivationConverters(std::map<std::string, Converter>& t);
void registerNormConverters(std::map<std::string, Converter>& t);
void registerEinsumConverters(std::map<std::string, Converter>& t);
void registerConvTransposeConverters(std::map<std::string, Converter>& t);
void registerQuantConverters(std::map<std::string, Converter>& t);
void registerAttentionConverters(std::map<std::string, Converter>& t);
void registerContribConverters(std::map<std::string, Converter>& t);  // com.microsoft
void registerContribQuantConverters(std::map<std::string, Converter>& t);  // com.microsoft, quantized
void registerContribAttentionConverters(std::map<std::string, Converter>& t);  // com.microsoft attention
// NHWC -> NCHW and back (any rank: channels last <-> channels at axis 1).
Value channelsFirst(Context& c, Value x);
Value channelsLast(Context& c, Value x);
// The standard ONNX converter of `op_type` applied to values `ins`, with `n`'s attributes
// (less `drop_attrs`): a contrib op written as the standard op it wraps.
StatusOr<Outs> convertAs(Context& c, const Node& n, const std::string& op_type, const std::vector<Value>& ins, int outputs,
                         const std::set<std::string>& drop_attrs);

}  // namespace gkrt::onnx_import
