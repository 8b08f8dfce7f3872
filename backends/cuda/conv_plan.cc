// convPlanFor (backends/cuda/cudnn_conv.h): decided from the graph alone, so it is built
// with or without cuDNN's headers.
#include <cstring>

#include "backends/conv_epilogue.h"
#include "backends/cuda/cudnn_conv.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cuda {
namespace {

Status unsupported(const std::string& why) { return makeError(StatusCode::kUnsupported, why); }
bool fitsInt(int64_t v) { return v >= 0 && v <= (int64_t{1} << 30); }

}  // namespace

StatusOr<ConvPlan> convPlanFor(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || node.subgraph || std::strcmp(node.op->name, "Conv2D") != 0) return unsupported("not a convolution");
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return unsupported("cuDNN runs float32 convolutions only here");
  if (node.outputs.size() != 1 || node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return unsupported("not a convolution");
  const auto& a = node.attrs.get<Conv2DAttrs>();
  const Shape &x = g.tensors[node.inputs[0]].shape, &w = g.tensors[node.inputs[1]].shape, &y = g.tensors[node.outputs[0]].shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return unsupported("cuDNN needs 4-D NCHW tensors");
  if (a.pads.size() != 4 || a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3]) {
    return unsupported("asymmetric padding (cuDNN pads both sides alike)");
  }
  for (int64_t v : x) if (!fitsInt(v)) return unsupported("a dimension beyond cuDNN's int range");
  for (int64_t v : w) if (!fitsInt(v)) return unsupported("a dimension beyond cuDNN's int range");
  if (numElements(x) > (int64_t{1} << 31) || numElements(y) > (int64_t{1} << 31)) return unsupported("a tensor beyond 2^31 elements");
  ConvPlan p;
  p.n = int(x[0]), p.c = int(x[1]), p.h = int(x[2]), p.w = int(x[3]);
  p.k = int(w[0]), p.kh = int(w[2]), p.kw = int(w[3]);
  p.oh = int(y[2]), p.ow = int(y[3]);
  p.pad_h = int(a.pads[0]), p.pad_w = int(a.pads[1]);
  p.stride_h = int(a.strides[0]), p.stride_w = int(a.strides[1]);
  p.dil_h = int(a.dilations[0]), p.dil_w = int(a.dilations[1]);
  p.groups = int(a.groups);
  p.bias = node.inputs.size() > 2 && node.inputs[2] >= 0;
  if (p.n == 0 || p.k == 0 || p.oh == 0 || p.ow == 0) return unsupported("an empty convolution");
  return p;
}

StatusOr<ConvEpiloguePlan> convEpiloguePlanFor(const ir::Node& node) {
  if (!isConvEpilogue(node)) return unsupported("not a convolution");
  ASSIGN_OR_RETURN(ConvEpilogueSplit split, splitConvEpilogue(node));
  const ir::Graph& body = *split.body;
  ConvEpiloguePlan e;
  ASSIGN_OR_RETURN(e.conv, convPlanFor(body, *split.conv));
  for (const ConvEpilogueSplit::Operand& o : split.conv_operands) {
    if (o.constant && o.constant->dtype != DType::kFloat32) return unsupported("cuDNN runs float32 convolutions only here");
  }
  // cuDNN's fused call: ReLU(t) or ReLU(Add(t, r)), t the convolution's output, r an input
  // of the node shaped as the output (a residual), the ReLU's value the body's output.
  auto is = [](const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; };
  const std::vector<ir::Node>& chain = split.rest_body->nodes;
  const int t = split.conv->outputs[0];
  const Shape& y = body.tensors[t].shape;
  int from = t, residual = -1;
  size_t at = 0;
  if (chain.size() == 2 && is(chain[0], "Add") && chain[0].inputs.size() == 2) {
    const int r = chain[0].inputs[0] == t ? chain[0].inputs[1] : chain[0].inputs[1] == t ? chain[0].inputs[0] : -1;
    for (size_t i = 0; r >= 0 && i < body.inputs.size(); ++i) if (body.inputs[i] == r) residual = int(i);
    if (residual < 0 || r == t || body.tensors[r].shape != y || body.tensors[r].dtype != DType::kFloat32) return e;
    from = chain[0].outputs[0];
    at = 1;
  }
  // ReLU, or Maximum with a constant 0 (the gpu column expands ReLU so).
  auto zero = [&](int c) {
    const ir::Tensor& z = body.tensors[c];
    return z.isConstant() && z.dtype == DType::kFloat32 && numElements(z.shape) == 1 && *reinterpret_cast<const float*>(z.constant->data) == 0.0f;
  };
  auto relu = [&](const ir::Node& n) {
    if (is(n, "ReLU")) return n.inputs.size() == 1 && n.inputs[0] == from;
    return is(n, "Maximum") && n.inputs.size() == 2 && ((n.inputs[0] == from && zero(n.inputs[1])) || (n.inputs[1] == from && zero(n.inputs[0])));
  };
  if (chain.size() != at + 1 || !relu(chain[at]) || body.outputs.size() != 1 || body.outputs[0] != chain[at].outputs[0]) return e;
  e.whole = true;
  e.residual_input = residual;
  e.conv.relu = true;
  e.conv.residual = residual >= 0;
  e.conv.bias = true;  // the kernel passes zeros when the convolution has none
  return e;
}

}  // namespace gkrt::cuda
