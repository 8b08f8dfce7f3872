#include "backends/codegen/pattern_kernels.h"

#include <algorithm>
#include <cstring>

#include "backends/codegen/kernel_dialect.h"
#include "backends/codegen/render_helpers.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/attention_layout.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {
namespace {

constexpr const char* kNotPattern = "not a pattern kernel";


// The C type of an element type the pattern kernels read or write.
std::string cType(DType t, const KernelDialect& d) {
  const bool cl = std::strcmp(d.name, "opencl") == 0;
  switch (t) {
    case DType::kInt8: return cl ? "char" : "signed char";
    case DType::kUInt8: return cl ? "uchar" : "unsigned char";
    case DType::kInt32: return "int";
    default: return "float";
  }
}

// The kernel's signature: y0.. for the outputs, x0.. for every input slot (an absent
// one as a float pointer).
std::string signature(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  std::string s = std::string(d.kernel_prefix) + " " + name + "(";
  const std::string gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  auto type = [&](int t) { return t >= 0 ? cType(g.tensors[t].dtype, d) : std::string("float"); };
  for (size_t o = 0; o < node.outputs.size(); ++o) s += (o ? ", " : "") + gp + type(node.outputs[o]) + "* y" + num(int64_t(o));
  for (size_t i = 0; i < node.inputs.size(); ++i) s += ", " + gp + "const " + type(node.inputs[i]) + "* x" + num(int64_t(i));
  return s + ") {\n";
}

Status needFloat32(const ir::Graph& g, const ir::Node& node) {
  for (int t : node.inputs) {
    if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) {
      return unsupported(std::string(node.op->name) + " of " + dtypeName(g.tensors[t].dtype) + " (float32 only)");
    }
  }
  for (int t : node.outputs) {  // present: renderPatternKernel checked
    if (g.tensors[t].dtype != DType::kFloat32) {
      return unsupported(std::string(node.op->name) + " of " + dtypeName(g.tensors[t].dtype) + " (float32 only)");
    }
  }
  return Status::Ok();
}

// A tree sum of `v` over the work-group into red[0], read back as `out`.
std::string groupSum(const KernelDialect& d, int local, const std::string& v, const std::string& out) {
  const std::string bar = std::string(d.barrier) + ";\n";
  return "    red[lid] = " + v + ";\n    " + bar + "    for (int h = " + num(local / 2) +
         "; h > 0; h >>= 1) {\n      if (lid < h) red[lid] += red[lid + h];\n      " + bar + "    }\n" +
         "    const float " + out + " = red[0];\n    " + bar;
}

// A kernel over rows of r.cols elements, one work-group a row (grid-stride over rows):
// its launch, and the opening of its body (the reduction array `red`, `lid`, `prologue`,
// then the row loop with the row's offset `base`).
RenderedKernel rowKernel(const std::string& name, const ops::NormRows& r) {
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = r.rows;
  k.reduce_size = r.cols;
  k.local_size = 32;
  while (k.local_size < 256 && k.local_size * 4 < r.cols) k.local_size *= 2;
  return k;
}
std::string rowLoopOpening(const KernelDialect& d, const RenderedKernel& k, const std::string& prologue = "") {
  const std::string L = d.long_type;
  return "  " + std::string(d.local_array) + " float red[" + num(k.local_size) + "];\n" +
         "  const int lid = (int)" + std::string(d.local_id) + ";\n" + prologue +
         "  for (" + L + " row = (" + L + ")" + d.group_id + "; row < " + num(k.items) + "; row += (" + L + ")" + d.num_groups +
         ") {\n    const " + L + " base = row * " + num(k.reduce_size) + ";\n";
}

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
struct FlashPlan {
  int rows = 0;   // query rows per work-group
  int tile = 0;   // keys per local-memory tile (a multiple of kFlashThreadsPerRow)
  int threads() const { return rows * kFlashThreadsPerRow; }
};

// Up to 8 rows a group (64 work-items: more groups for a GPU's many cores at batch 1),
// fewer where the merge buffer (a row of dv per work-item) would not fit local memory;
// key tiles of up to 64 keys.
StatusOr<FlashPlan> flashPlan(int64_t sq, int64_t d, int64_t dv) {
  constexpr int T = kFlashThreadsPerRow;
  FlashPlan p;
  p.rows = 8;
  while (p.rows > 1 && (p.rows >= 2 * sq || p.threads() * (dv + 3) > kPatternLocalFloats)) p.rows /= 2;
  if (p.threads() * (dv + 3) > kPatternLocalFloats) return unsupported("FlashAttention value head dim too large for local memory");
  const int64_t per_key = d + 1 + dv + 1;
  p.tile = static_cast<int>(std::min<int64_t>(64, kPatternLocalFloats / per_key / T * T));
  if (p.tile < T) return unsupported("FlashAttention head dims too large for local memory");
  return p;
}

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
  ASSIGN_OR_RETURN(FlashPlan p, flashPlan(q.s, q.d, v.d));
  constexpr int T = kFlashThreadsPerRow;
  const int64_t q_tiles = (q.s + p.rows - 1) / p.rows;
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = q.b * q.n * q.s == 0 ? 0 : q.b * q.n * q_tiles;
  k.reduce_size = kk.s;
  k.local_size = p.threads();
  const std::string L = d.long_type, D = num(q.d), DV = num(v.d), KT = num(p.tile), G = num(p.threads());
  const std::string D1 = num(q.d + 1), DV1 = num(v.d + 1), SK = num(kk.s), TS = num(T);
  const std::string voff = num(int64_t(p.tile) * (q.d + 1));               // V tile after the K tile
  // Local memory: the K and V tiles, reused for the merge (a row of dv per work-item),
  // then each work-item's running max and sum.
  const int64_t merge_at = std::max<int64_t>(int64_t(p.tile) * (q.d + v.d + 2), int64_t(p.threads()) * (v.d + 1));
  const std::string moff = num(merge_at);
  const int64_t local_floats = merge_at + 2 * p.threads();
  const std::string bar = std::string(d.barrier) + ";\n";
  const std::string ex = d.math("exp");
  std::string s = signature(g, node, name, d);
  s += "  " + std::string(d.local_array) + " float sm[" + num(local_floats) + "];\n";
  s += "  const int lid = (int)" + std::string(d.local_id) + ", r = lid / " + TS + ", t = lid % " + TS + ";\n";
  s += "  for (" + L + " grp = (" + L + ")" + d.group_id + "; grp < " + num(k.items) + "; grp += (" + L + ")" + d.num_groups + ") {\n";
  s += "    const " + L + " bh = grp / " + num(q_tiles) + ", b = bh / " + num(q.n) + ", h = bh % " + num(q.n) + ";\n";
  s += "    const " + L + " i = (grp % " + num(q_tiles) + ") * " + num(p.rows) + " + r;\n";
  s += "    const int live = i < " + num(q.s) + ";\n";
  s += "    const " + L + " qo = b * " + num(q.sb) + " + h * " + num(q.sn) + " + i * " + num(q.ss) + ";\n";
  s += "    const " + L + " ko = b * " + num(kk.sb) + " + h * " + num(kk.sn) + ", vo = b * " + num(v.sb) + " + h * " + num(v.sn) + ";\n";
  s += "    float qr[" + D + "], acc[" + DV + "];\n";
  s += "    for (int e = 0; e < " + D + "; ++e) qr[e] = live ? x0[qo + (" + L + ")e * " + num(q.sd) + "] : 0.0f;\n";
  s += "    for (int e = 0; e < " + DV + "; ++e) acc[e] = 0.0f;\n";
  s += "    float m = -GK_INF, l = 0.0f;\n";
  s += "    for (int j0 = 0; j0 < " + SK + "; j0 += " + KT + ") {\n";
  s += "      " + bar;
  s += "      for (int e = lid; e < " + num(int64_t(p.tile) * q.d) + "; e += " + G + ") {\n";
  s += "        const int jj = e / " + D + ", c = e % " + D + ";\n";
  s += "        sm[jj * " + D1 + " + c] = j0 + jj < " + SK + " ? x1[ko + (" + L + ")(j0 + jj) * " + num(kk.ss) + " + (" + L + ")c * " +
       num(kk.sd) + "] : 0.0f;\n      }\n";
  s += "      for (int e = lid; e < " + num(int64_t(p.tile) * v.d) + "; e += " + G + ") {\n";
  s += "        const int jj = e / " + DV + ", c = e % " + DV + ";\n";
  s += "        sm[" + voff + " + jj * " + DV1 + " + c] = j0 + jj < " + SK + " ? x2[vo + (" + L + ")(j0 + jj) * " + num(v.ss) +
       " + (" + L + ")c * " + num(v.sd) + "] : 0.0f;\n      }\n";
  s += "      " + bar;
  s += "      if (live) {\n";
  s += "        for (int jj = t; jj < " + KT + " && j0 + jj < " + SK + "; jj += " + TS + ") {\n";
  s += "          float dot = 0.0f;\n";
  s += "          for (int e = 0; e < " + D + "; ++e) dot += qr[e] * sm[jj * " + D1 + " + e];\n";
  s += "          float sc = dot * " + floatLiteral(a.scale) + ";\n";
  if (mask) {
    s += "          sc += x3[b * " + num(ms[0]) + " + h * " + num(ms[1]) + " + i * " + num(ms[2]) + " + (" + L + ")(j0 + jj) * " +
         num(ms[3]) + "];\n";
  }
  s += "          if (sc == -GK_INF) continue;\n";
  s += "          if (sc > m) {\n";
  s += "            const float cf = " + ex + "(m - sc);\n";
  s += "            l *= cf;\n";
  s += "            for (int e = 0; e < " + DV + "; ++e) acc[e] *= cf;\n";
  s += "            m = sc;\n          }\n";
  s += "          const float pr = " + ex + "(sc - m);\n";
  s += "          l += pr;\n";
  s += "          for (int e = 0; e < " + DV + "; ++e) acc[e] += pr * sm[" + voff + " + jj * " + DV1 + " + e];\n";
  s += "        }\n      }\n    }\n";
  // Merge the row's shares with weights exp(m_u - M): a share that saw no finite score
  // (m_u = -inf) weighs 0, though 0 * a NaN sum (its NaN score) stays NaN; a row with
  // every key masked has M = -inf and so NaN weights, as the unfused softmax has.
  s += "    " + bar;
  s += "    for (int e = 0; e < " + DV + "; ++e) sm[lid * " + DV1 + " + e] = acc[e];\n";
  s += "    sm[" + moff + " + lid] = m;\n    sm[" + moff + " + " + G + " + lid] = l;\n";
  s += "    " + bar;
  s += "    if (live) {\n";
  s += "      float mx = -GK_INF, sum = 0.0f, w[" + TS + "];\n";
  s += "      for (int u = 0; u < " + TS + "; ++u) mx = " + d.math("fmax") + "(mx, sm[" + moff + " + r * " + TS + " + u]);\n";
  s += "      for (int u = 0; u < " + TS + "; ++u) {\n";
  s += "        const float lu = sm[" + moff + " + " + G + " + r * " + TS + " + u];\n";
  s += "        w[u] = " + ex + "(sm[" + moff + " + r * " + TS + " + u] - mx);\n";
  s += "        sum += w[u] * lu;\n      }\n";
  s += "      const " + L + " oo = b * " + num(o.sb) + " + h * " + num(o.sn) + " + i * " + num(o.ss) + ";\n";
  s += "      for (int e = t; e < " + DV + "; e += " + TS + ") {\n";
  s += "        float out = 0.0f;\n";
  s += "        for (int u = 0; u < " + TS + "; ++u) out += w[u] * sm[(r * " + TS + " + u) * " + DV1 + " + e];\n";
  s += "        y0[oo + (" + L + ")e * " + num(o.sd) + "] = out / sum;\n      }\n    }\n  }\n}\n";
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
