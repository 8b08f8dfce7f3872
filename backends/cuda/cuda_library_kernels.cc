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

// An unsigned C type of the element's size: Gather moves bits, whatever they mean.
const char* bitsType(DType t) {
  switch (t) {
    case DType::kUInt4: case DType::kInt4: case DType::kUInt2: case DType::kInt2: case DType::kFloat4E2M1:
      return nullptr;  // packed below a byte
    default:
      break;
  }
  switch (dtypeSize(t)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    case 8: return "unsigned long long";
    default: return nullptr;
  }
}

const char* indexType(DType t) {
  switch (t) {
    case DType::kInt8: return "signed char";
    case DType::kUInt8: return "unsigned char";
    case DType::kInt16: return "short";
    case DType::kUInt16: return "unsigned short";
    case DType::kInt32: return "int";
    case DType::kUInt32: return "unsigned int";
    case DType::kInt64: return "long long";
    case DType::kUInt64: return "unsigned long long";
    default: return nullptr;
  }
}

StatusOr<codegen::RenderedKernel> gather(const ir::Graph& g, const ir::Node& node, const std::string& name, int fault_id) {
  const ir::Tensor &x = g.tensors[node.inputs[0]], &ind = g.tensors[node.inputs[1]];
  const char* T = bitsType(x.dtype);
  const char* I = indexType(ind.dtype);
  if (!T) return unsupported(std::string("Gather of ") + dtypeName(x.dtype) + " elements");
  if (!I) return unsupported(std::string("Gather indices of ") + dtypeName(ind.dtype));
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size())));
  const ops::AxisSplit s = ops::splitAtAxis(x.shape, axis);
  const int64_t n_ind = numElements(ind.shape);
  codegen::RenderedKernel k;
  k.name = name;
  k.items = s.outer * n_ind * s.inner;
  // i = (o * n_ind + j) * inner + r  ->  x[(o * extent + index[j]) * inner + r]
  k.source = "struct gk_fault_" + name + " { int kernel; int pad; long long value; long long position; };\n"
             "extern \"C\" __global__ void " + name + "(" + T + "* y, const " + T + "* x, const " + I + "* ind, gk_fault_" + name +
             "* fault) {\n"
             "  const long long n = " + num(k.items) + ", inner = " + num(s.inner) + ", n_ind = " + num(n_ind) +
             ", extent = " + num(s.extent) + ";\n"
             "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
             "    const long long r = i % inner, j = (i / inner) % n_ind, o = i / (inner * n_ind);\n"
             "    long long at = (long long)ind[j];\n"
             "    if (at < 0) at += extent;\n"
             "    if (at < 0 || at >= extent) {\n"
             "      if (atomicCAS(&fault->kernel, 0, " + std::to_string(fault_id + 1) + ") == 0) {\n"
             "        fault->value = (long long)ind[j];\n"
             "        fault->position = j;\n"
             "      }\n"
             "      y[i] = 0;\n"
             "      continue;\n"
             "    }\n"
             "    y[i] = x[(o * extent + at) * inner + r];\n"
             "  }\n"
             "}\n";
  return k;
}

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

bool usesFaultRecord(const ir::Node& node) { return isOp(node, "Gather"); }

StatusOr<codegen::RenderedKernel> renderLibraryKernel(const ir::Graph& g, const ir::Node& node, const std::string& name, int fault_id) {
  // AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention: the text the opencl backend runs.
  auto pattern = codegen::renderPatternKernel(g, node, name, codegen::cudaDialect());
  if (!codegen::notAPatternKernel(pattern.status())) return pattern;
  // Split, Resize: the text the opencl backend runs too.
  auto movement = codegen::renderMovementKernel(g, node, name, codegen::cudaDialect());
  if (!codegen::notAMovementKernel(movement.status())) return movement;
  if (node.outputs.size() != 1 || node.outputs[0] < 0) return unsupported("not a library kernel");
  for (int t : node.inputs) if (t < 0) return unsupported("an absent input");
  if (isOp(node, "Gather") && node.inputs.size() == 2) return gather(g, node, name, fault_id);
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
