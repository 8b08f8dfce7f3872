// ONNX ConvTranspose -> gkrt ConvTranspose: auto_pad and output_shape become explicit
// pads here (they depend only on static shapes).
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

int64_t floorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

Status convTranspose(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0), w = c.in(n, 1);
  const Shape xs = shapeOf(c, x), ws = shapeOf(c, w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    return unsupported(n, "needs 1 to 3 spatial axes and weights of the input's rank, got " + shapeToString(xs) +
                              " and " + shapeToString(ws));
  }
  const size_t sp = xs.size() - 2;
  ConvTransposeAttrs a;
  a.groups = attrInt(n, "group", 1);
  a.strides = attrInts(n, "strides", Ints(sp, 1));
  a.dilations = attrInts(n, "dilations", Ints(sp, 1));
  a.output_padding = attrInts(n, "output_padding", Ints(sp, 0));
  a.pads = attrInts(n, "pads", Ints(2 * sp, 0));
  const Ints kernel = attrInts(n, "kernel_shape", Ints(ws.begin() + 2, ws.end()));
  if (a.strides.size() != sp || a.dilations.size() != sp || a.output_padding.size() != sp || kernel.size() != sp ||
      a.pads.size() != 2 * sp) {
    return unsupported(n, "strides, dilations, output_padding, kernel_shape need " + std::to_string(sp) +
                              " values and pads " + std::to_string(2 * sp));
  }
  Ints out_shape = attrInts(n, "output_shape");
  const std::string auto_pad = attrString(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return unsupported(n, "auto_pad '" + auto_pad + "' is not supported");
  }
  if (auto_pad == "VALID") a.pads.assign(2 * sp, 0);
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    for (size_t d = 0; d < sp; ++d) out_shape.push_back(xs[2 + d] * a.strides[d]);
  }
  if (!out_shape.empty()) {  // the pads that give this output; ONNX's split of the total
    if (out_shape.size() > sp) out_shape.erase(out_shape.begin(), out_shape.end() - static_cast<long>(sp));
    if (out_shape.size() != sp) return unsupported(n, "output_shape needs " + std::to_string(sp) + " spatial values");
    for (size_t d = 0; d < sp; ++d) {
      const int64_t total = a.strides[d] * (xs[2 + d] - 1) + a.output_padding[d] + (kernel[d] - 1) * a.dilations[d] + 1 -
                            out_shape[d];
      const int64_t half = floorDiv2(total);
      a.pads[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      a.pads[d + sp] = auto_pad == "SAME_UPPER" ? total - half : half;
    }
  }
  std::vector<Value> ins = {x, w};
  if (c.present(n, 2)) ins.push_back(c.in(n, 2));
  o = {c.op1("ConvTranspose", ins, a)};
  return Status::Ok();
}

}  // namespace

void registerConvTransposeConverters(std::map<std::string, Converter>& t) { t["ConvTranspose"] = convTranspose; }

}  // namespace gkrt::onnx_import
