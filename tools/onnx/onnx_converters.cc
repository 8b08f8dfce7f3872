// The ONNX converter table: each family file registers its converters here.
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

const std::map<std::string, Converter>& table() {
  static const std::map<std::string, Converter> t = [] {
    std::map<std::string, Converter> m;
    registerElementwiseConverters(m);
    registerNNConverters(m);
    registerTensorConverters(m);
    registerRecurrentConverters(m);
    registerControlConverters(m);
    registerIndexingConverters(m);
    registerActivationConverters(m);
    registerNormConverters(m);
    registerEinsumConverters(m);
    registerConvTransposeConverters(m);
    registerQuantConverters(m);
    registerAttentionConverters(m);
    registerContribConverters(m);
    return m;
  }();
  return t;
}

}  // namespace
const Converter* findConverter(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : table()) names.push_back(name);
  return names;
}

}  // namespace gkrt::onnx_import
