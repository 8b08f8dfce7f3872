// int8_weight_dynamic_quant (gkrt's own pass, preprocess, off by default: it changes the
// precision the model asks for; `--enable_pass=int8_weight_dynamic_quant`): a matmul whose
// weights are int8 dequantized in the graph (weight-only quantization),
//   MatMul(x [..., K] float32, Mul(Cast<float32>(q [K, N] int8|uint8), s))
//   MatMul(x, DequantizeLinear(q [K, N], s, zp?))      (per tensor, or per column: axis 1)
// becomes
//   BlockQuantMatMul(x, w [N, K/32, 32] int8, scales [N, K/32], offsets?, precision int8)
// whose kernels quantize x per block of 32 values of a row to int8 (scale max|x| / 127)
// and take the products in int8 (avx512_vnni), as OpenVINO's CPU plugin does by default
// for such weights (its dynamic quantization, group size 32). The weights stay in their
// 8 bits (no float copy at compile); on CPUs without avx512_vnni the prompt-sized products
// widen them to float32 as they go. s is a float32 constant of one or N elements along the
// last axis (either Mul operand); uint8 q is stored as q - 128 with the offset
// (128 - zp) * s. Conditions: q a constant [K, N], no transposes, the Cast/Mul/Dequantize
// read only by the next op. Runs before ConstantFolding (which would widen q to float32).
#include <cstring>
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

constexpr int64_t kBlock = 32;  // OpenVINO's default group; the VNNI kernel's block multiple

bool int8Const(const ir::Tensor& t) {
  return t.isConstant() && (t.dtype == DType::kInt8 || t.dtype == DType::kUInt8) && t.shape.size() == 2;
}

// s as N per-column floats when it is a float32 constant of one element or of N along the last axis.
bool columnScales(const ir::Graph& g, int t, int64_t n, std::vector<float>* out) {
  const ir::Tensor& s = g.tensors[size_t(t)];
  if (!s.isConstant() || s.dtype != DType::kFloat32) return false;
  const int64_t e = numElements(s.shape);
  if (e != 1 && (e != n || s.shape.empty() || s.shape.back() != n)) return false;
  const float* v = reinterpret_cast<const float*>(s.constant->data);
  out->resize(size_t(n));
  for (int64_t j = 0; j < n; ++j) (*out)[size_t(j)] = v[e == 1 ? 0 : j];
  return true;
}

// Zero points as N ints (none: zeros) from a DequantizeLinear's third input.
bool columnZeroPoints(const ir::Graph& g, const ir::Node& dq, DType qtype, int64_t n, std::vector<int>* out) {
  out->assign(size_t(n), 0);
  if (dq.inputs.size() < 3 || dq.inputs[2] < 0) return true;
  const ir::Tensor& z = g.tensors[size_t(dq.inputs[2])];
  const int64_t e = numElements(z.shape);
  if (!z.isConstant() || z.dtype != qtype || (e != 1 && e != n)) return false;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = e == 1 ? 0 : j;
    (*out)[size_t(j)] = qtype == DType::kInt8 ? int(reinterpret_cast<const int8_t*>(z.constant->data)[at])
                                              : int(reinterpret_cast<const uint8_t*>(z.constant->data)[at]);
  }
  return true;
}

struct Weights {
  int q = -1;                     // the int8/uint8 constant [K, N]
  std::vector<float> scales;      // N
  std::vector<int> zero_points;   // N
  std::vector<int> erase;         // the dequantizing nodes
};

// The dequantized weights feeding the matmul as input t, or nothing.
bool dequantizedWeights(const PatternGraph& pg, int t, Weights* w) {
  const ir::Graph& g = pg.graph();
  if (!pg.singleUse(t) || g.tensors[size_t(t)].dtype != DType::kFloat32) return false;
  const Shape& ws = g.tensors[size_t(t)].shape;
  if (ws.size() != 2) return false;
  const int64_t n = ws[1];
  if (const ir::Node* dq = pg.producer(t, {"DequantizeLinear"})) {
    const auto& qa = dq->attrs.get<QuantAttrs>();
    const ir::Tensor& q = g.tensors[size_t(dq->inputs[0])];
    const int64_t e = numElements(g.tensors[size_t(dq->inputs[1])].shape);
    if (!int8Const(q) || qa.block_size != 0 || (e != 1 && qa.axis != 1 && qa.axis != -1)) return false;
    if (!columnScales(g, dq->inputs[1], n, &w->scales) || !columnZeroPoints(g, *dq, q.dtype, n, &w->zero_points)) return false;
    w->q = dq->inputs[0];
    w->erase = {pg.producerIndex(t)};
    return true;
  }
  const ir::Node* mul = pg.producer(t, {"Mul"});
  if (!mul || mul->inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const int c = mul->inputs[size_t(side)], s = mul->inputs[size_t(1 - side)];
    const ir::Node* cast = pg.producer(c, {"Cast"});
    if (!cast || !pg.singleUse(c) || g.tensors[size_t(c)].shape != ws) continue;
    const ir::Tensor& q = g.tensors[size_t(cast->inputs[0])];
    if (!int8Const(q) || !columnScales(g, s, n, &w->scales)) continue;
    w->q = cast->inputs[0];
    w->zero_points.assign(size_t(n), 0);
    w->erase = {pg.producerIndex(t), pg.producerIndex(c)};
    return true;
  }
  return false;
}

StatusOr<bool> fuseOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mm = g.nodes[i];
    if (!isPlainMatMul(mm)) continue;
    const ir::Tensor& x = g.tensors[size_t(mm.inputs[0])];
    if (x.dtype != DType::kFloat32 || x.shape.empty()) continue;
    Weights w;
    if (!dequantizedWeights(pg, mm.inputs[1], &w)) continue;
    const ir::Tensor& q = g.tensors[size_t(w.q)];
    const int64_t K = q.shape[0], N = q.shape[1];
    if (x.shape.back() != K || K < kBlock) continue;
    const int64_t blocks = (K + kBlock - 1) / kBlock;
    const bool unsigned_q = q.dtype == DType::kUInt8;
    // w[n, b, i] = q[b * 32 + i, n] as int8 (uint8: q - 128); rows past K zero.
    std::vector<int8_t> packed(size_t(N * blocks * kBlock), 0);
    const auto* src = static_cast<const uint8_t*>(q.constant->data);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) {
        const uint8_t v = src[k * N + n];
        packed[size_t((n * blocks + k / kBlock) * kBlock + k % kBlock)] = int8_t(unsigned_q ? v ^ 0x80 : v);
      }
    }
    std::vector<float> scales(size_t(N * blocks)), offsets;
    bool any_offset = false;
    for (int64_t n = 0; n < N; ++n) {
      const int zero = w.zero_points[size_t(n)] - (unsigned_q ? 128 : 0);
      any_offset = any_offset || zero != 0;
      for (int64_t b = 0; b < blocks; ++b) scales[size_t(n * blocks + b)] = w.scales[size_t(n)];
    }
    if (any_offset) {
      offsets.resize(scales.size());
      for (int64_t n = 0; n < N; ++n) {
        const float off = -float(w.zero_points[size_t(n)] - (unsigned_q ? 128 : 0)) * w.scales[size_t(n)];
        for (int64_t b = 0; b < blocks; ++b) offsets[size_t(n * blocks + b)] = off;
      }
    }
    const std::string base = mm.name + "/int8_weights";
    const int y = mm.outputs[0], xin = mm.inputs[0];
    std::vector<int> ins = {xin, addPatternConstant(g, base, DType::kInt8, {N, blocks, kBlock}, packed.data()),
                            addPatternConstant(g, base + "_scales", DType::kFloat32, {N, blocks}, scales.data())};
    if (any_offset) ins.push_back(addPatternConstant(g, base + "_offsets", DType::kFloat32, {N, blocks}, offsets.data()));
    QuantAttrs attrs;
    attrs.block_size = kBlock;
    attrs.to = DType::kInt8;
    attrs.precision = DType::kInt8;
    const std::string name = g.nodes[i].name;
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
                                           patternNode("BlockQuantMatMul", name, Attrs(attrs), std::move(ins), {y}), w.erase));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseInt8WeightDynamicQuant(FusionContext& ctx) {
  if (!findOp("BlockQuantMatMul")) return PassResult(false);
  return rewriteAll(ctx, fuseOne);
}

}  // namespace gkrt::passes
