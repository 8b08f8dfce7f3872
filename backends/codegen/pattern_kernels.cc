#include "backends/codegen/pattern_kernels.h"

#include <algorithm>
#include <cstring>

#include "backends/codegen/llm_kernels.h"
#include "backends/codegen/pattern_parts.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/attention_layout.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {
namespace {

constexpr const char* kNotPattern = "not a pattern kernel";

// ---- AddLayerNorm / AddRmsNorm: (x1, x2, gamma?, beta?) -> (norm(x1 + x2), x1 + x2) ----
StatusOr<RenderedKernel> addNorm(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const bool rms = isOp(node, "AddRmsNorm");
  if (node.outputs.size() != 2) return unsupported(std::string(node.op->name) + " needs both outputs");
  const Shape& x = g.tensors[node.inputs[0]].shape;
  if (g.tensors[node.inputs[1]].shape != x) return unsupported(std::string(node.op->name) + " of two shapes");
  ASSIGN_OR_RETURN(ops::NormRows r, ops::normRowsOf(node, x));
  const bool gamma = node.inputs.size() > 2 && node.inputs[2] >= 0, beta = node.inputs.size() > 3 && node.inputs[3] >= 0;
  for (size_t k = 2; k < node.inputs.size(); ++k) {
    if (node.inputs[k] >= 0 && numElements(g.tensors[node.inputs[k]].shape) != r.cols) {
      return unsupported(std::string(node.op->name) + " gamma/beta of another length than its rows");
    }
  }
  RenderedKernel k = rowKernel(name, r);
  const int local = k.local_size;
  const std::string C = num(r.cols), LS = num(local);
  const std::string eps = floatLiteral(node.attrs.get<NormAttrs>().epsilon);
  std::string s = signature(g, node, name, d) + rowLoopOpening(d, k);
  // The sum as the Add stores it; the LayerNorm mean relative to the row's first sum (two
  // passes), RmsNorm's mean square in the pass that stores the sum.
  s += "    float acc = 0.0f;\n";
  if (!rms) s += "    const float shift = x0[base] + x1[base];\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") {\n";
  s += "      const float v = x0[base + c] + x1[base + c];\n      y1[base + c] = v;\n";
  s += std::string(rms ? "      acc += v * v;\n" : "      acc += v - shift;\n") + "    }\n";
  if (rms) {
    s += groupSum(d, local, "acc", "sq");
    s += "    const float mean = 0.0f;\n";
  } else {
    s += groupSum(d, local, "acc", "total");
    s += "    const float mean = shift + total / " + floatLiteral(float(r.cols)) + ";\n";
    s += "    acc = 0.0f;\n";
    s += "    for (int c = lid; c < " + C + "; c += " + LS + ") acc += (y1[base + c] - mean) * (y1[base + c] - mean);\n";
    s += groupSum(d, local, "acc", "sq");
  }
  s += "    const float rstd = 1.0f / " + d.math("sqrt") + "(sq / " + floatLiteral(float(r.cols)) + " + " + eps + ");\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") {\n";
  s += "      float v = (y1[base + c] - mean) * rstd;\n";
  if (gamma) s += "      v *= x2[c];\n";
  if (beta) s += "      v += x3[c];\n";
  s += "      y0[base + c] = v;\n    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- SwiGLU(x): [a, b] = halves of x along axis; silu(a) * b ---------------------------
StatusOr<RenderedKernel> swiglu(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const Shape& x = g.tensors[node.inputs[0]].shape;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.size())));
  if (x[axis] % 2 != 0) return unsupported("SwiGLU of an odd axis");
  int64_t part = x[axis] / 2;
  for (size_t a = axis + 1; a < x.size(); ++a) part *= x[a];
  RenderedKernel k;
  k.name = name;
  k.items = numElements(g.tensors[node.outputs[0]].shape);
  const std::string L = d.long_type, P = num(part);
  std::string s = signature(g, node, name, d);
  s += "  for (" + L + " i = (" + L + ")" + d.global_id + "; i < " + num(k.items) + "; i += (" + L + ")" + d.global_size + ") {\n";
  s += "    const " + L + " o = i / " + P + ", e = i % " + P + ";\n";
  s += "    const float a = x0[o * " + num(2 * part) + " + e], b = x0[o * " + num(2 * part) + " + " + P + " + e];\n";
  s += "    y0[i] = a / (1.0f + " + d.math("exp") + "(-a)) * b;\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- FlashAttention(q, k, v, mask?) = softmax(scale * q k^T + mask) v -----------------
// A work-group takes `rows` query rows of one (batch, head), kFlashLanes work-items a row.
// Keys go in chunks of kFlashLanes, staged in local memory for the group's rows where they
// fit: each work-item scores one key of the chunk (q from local memory), the row's chunk
// maximum and probabilities
// pass through local memory, and each work-item accumulates its own columns of the
// output (every kFlashLanes-th column) over the chunk's values: an online softmax whose
// value reads are coalesced and whose score matrix is never stored. Four barriers a chunk.
StatusOr<RenderedKernel> flashAttention(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                        const KernelDialect& d) {
  const auto& a = node.attrs.get<AttentionAttrs>();
  AttentionDims q, kk, v, o;
  RETURN_IF_ERROR(attentionDims(a, g.tensors[node.inputs[0]].shape, false, &q));
  RETURN_IF_ERROR(attentionDims(a, g.tensors[node.inputs[1]].shape, a.key_transposed, &kk));
  RETURN_IF_ERROR(attentionDims(a, g.tensors[node.inputs[2]].shape, false, &v));
  RETURN_IF_ERROR(attentionDims(a, g.tensors[node.outputs[0]].shape, false, &o));
  if (q.d > kFlashMaxHeadDim || v.d > kFlashMaxHeadDim) {
    return unsupported("FlashAttention head dim over " + num(kFlashMaxHeadDim));
  }
  const bool mask = node.inputs.size() > 3 && node.inputs[3] >= 0;
  std::vector<int64_t> ms(4, 0);
  if (mask) {
    const Shape& m = g.tensors[node.inputs[3]].shape;
    if (m.size() > 4) return unsupported("FlashAttention mask of rank over 4");
    ms = ops::broadcastStrides(m, Shape{q.b, q.n, q.s, kk.s});
  }
  constexpr int W = kFlashLanes;
  const int rows = q.s >= kFlashRowsPerGroup ? kFlashRowsPerGroup : static_cast<int>(std::max<int64_t>(q.s, 1));
  const int64_t q_tiles = (q.s + rows - 1) / rows;
  const int nv = static_cast<int>((v.d + W - 1) / W);  // output columns per work-item
  // Local memory: each row's q, chunk scores and probabilities; where they fit, the
  // chunk's keys (rows padded by one: a work-item a key reads without bank conflicts)
  // and values, loaded once for the group's rows with coalesced reads.
  const int64_t per_rows = int64_t(rows) * (q.d + 2 * W), kv = int64_t(W) * (q.d + 1) + int64_t(W) * v.d;
  const bool staged = per_rows + kv <= kPatternLocalFloats;
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = q.b * q.n * q.s == 0 ? 0 : q.b * q.n * q_tiles;
  k.reduce_size = kk.s;
  k.local_size = rows * W;
  const std::string L = d.long_type, D = num(q.d), SK = num(kk.s), WS = num(W), NV = num(nv), G = num(k.local_size);
  const std::string D1 = num(q.d + 1), DV = num(v.d);
  const std::string soff = num(int64_t(rows) * q.d), poff = num(int64_t(rows) * (q.d + W));
  const std::string koff = num(per_rows), voff = num(per_rows + int64_t(W) * (q.d + 1));
  const std::string bar = std::string(d.barrier) + ";\n";
  std::string s = signature(g, node, name, d);
  s += "  " + std::string(d.local_array) + " float sm[" + num(per_rows + (staged ? kv : 0)) + "];\n";
  s += "  const int lid = (int)" + std::string(d.local_id) + ", r = lid / " + WS + ", t = lid % " + WS + ";\n";
  s += "  const int qa = r * " + D + ", sa = " + soff + " + r * " + WS + ", pa = " + poff + " + r * " + WS + ";\n";
  s += "  for (" + L + " grp = (" + L + ")" + d.group_id + "; grp < " + num(k.items) + "; grp += (" + L + ")" + d.num_groups + ") {\n";
  s += "    const " + L + " bh = grp / " + num(q_tiles) + ", b = bh / " + num(q.n) + ", h = bh % " + num(q.n) + ";\n";
  s += "    const " + L + " i = (grp % " + num(q_tiles) + ") * " + num(rows) + " + r;\n";
  s += "    const int live = i < " + num(q.s) + ";\n";
  s += "    const " + L + " qo = b * " + num(q.sb) + " + h * " + num(q.sn) + " + i * " + num(q.ss) + ";\n";
  s += "    const " + L + " ko = b * " + num(kk.sb) + " + h * " + num(kk.sn) + ", vo = b * " + num(v.sb) + " + h * " + num(v.sn) + ";\n";
  s += "    " + bar;  // the previous group's readers are done with sm
  s += "    for (int e = t; e < " + D + "; e += " + WS + ") sm[qa + e] = live ? x0[qo + (" + L + ")e * " + num(q.sd) + "] : 0.0f;\n";
  s += "    float acc[" + NV + "];\n";
  s += "    for (int c = 0; c < " + NV + "; ++c) acc[c] = 0.0f;\n";
  s += "    float m = -GK_INF, l = 0.0f;\n";
  s += "    " + bar;
  s += "    for (int j0 = 0; j0 < " + SK + "; j0 += " + WS + ") {\n";
  s += "      const int j = j0 + t;\n";
  if (staged) {  // the chunk's keys and values into local memory, consecutive work-items on consecutive elements
    s += "      for (int z = lid; z < " + num(int64_t(W) * q.d) + "; z += " + G + ") {\n";
    s += "        const int u = z / " + D + ", e = z % " + D + ";\n";
    s += "        sm[" + koff + " + u * " + D1 + " + e] = j0 + u < " + SK + " ? x1[ko + (" + L + ")(j0 + u) * " + num(kk.ss) +
         " + (" + L + ")e * " + num(kk.sd) + "] : 0.0f;\n      }\n";
    s += "      for (int z = lid; z < " + num(int64_t(W) * v.d) + "; z += " + G + ") {\n";
    s += "        const int u = z / " + DV + ", e = z % " + DV + ";\n";
    s += "        sm[" + voff + " + z] = j0 + u < " + SK + " ? x2[vo + (" + L + ")(j0 + u) * " + num(v.ss) + " + (" + L + ")e * " +
         num(v.sd) + "] : 0.0f;\n      }\n";
    s += "      " + bar;
  }
  s += "      float sc = -GK_INF;\n";
  s += "      if (live && j < " + SK + ") {\n";
  s += "        float dot = 0.0f;\n";
  if (staged) {
    s += "        for (int e = 0; e < " + D + "; ++e) dot += sm[qa + e] * sm[" + koff + " + t * " + D1 + " + e];\n";
  } else {
    s += "        const " + L + " kr = ko + (" + L + ")j * " + num(kk.ss) + ";\n";
    s += "        for (int e = 0; e < " + D + "; ++e) dot += sm[qa + e] * x1[kr + (" + L + ")e * " + num(kk.sd) + "];\n";
  }
  s += "        sc = dot * " + floatLiteral(a.scale) + ";\n";
  if (mask) {
    s += "        sc += x3[b * " + num(ms[0]) + " + h * " + num(ms[1]) + " + i * " + num(ms[2]) + " + (" + L + ")j * " +
         num(ms[3]) + "];\n";
  }
  s += "      }\n";
  s += onlineSoftmaxChunk(d, W, nv);
  s += accumulateChunk(d, W, nv, v.d, SK, staged ? "" : "const " + L + " vr = vo + (" + L + ")(j0 + u) * " + num(v.ss) + ";",
                       staged ? "sm[" + voff + " + u * " + DV + " + e]" : "x2[vr + (" + L + ")e * " + num(v.sd) + "]");
  s += "    }\n";
  // A row with every key masked has l = 0 and gives 0/0 = NaN, as the unfused softmax.
  s += "    if (live) {\n";
  s += "      const " + L + " oo = b * " + num(o.sb) + " + h * " + num(o.sn) + " + i * " + num(o.ss) + ";\n";
  s += "      for (int c = 0; c < " + NV + "; ++c) {\n";
  s += "        const int e = t + c * " + WS + ";\n";
  s += "        if (e < " + DV + ") y0[oo + (" + L + ")e * " + num(o.sd) + "] = acc[c] / l;\n";
  s += "      }\n    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- RmsNormQuant(x, gamma, scale, zp, beta?) -> q; AddRmsNormQuant(x1, x2, gamma, scale, zp)
// -> (q, x1 + x2): q = saturate(rint(v / scale) + zp), v = RmsNorm(row) * gamma (+ beta),
// in float32 (the reference kernel takes the row statistics in double: a value within
// float32 rounding of a .5 edge may land one step away).
StatusOr<RenderedKernel> normQuant(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  const bool add = isOp(node, "AddRmsNormQuant");
  const int gamma = add ? 2 : 1, scale = add ? 3 : 2, zp = add ? 4 : 3, beta = add ? -1 : 4;
  for (int k : {0, add ? 1 : 0, gamma}) {
    if (g.tensors[node.inputs[k]].dtype != DType::kFloat32) return unsupported(std::string(node.op->name) + " of float32 only");
  }
  const bool has_beta = beta >= 0 && static_cast<int>(node.inputs.size()) > beta && node.inputs[beta] >= 0;
  if (has_beta && g.tensors[node.inputs[beta]].dtype != DType::kFloat32) return unsupported("RmsNormQuant beta of float32 only");
  for (int k : {scale, zp}) {
    if (node.inputs[k] < 0 || numElements(g.tensors[node.inputs[k]].shape) != 1) return unsupported("per-tensor quantisation only");
  }
  if (g.tensors[node.inputs[scale]].dtype != DType::kFloat32) return unsupported("a float32 scale only");
  const DType qt = g.tensors[node.outputs[0]].dtype;
  if (qt != DType::kInt8 && qt != DType::kUInt8) return unsupported("int8 or uint8 output only");
  const Shape& x = g.tensors[node.inputs[0]].shape;
  ASSIGN_OR_RETURN(ops::NormRows r, ops::normRowsOf(node, x));
  RenderedKernel k = rowKernel(name, r);
  const int local = k.local_size;
  const std::string C = num(r.cols), LS = num(local);
  const std::string in = add ? "y1" : "x0";  // the row: the stored sum, or x
  const std::string lo = qt == DType::kInt8 ? "-128.0f" : "0.0f", hi = qt == DType::kInt8 ? "127.0f" : "255.0f";
  std::string s = signature(g, node, name, d) + rowLoopOpening(d, k, "  const float zp = (float)x" + num(zp) + "[0];\n");
  s += "    float acc = 0.0f;\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") {\n";
  if (add) s += "      const float v = x0[base + c] + x1[base + c];\n      y1[base + c] = v;\n";
  else s += "      const float v = x0[base + c];\n";
  s += "      acc += v * v;\n    }\n";
  s += groupSum(d, local, "acc", "sq");
  s += "    const float rstd = 1.0f / " + d.math("sqrt") + "(sq / " + floatLiteral(float(r.cols)) + " + " +
       floatLiteral(node.attrs.get<NormAttrs>().epsilon) + ");\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") {\n";
  s += "      float v = " + in + "[base + c] * rstd * x" + num(gamma) + "[c];\n";
  if (has_beta) s += "      v += x" + num(beta) + "[c];\n";
  // v / scale as the unfused QuantizeLinear divides; NaN quantises to the zero point
  s += "      const float t = v / x" + num(scale) + "[0];\n";
  s += "      float q = (t != t ? 0.0f : " + d.math("rint") + "(t)) + zp;\n";
  s += "      q = q < " + lo + " ? " + lo + " : (q > " + hi + " ? " + hi + " : q);\n";
  s += "      y0[base + c] = (" + cType(qt, d) + ")q;\n    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- Tiled GEMMs: x [.., M, K] @ w [K, N] in 16 x 16 output tiles, K staged in local
// memory, the epilogue applied in the store, each element stored into the output that
// holds its column (MatMulSplit's blocks; one output otherwise).
constexpr int kGemmTileEdge = 16;
struct TiledGemm {
  int x = 0, w = 1;             // input slots of the operands
  bool integer = false;         // int8/uint8 operands less their zero points, int32 sums
  std::string prologue;         // kernel-start lines (zero points, ...)
  std::string x_zero, w_zero;   // integer: subtracted from each x / w element (w's may use n)
  std::string epilogue;         // the stored value, from `acc` and the column `n`
  std::vector<int64_t> sizes;   // column blocks of the outputs
};

StatusOr<RenderedKernel> tiledGemm(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d,
                                   const TiledGemm& spec) {
  const Shape& x = g.tensors[node.inputs[spec.x]].shape;
  const Shape& w = g.tensors[node.inputs[spec.w]].shape;
  if (x.size() < 2 || w.size() != 2) return unsupported(std::string(node.op->name) + " with 2-D weights only");
  const int64_t M = x[x.size() - 2], K = x.back(), N = w[1];
  if (w[0] != K) return unsupported(std::string(node.op->name) + " inner dims differ");
  const int64_t T = kGemmTileEdge, batches = numElements(x) / std::max<int64_t>(M * K, 1);
  const int64_t mt = (M + T - 1) / T, nt = (N + T - 1) / T;
  const std::string L = d.long_type, TS = num(T), T1 = num(T + 1), bar = std::string(d.barrier) + ";\n";
  const std::string E = spec.integer ? "int" : "float", zero = spec.integer ? "0" : "0.0f";
  RenderedKernel k;
  k.name = name;
  k.reduce = true;  // work-groups of T x T, grid-stride over the tiles
  k.items = M * N == 0 ? 0 : batches * mt * nt;
  k.reduce_size = K;
  k.local_size = static_cast<int>(T * T);
  const std::string xs = "x" + num(spec.x), ws = "x" + num(spec.w);
  std::string s = signature(g, node, name, d) + spec.prologue;
  s += "  " + std::string(d.local_array) + " " + E + " As[" + TS + "][" + T1 + "];\n";
  s += "  " + std::string(d.local_array) + " " + E + " Bs[" + TS + "][" + T1 + "];\n";
  s += "  const int lid = (int)" + std::string(d.local_id) + ", tn = lid % " + TS + ", tm = lid / " + TS + ";\n";
  s += "  for (" + L + " tile = (" + L + ")" + d.group_id + "; tile < " + num(k.items) + "; tile += (" + L + ")" + d.num_groups + ") {\n";
  s += "    const " + L + " b = tile / " + num(mt * nt) + ", rest = tile % " + num(mt * nt) + ";\n";
  s += "    const " + L + " m = (rest / " + num(nt) + ") * " + TS + " + tm, n = (rest % " + num(nt) + ") * " + TS + " + tn;\n";
  s += "    const " + L + " xo = b * " + num(M * K) + ";\n";
  s += "    " + E + " acc = " + zero + ";\n";
  s += "    for (int k0 = 0; k0 < " + num(K) + "; k0 += " + TS + ") {\n";
  s += "      " + bar;
  const std::string xv = xs + "[xo + m * " + num(K) + " + k0 + tn]", wv = ws + "[(" + L + ")(k0 + tm) * " + num(N) + " + n]";
  s += "      As[tm][tn] = m < " + num(M) + " && k0 + tn < " + num(K) + " ? " +
       (spec.integer ? "(int)" + xv + " - " + spec.x_zero : xv) + " : " + zero + ";\n";
  s += "      Bs[tm][tn] = k0 + tm < " + num(K) + " && n < " + num(N) + " ? " +
       (spec.integer ? "(int)" + wv + " - " + spec.w_zero : wv) + " : " + zero + ";\n";
  s += "      " + bar;
  s += "      for (int kk = 0; kk < " + TS + "; ++kk) acc += As[tm][kk] * Bs[kk][tn];\n    }\n";
  s += "    if (m < " + num(M) + " && n < " + num(N) + ") {\n";
  s += "      const float v = " + spec.epilogue + ";\n";
  int64_t start = 0;
  for (size_t p = 0; p < spec.sizes.size(); ++p) {
    s += std::string(p ? "      else " : "      ") + (p + 1 < spec.sizes.size() ? "if (n < " + num(start + spec.sizes[p]) + ") " : "") +
         "y" + num(int64_t(p)) + "[(b * " + num(M) + " + m) * " + num(spec.sizes[p]) + " + n - " + num(start) + "] = v;\n";
    start += spec.sizes[p];
  }
  s += "    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// MatMulSplit(x, w [K, N], bias?) -> the product's column blocks of `sizes`.
StatusOr<RenderedKernel> matmulSplit(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  TiledGemm spec;
  spec.sizes = node.attrs.get<SplitAttrs>().sizes;
  if (spec.sizes.size() != node.outputs.size()) return unsupported("MatMulSplit sizes and outputs differ");
  spec.epilogue = node.inputs.size() > 2 && node.inputs[2] >= 0 ? "acc + x2[n]" : "acc";
  return tiledGemm(g, node, name, d, spec);
}

// QuantBatchMatMul(a, as, azp, b [K, N], bs, bzp, bias_int32?) -> float32
// float(acc + B[n]) * float(as * bs[n]): int32 sums of (a - azp)(b - bzp), the scale
// product in float32 (equal to the reference's double product rounded to float).
StatusOr<RenderedKernel> quantBatchMatMul(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                          const KernelDialect& d) {
  auto tensor = [&](size_t k) { return k < node.inputs.size() && node.inputs[k] >= 0 ? &g.tensors[node.inputs[k]] : nullptr; };
  const ir::Tensor *a = tensor(0), *as = tensor(1), *azp = tensor(2), *b = tensor(3), *bs = tensor(4), *bzp = tensor(5),
                   *bias = tensor(6);
  auto int8 = [](const ir::Tensor* t) { return t && (t->dtype == DType::kInt8 || t->dtype == DType::kUInt8); };
  if (!int8(a) || !int8(b) || !as || !bs || as->dtype != DType::kFloat32 || bs->dtype != DType::kFloat32) {
    return unsupported("QuantBatchMatMul of int8/uint8 operands with float32 scales only");
  }
  if (b->shape.size() != 2) return unsupported("QuantBatchMatMul with 2-D weights only");
  const int64_t K = b->shape[0], N = b->shape[1];
  // |sum| <= K * 255 * 255 must fit int32 (the reference sums in int64)
  if (K > (int64_t(1) << 31) / (255 * 255) - 1) return unsupported("QuantBatchMatMul with K over 33,000 (int32 sums)");
  if (numElements(as->shape) != 1 || (azp && numElements(azp->shape) != 1)) return unsupported("a per-tensor activation scale only");
  auto perColumn = [&](const ir::Tensor* t) { return t && numElements(t->shape) == N && N != 1; };
  if (numElements(bs->shape) != 1 && !perColumn(bs)) return unsupported("QuantBatchMatMul weight scales per tensor or per column");
  if (bzp && numElements(bzp->shape) != 1 && !perColumn(bzp)) return unsupported("QuantBatchMatMul weight zero points per tensor or per column");
  if (bias && (bias->dtype != DType::kInt32 || numElements(bias->shape) != N)) return unsupported("QuantBatchMatMul bias: int32 per column");
  TiledGemm spec;
  spec.x = 0, spec.w = 3, spec.integer = true;
  spec.sizes = {N};
  spec.prologue = "  const int azp = " + std::string(azp ? "(int)x2[0]" : "0") + ";\n";
  spec.x_zero = "azp";
  spec.w_zero = !bzp ? "0" : perColumn(bzp) ? "(int)x5[n]" : "(int)x5[0]";
  const std::string scale = "(x1[0] * x4[" + std::string(perColumn(bs) ? "n" : "0") + "])";
  spec.epilogue = "(float)(acc" + std::string(bias ? " + x6[n]" : "") + ") * " + scale;
  return tiledGemm(g, node, name, d, spec);
}

}  // namespace

bool notAPatternKernel(const Status& status) { return status.message() == kNotPattern; }

StatusOr<RenderedKernel> renderPatternKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                             const KernelDialect& d) {
  if (isLlmKernelOp(node)) return renderLlmKernel(g, node, name, d);
  const bool add_norm = isOp(node, "AddLayerNorm") || isOp(node, "AddRmsNorm");
  const bool swi = isOp(node, "SwiGLU"), attention = isOp(node, "FlashAttention");
  const bool norm_quant = isOp(node, "RmsNormQuant") || isOp(node, "AddRmsNormQuant"), split = isOp(node, "MatMulSplit");
  const bool qbmm = isOp(node, "QuantBatchMatMul");
  if (!add_norm && !swi && !attention && !norm_quant && !split && !qbmm) return unsupported(kNotPattern);
  for (int t : {0, 1}) {
    if (static_cast<int>(node.inputs.size()) > t && node.inputs[t] < 0) return unsupported(std::string(node.op->name) + " with an absent input");
  }
  for (int t : node.outputs) if (t < 0) return unsupported(std::string(node.op->name) + " with an absent output");
  if (norm_quant) return normQuant(g, node, name, d);
  if (qbmm) return quantBatchMatMul(g, node, name, d);
  if (attention && (node.inputs.size() < 3 || node.inputs[2] < 0)) return unsupported("FlashAttention without v");
  RETURN_IF_ERROR(needFloat32(g, node));
  if (add_norm) return addNorm(g, node, name, d);
  if (swi) return swiglu(g, node, name, d);
  if (split) return matmulSplit(g, node, name, d);
  return flashAttention(g, node, name, d);
}

}  // namespace gkrt::codegen
