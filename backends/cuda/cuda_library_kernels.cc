#include "backends/cuda/cuda_library_kernels.h"

#include <algorithm>
#include <cstring>

#include "backends/codegen/movement_kernels.h"
#include "backends/codegen/pattern_kernels.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cuda {
namespace {

Status unsupported(const std::string& why) { return makeError(StatusCode::kUnsupported, why); }
bool isOp(const ir::Node& n, const char* name) { return n.op && !n.subgraph && std::strcmp(n.op->name, name) == 0; }
std::string num(int64_t v) { return std::to_string(v) + "LL"; }

// The reference kernel's windows: [h0, h1) clipped to the padded input, the average's
// divisor the padded window (count_include_pad) or the real elements in it.
StatusOr<codegen::RenderedKernel> pool(const ir::Graph& g, const ir::Node& node, const std::string& name, bool max) {
  const ir::Tensor &x = g.tensors[node.inputs[0]], &y = g.tensors[node.outputs[0]];
  if (x.dtype != DType::kFloat32) return unsupported(std::string(node.op->name) + " of " + dtypeName(x.dtype) + " (float32 only on cuda)");
  const auto& a = node.attrs.get<PoolAttrs>();
  if (x.shape.size() != 4 || a.kernel.size() != 2 || a.strides.size() != 2 || a.pads.size() != 4) {
    return unsupported(std::string(node.op->name) + " needs 2-D windows over NCHW");
  }
  for (int64_t d : a.dilations) if (d != 1) return unsupported("dilated pooling");
  codegen::RenderedKernel k;
  k.name = name;
  k.items = numElements(y.shape);
  const std::string H = num(x.shape[2]), W = num(x.shape[3]), OH = num(y.shape[2]), OW = num(y.shape[3]);
  k.source = "extern \"C\" __global__ void " + name + "(float* y, const float* x) {\n"
             "  const long long n = " + num(k.items) + ";\n"
             "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
             "    const long long ow = i % " + OW + ", oh = (i / " + OW + ") % " + OH + ", p = i / (" + OW + " * " + OH + ");\n"
             "    const long long h0 = oh * " + num(a.strides[0]) + " - " + num(a.pads[0]) + ", w0 = ow * " + num(a.strides[1]) +
             " - " + num(a.pads[1]) + ";\n"
             "    const long long h1 = min(h0 + " + num(a.kernel[0]) + ", " + H + " + " + num(a.pads[2]) + "), w1 = min(w0 + " +
             num(a.kernel[1]) + ", " + W + " + " + num(a.pads[3]) + ");\n"
             "    float acc = " + (max ? "-GK_INF" : "0.0f") + ";\n"
             "    long long count = 0;\n"
             "    const float* plane = x + p * " + H + " * " + W + ";\n"
             "    for (long long h = max(h0, 0LL); h < min(h1, " + H + "); ++h)\n"
             "      for (long long w = max(w0, 0LL); w < min(w1, " + W + "); ++w) {\n"
             "        const float v = plane[h * " + W + " + w];\n" +
             (max ? "        acc = acc < v ? v : acc;\n" : "        acc += v;\n") +
             "        ++count;\n"
             "      }\n" +
             (max ? std::string()
                  : a.count_include_pad ? "    acc /= (float)((h1 - h0) * (w1 - w0));\n"
                                        : "    acc /= (float)(count > 0 ? count : 1);\n") +
             "    y[i] = acc;\n"
             "  }\n"
             "}\n";
  return k;
}

// Mean over every axis after N and C: one warp per (n, c) plane, float32 accumulation.
StatusOr<codegen::RenderedKernel> globalAvgPool(const ir::Graph& g, const ir::Node& node, const std::string& name) {
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  if (x.dtype != DType::kFloat32) return unsupported(std::string("GlobalAvgPool of ") + dtypeName(x.dtype) + " (float32 only on cuda)");
  if (x.shape.size() < 3) return unsupported("GlobalAvgPool needs N, C and spatial axes");
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t size = numElements(x.shape) / std::max<int64_t>(planes, 1);
  codegen::RenderedKernel k;
  k.name = name;
  k.items = planes * 32;  // whole warps: the grid-stride step is a multiple of 32 too
  k.source = "extern \"C\" __global__ void " + name + "(float* y, const float* x) {\n"
             "  const long long n = " + num(k.items) + ", size = " + num(size) + ";\n"
             "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
             "    const long long p = i >> 5;\n"
             "    const int lane = (int)(i & 31);\n"
             "    const float* src = x + p * size;\n"
             "    float acc = 0.0f;\n"
             "    for (long long j = lane; j < size; j += 32) acc += src[j];\n"
             "    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);\n"
             "    if (lane == 0) y[p] = acc / (float)size;\n"
             "  }\n"
             "}\n";
  return k;
}

}  // namespace


StatusOr<codegen::RenderedKernel> renderLibraryKernel(const ir::Graph& g, const ir::Node& node, const std::string& name, int fault_id) {
  // AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention: the text the opencl backend runs.
  auto pattern = codegen::renderPatternKernel(g, node, name, codegen::cudaDialect());
  if (!codegen::notAPatternKernel(pattern.status())) return pattern;
  // Split, Resize: the text the opencl backend runs too.
  auto movement = codegen::renderMovementKernel(g, node, name, codegen::cudaDialect());
  if (!codegen::notAMovementKernel(movement.status())) return movement;
  if (node.outputs.size() != 1 || node.outputs[0] < 0) return unsupported("not a library kernel");
  for (int t : node.inputs) if (t < 0) return unsupported("an absent input");
  if (codegen::usesFaultRecord(node)) return codegen::renderGatherKernel(g, node, name, codegen::cudaDialect(), fault_id);
  if (isOp(node, "MaxPool") && node.inputs.size() == 1 && node.outputs.size() == 1) return pool(g, node, name, true);
  if (isOp(node, "AvgPool") && node.inputs.size() == 1) return pool(g, node, name, false);
  if (isOp(node, "GlobalAvgPool") && node.inputs.size() == 1) return globalAvgPool(g, node, name);
  return unsupported("not a library kernel");
}

StatusOr<codegen::RenderedKernel> renderErfGeluEpilogue(const ir::Graph& g, const ir::Node& node, const std::string& name) {
  if (!isOp(node, "MatMulGelu") || node.outputs.size() != 1 || node.outputs[0] < 0) return unsupported("not a MatMulGelu");
  if (node.attrs.get<GeluAttrs>().approximate != GeluApprox::kNone) return unsupported("the tanh form is cuBLASLt's own epilogue");
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  ir::Graph gelu;
  const int x = gelu.addTensor(ir::Tensor{y.name + "/product", y.dtype, y.shape, {}, nullptr, nullptr});
  const int out = gelu.addTensor(ir::Tensor{y.name, y.dtype, y.shape, {}, nullptr, nullptr});
  ir::Node n;
  n.name = node.name + "/gelu";
  n.op = findOp("GeLU");
  n.attrs = node.attrs;  // GeluAttrs
  n.inputs = {x};
  n.outputs = {out};
  gelu.addNode(std::move(n));
  gelu.inputs = {x};
  gelu.outputs = {out};
  return codegen::renderCluster(gelu, gelu.nodes[0], name, codegen::cudaDialect());
}

}  // namespace gkrt::cuda
