// A chain of multiplications and additions by constants is one affine map: after
//   y = ((x * a + b) * c + d) ...      (a..d constants, per channel or scalar)
// y = x * A + B with A = a*c..., B = (b*c + d)..., computed here at compile time. Models
// converted from Caffe (DenseNet, ResNet) write BatchNormalization followed by a Scale
// layer: two affine steps per activation, which this leaves as one Mul and one Add (or
// one of them) — half the elementwise work of the fused BN+ReLU kernels.
//
// The chain: float32 Mul/Add/Sub nodes, each with one constant operand (Sub: constant
// second), the other operand of the node's own output shape; every intermediate read
// only by the next step and not a graph output; the constants together broadcast to the
// output shape and hold at most kMaxParams elements. Reassociation changes rounding
// (relative error of a few ulp), as constant folding does.
#include <algorithm>
#include <string>

#include "fusion/passes/passes.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::passes {
namespace {

constexpr int64_t kMaxParams = 1 << 16;

struct Step {
  size_t node;
  int x;       // the running value's tensor
  int param;   // the constant
  char kind;   // '*', '+', '-'
};

bool isOp(const ir::Node& n, const char* op) { return std::string(n.op->name) == op; }

bool floatConst(const ir::Graph& g, int t) {
  return t >= 0 && g.tensors[t].isConstant() && g.tensors[t].dtype == DType::kFloat32 && isStatic(g.tensors[t].shape);
}

// Node i as one affine step on a value of shape `shape`, or false.
bool asStep(const ir::Graph& g, size_t i, const Shape& shape, Step* s) {
  const ir::Node& n = g.nodes[i];
  if (n.inputs.size() != 2 || n.outputs.size() != 1 || !n.subgraphs.empty() || n.subgraph) return false;
  const char kind = isOp(n, "Mul") ? '*' : isOp(n, "Add") ? '+' : isOp(n, "Sub") ? '-' : 0;
  if (!kind) return false;
  const ir::Tensor& out = g.tensors[n.outputs[0]];
  if (out.dtype != DType::kFloat32 || out.shape != shape) return false;
  for (int side = 0; side < 2; ++side) {
    if (kind == '-' && side == 0) continue;  // only x - c
    const int x = n.inputs[1 - side], c = n.inputs[side];
    if (x < 0 || !floatConst(g, c) || floatConst(g, x) || g.tensors[x].shape != shape) continue;
    *s = {i, x, c, kind};
    return true;
  }
  return false;
}

// Constant `t` read through broadcast strides as an array of shape `params`.
std::vector<float> expand(const ir::Tensor& t, const Shape& params) {
  const std::vector<int64_t> strides = ops::broadcastStrides(t.shape, params);
  const float* data = reinterpret_cast<const float*>(t.constant->data);
  std::vector<float> v(numElements(params));
  for (int64_t e = 0; e < static_cast<int64_t>(v.size()); ++e) {
    int64_t rem = e, off = 0;
    for (size_t d = params.size(); d-- > 0;) { off += (rem % params[d]) * strides[d]; rem /= params[d]; }
    v[e] = data[off];
  }
  return v;
}

int addConstant(ir::Graph& g, const std::string& name, const Shape& shape, const std::vector<float>& v) {
  ir::Tensor t;
  t.name = name;
  t.dtype = DType::kFloat32;
  t.shape = shape;
  t.constant = ir::ConstData::copyOf(v.data(), v.size() * sizeof(float));
  g.tensors.push_back(std::move(t));
  return static_cast<int>(g.tensors.size()) - 1;
}

}  // namespace

bool foldAffineChain(ir::Graph& g, size_t i) {
  if (g.nodes[i].outputs.size() != 1) return false;
  const Shape shape = g.tensors[g.nodes[i].outputs[0]].shape;
  if (!isStatic(shape)) return false;
  std::vector<Step> chain;  // from the last step up
  Step s;
  for (size_t at = i; asStep(g, at, shape, &s);) {
    chain.push_back(s);
    const int p = producerOf(g, s.x);
    if (p < 0 || readers(g, s.x) != 1) break;
    at = static_cast<size_t>(p);
  }
  std::reverse(chain.begin(), chain.end());
  bool muls = false, adds = false;
  for (const Step& c : chain) (c.kind == '*' ? muls : adds) = true;
  if (chain.size() < 2 || chain.size() <= static_cast<size_t>(muls) + adds) return false;  // nothing to save
  Shape params;
  for (const Step& c : chain) {
    auto b = broadcastShapes(params, g.tensors[c.param].shape);
    if (!b.ok()) return false;
    params = *b;
  }
  if (!broadcastsTo(params, shape) || numElements(params) > kMaxParams) return false;
  std::vector<float> A(numElements(params), 1.0f), B(A.size(), 0.0f);
  for (const Step& c : chain) {
    const std::vector<float> v = expand(g.tensors[c.param], params);
    for (size_t k = 0; k < A.size(); ++k) {
      if (c.kind == '*') { A[k] *= v[k]; B[k] *= v[k]; }
      else B[k] += c.kind == '+' ? v[k] : -v[k];
    }
  }
  // x * A + B: the first step's node computes x * A (its output keeps the shape), the
  // last one adds B; the steps between are left unread.
  const int x = chain.front().x;
  const std::string base = g.tensors[g.nodes[i].outputs[0]].name;
  const OpDef* mul = findOp("Mul");
  const OpDef* add = findOp("Add");
  if (!mul || !add) return false;
  ir::Node& first = g.nodes[chain.front().node];
  ir::Node& last_step = g.nodes[i];
  if (muls && adds) {
    first.op = mul;
    first.attrs = {};
    first.inputs = {x, addConstant(g, base + "/affine_scale", params, A)};
    last_step.op = add;
    last_step.inputs = {first.outputs[0], addConstant(g, base + "/affine_shift", params, B)};
  } else if (muls) {
    last_step.op = mul;
    last_step.inputs = {x, addConstant(g, base + "/affine_scale", params, A)};
  } else {
    last_step.op = add;
    last_step.inputs = {x, addConstant(g, base + "/affine_shift", params, B)};
  }
  last_step.attrs = {};
  return true;
}

// BatchNorm (inference, channels on axis 1) whose scale, bias, mean and variance are
// float32 constants: x * s + t per channel, s = scale / sqrt(var + eps) and t = bias -
// mean * s (ops::batchNormAffine, as the ONNX converter writes such a
// BatchNormalization itself). It meets them here when they became constants only
// by ConstantFolding: onnxruntime's quantize_static on a file whose BNs it did not fold
// quantizes their scales, DQ(Q(scale)). The Mul and the Add then cluster with the ops
// around them, where a BatchNorm ran alone.
bool foldBatchNormAffine(ir::Graph& g, size_t i) {
  const ir::Node& n = g.nodes[i];
  if (!isOp(n, "BatchNorm") || n.inputs.size() != 5 || n.outputs.size() != 1 || n.subgraph) return false;
  const OpDef* mul = findOp("Mul");
  const OpDef* add = findOp("Add");
  const ir::Tensor& x = g.tensors[n.inputs[0]];
  const auto& a = n.attrs.get<NormAttrs>();
  if (!mul || !add || x.dtype != DType::kFloat32 || x.shape.size() < 2 || !isStatic(x.shape) ||
      (a.axis != 1 && a.axis != 1 - static_cast<int64_t>(x.shape.size()))) {
    return false;
  }
  const int64_t C = x.shape[1];
  for (size_t k = 1; k < 5; ++k) {
    if (!floatConst(g, n.inputs[k]) || numElements(g.tensors[n.inputs[k]].shape) != C) return false;
  }
  const auto values = [&](size_t k) {
    const float* p = reinterpret_cast<const float*>(g.tensors[n.inputs[k]].constant->data);
    return std::vector<float>(p, p + C);
  };
  std::vector<float> scale, shift;
  ops::batchNormAffine(values(1), values(2), values(3), values(4), a.epsilon, &scale, &shift);
  Shape params(x.shape.size() - 1, 1);
  params[0] = C;
  const std::string base = g.tensors[n.outputs[0]].name;
  const int xin = n.inputs[0];
  ir::Tensor scaled;
  scaled.name = base + "/bn_scaled";
  scaled.dtype = DType::kFloat32;
  scaled.shape = x.shape;
  g.tensors.push_back(std::move(scaled));
  const int m = static_cast<int>(g.tensors.size()) - 1;
  ir::Node times = g.nodes[i];
  times.name = n.name + "/scale";
  times.op = mul;
  times.attrs = {};
  times.inputs = {xin, addConstant(g, base + "/bn_scale", params, scale)};
  times.outputs = {m};
  ir::Node& plus = g.nodes[i];
  plus.op = add;
  plus.attrs = {};
  plus.inputs = {m, addConstant(g, base + "/bn_shift", params, shift)};
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(times));
  return true;
}

}  // namespace gkrt::passes
