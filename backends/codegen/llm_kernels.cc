#include "backends/codegen/llm_kernels.h"

#include <algorithm>
#include <cmath>

#include "backends/codegen/pattern_kernels.h"
#include "backends/codegen/pattern_parts.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/block_quant_matmul.h"
#include "runtime/ir/ops/cached_attention.h"
#include "runtime/ir/ops/rotary.h"

namespace gkrt::codegen {
namespace {

const Shape& shapeOf(const ir::Graph& g, const ir::Node& node, size_t slot) { return g.tensors[node.inputs[slot]].shape; }
bool present(const ir::Node& node, size_t slot) { return node.inputs.size() > slot && node.inputs[slot] >= 0; }

// ---- RmsNorm(x, gamma?) = x / sqrt(mean(x^2) + eps) * gamma over the rows ------------
StatusOr<RenderedKernel> rmsNorm(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  RETURN_IF_ERROR(needFloat32(g, node));
  ASSIGN_OR_RETURN(ops::NormRows r, ops::normRowsOf(node, shapeOf(g, node, 0)));
  const bool rstd_out = node.outputs.size() > 1;  // the rows' 1 / rms, one value a row
  if (rstd_out && numElements(g.tensors[node.outputs[1]].shape) != r.rows) return unsupported("RmsNorm rstd output of another size");
  const bool gamma = present(node, 1);
  if (gamma && numElements(shapeOf(g, node, 1)) != r.cols) return unsupported("RmsNorm gamma of another length than its rows");
  RenderedKernel k = rowKernel(name, r);
  const std::string C = num(r.cols), LS = num(k.local_size);
  std::string s = signature(g, node, name, d) + rowLoopOpening(d, k);
  s += "    float acc = 0.0f;\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") { const float v = x0[base + c]; acc += v * v; }\n";
  s += groupSum(d, k.local_size, "acc", "sq");
  s += "    const float rstd = 1.0f / " + d.math("sqrt") + "(sq / " + floatLiteral(float(r.cols)) + " + " +
       floatLiteral(node.attrs.get<NormAttrs>().epsilon) + ");\n";
  if (rstd_out) s += "    if (lid == 0) y1[row] = rstd;\n";
  s += "    for (int c = lid; c < " + C + "; c += " + LS + ") y0[base + c] = x0[base + c] * rstd" + (gamma ? " * x1[c]" : "") +
       ";\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- Rotary(x, cos, sin) = x * cos + rotate_half(x) * sin -------------------------------
StatusOr<RenderedKernel> rotary(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  RETURN_IF_ERROR(needFloat32(g, node));
  const Shape& x = shapeOf(g, node, 0);
  ASSIGN_OR_RETURN(ops::RotaryRows r, ops::rotaryRows(x, shapeOf(g, node, 1), shapeOf(g, node, 2)));
  const int64_t h = r.dim / 2;
  const Shape lead_x(x.begin(), x.end() - 1), lead_c(shapeOf(g, node, 1).begin(), shapeOf(g, node, 1).end() - 1);
  const std::vector<int64_t> strides = ops::broadcastStrides(lead_c, lead_x);
  const std::string L = d.long_type;
  // the row's cos/sin offset: sum over x's leading dims of (index along it) * stride
  std::string off = "0";
  int64_t inner = 1;
  for (size_t a = lead_x.size(); a-- > 0;) {
    if (strides[a] != 0 && lead_x[a] > 1) {
      off += " + ((row / " + num(inner) + ") % " + num(lead_x[a]) + ") * " + num(strides[a] * r.angles);
    }
    inner *= lead_x[a];
  }
  RenderedKernel k;
  k.name = name;
  k.items = r.rows * h;  // one work-item a pair (j, j + D/2)
  std::string s = signature(g, node, name, d);
  s += "  for (" + L + " i = (" + L + ")" + d.global_id + "; i < " + num(k.items) + "; i += (" + L + ")" + d.global_size + ") {\n";
  s += "    const " + L + " row = i / " + num(h) + ", j = i % " + num(h) + ";\n";
  s += "    const " + L + " xo = row * " + num(r.dim) + ", a = " + off + ";\n";
  s += "    const float u = x0[xo + j], w = x0[xo + j + " + num(h) + "];\n";
  if (r.angles == h) {
    s += "    const float c = x1[a + j], sn = x2[a + j];\n";
    s += "    y0[xo + j] = u * c - w * sn;\n    y0[xo + j + " + num(h) + "] = w * c + u * sn;\n";
  } else {
    s += "    y0[xo + j] = u * x1[a + j] - w * x2[a + j];\n";
    s += "    y0[xo + j + " + num(h) + "] = w * x1[a + j + " + num(h) + "] + u * x2[a + j + " + num(h) + "];\n";
  }
  s += "  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- CachedAttention(q, k, v, cache_k, cache_v, past) -> y --------------------------------
StatusOr<RenderedKernel> cachedAttention(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                         const KernelDialect& d) {
  for (size_t t = 0; t < 5; ++t) {
    if (!present(node, t) || g.tensors[node.inputs[t]].dtype != DType::kFloat32) return unsupported("CachedAttention of float32 only");
  }
  if (!present(node, 5)) return unsupported("CachedAttention without past");
  const DType pt = g.tensors[node.inputs[5]].dtype;
  if (pt != DType::kInt64 && pt != DType::kInt32) return unsupported("CachedAttention past of int32 or int64 only");
  if (g.tensors[node.outputs[0]].dtype != DType::kFloat32) return unsupported("CachedAttention of float32 only");
  std::vector<const Shape*> shapes;
  for (size_t t = 0; t < 6; ++t) shapes.push_back(&shapeOf(g, node, t));
  ASSIGN_OR_RETURN(ops::CachedAttentionDims a, ops::cachedAttentionDims(shapes, node.attrs.get<AttentionAttrs>().scale));
  if (a.d > kFlashMaxHeadDim || a.dv > kFlashMaxHeadDim) return unsupported("CachedAttention head dim over " + num(kFlashMaxHeadDim));
  constexpr int W = kFlashLanes;
  const int rows = a.s >= kFlashRowsPerGroup ? kFlashRowsPerGroup : static_cast<int>(std::max<int64_t>(a.s, 1));
  const int64_t q_tiles = (a.s + rows - 1) / rows;
  const int nv = static_cast<int>((a.dv + W - 1) / W);
  const int64_t per_rows = int64_t(rows) * (a.d + 2 * W), kv = int64_t(W) * (a.d + 1) + int64_t(W) * a.dv;
  const bool staged = per_rows + kv <= kPatternLocalFloats;
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = a.b * a.hq * q_tiles;
  k.reduce_size = a.capacity;
  k.local_size = rows * W;
  const std::string L = d.long_type, D = num(a.d), DV = num(a.dv), WS = num(W), NV = num(nv), G = num(k.local_size);
  const std::string S = num(a.s), C = num(a.capacity), D1 = num(a.d + 1);
  const std::string soff = num(int64_t(rows) * a.d), poff = num(int64_t(rows) * (a.d + W));
  const std::string koff = num(per_rows), voff = num(per_rows + int64_t(W) * (a.d + 1));
  const std::string bar = std::string(d.barrier) + ";\n", gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  // Row j of the keys (values) this run sees: the cache below `past`, the step's rows after.
  auto keyRow = [&](const std::string& j) {
    return "(" + j + " < past ? x3 + ck + (" + L + ")(" + j + ") * " + D + " : x1 + nk + (" + L + ")((" + j + ") - past) * " + D + ")";
  };
  auto valueRow = [&](const std::string& j) {
    return "(" + j + " < past ? x4 + cv + (" + L + ")(" + j + ") * " + DV + " : x2 + nv + (" + L + ")((" + j + ") - past) * " + DV + ")";
  };
  std::string s = signature(g, node, name, d, (1u << 3) | (1u << 4));  // the caches, written in place
  s += "  " + std::string(d.local_array) + " float sm[" + num(per_rows + (staged ? kv : 0)) + "];\n";
  s += "  const int lid = (int)" + std::string(d.local_id) + ", r = lid / " + WS + ", t = lid % " + WS + ";\n";
  s += "  const int qa = r * " + D + ", sa = " + soff + " + r * " + WS + ", pa = " + poff + " + r * " + WS + ";\n";
  s += "  const " + L + " past = (" + L + ")x5[0];\n";
  s += "  const int ok = past >= 0 && past + " + S + " <= " + C + ";\n";
  s += "  const " + L + " keys = ok ? past + " + S + " : 0;\n";  // positions this run attends over
  s += "  for (" + L + " grp = (" + L + ")" + d.group_id + "; grp < " + num(k.items) + "; grp += (" + L + ")" + d.num_groups + ") {\n";
  s += "    const " + L + " bh = grp / " + num(q_tiles) + ", b = bh / " + num(a.hq) + ", h = bh % " + num(a.hq) + ";\n";
  s += "    const " + L + " kh = b * " + num(a.hkv) + " + h / " + num(a.group()) + ";\n";
  s += "    const " + L + " i = (grp % " + num(q_tiles) + ") * " + num(rows) + " + r;\n";
  s += "    const int live = i < " + S + ";\n";
  s += "    const " + L + " qo = ((b * " + num(a.hq) + " + h) * " + S + " + i) * " + D + ";\n";
  s += "    const " + L + " ck = kh * " + C + " * " + D + ", cv = kh * " + C + " * " + DV + ";\n";
  s += "    const " + L + " nk = kh * " + S + " * " + D + ", nv = kh * " + S + " * " + DV + ";\n";
  s += "    if (ok && live && h % " + num(a.group()) + " == 0) {\n";  // the step's rows into the caches, once a KV head
  s += "      for (int e = t; e < " + D + "; e += " + WS + ") x3[ck + (past + i) * " + D + " + e] = x1[nk + i * " + D + " + e];\n";
  s += "      for (int e = t; e < " + DV + "; e += " + WS + ") x4[cv + (past + i) * " + DV + " + e] = x2[nv + i * " + DV + " + e];\n";
  s += "    }\n";
  s += "    const " + L + " limit = past + i + 1;\n";  // causal: keys 0 .. past + i
  s += "    " + bar;
  s += "    for (int e = t; e < " + D + "; e += " + WS + ") sm[qa + e] = live ? x0[qo + e] : 0.0f;\n";
  s += "    float acc[" + NV + "];\n";
  s += "    for (int c = 0; c < " + NV + "; ++c) acc[c] = 0.0f;\n";
  s += "    float m = -GK_INF, l = 0.0f;\n";
  s += "    " + bar;
  s += "    for (" + L + " j0 = 0; j0 < keys; j0 += " + WS + ") {\n";
  s += "      const " + L + " j = j0 + t;\n";
  if (staged) {
    // the chunk's key (value) rows into local memory, consecutive work-items on consecutive elements
    auto stage = [&](int64_t dim, const std::string& at, const std::string& stride, const std::string& row) {
      s += "      for (int z = lid; z < " + num(int64_t(W) * dim) + "; z += " + G + ") {\n";
      s += "        const int u = z / " + num(dim) + ", e = z % " + num(dim) + ";\n";
      s += "        const " + L + " ju = j0 + u;\n";
      s += "        sm[" + at + " + u * " + stride + " + e] = ju < keys ? " + row + "[e] : 0.0f;\n      }\n";
    };
    stage(a.d, koff, D1, keyRow("ju"));
    stage(a.dv, voff, DV, valueRow("ju"));
    s += "      " + bar;
  }
  s += "      float sc = -GK_INF;\n";
  s += "      if (live && j < limit) {\n";
  s += "        float dot = 0.0f;\n";
  if (staged) {
    s += "        for (int e = 0; e < " + D + "; ++e) dot += sm[qa + e] * sm[" + koff + " + t * " + D1 + " + e];\n";
  } else {
    s += "        " + gp + "const float* kr = " + keyRow("j") + ";\n";
    s += "        for (int e = 0; e < " + D + "; ++e) dot += sm[qa + e] * kr[e];\n";
  }
  s += "        sc = dot * " + floatLiteral(a.scale) + ";\n";
  s += "      }\n";
  s += onlineSoftmaxChunk(d, W, nv);
  s += accumulateChunk(d, W, nv, a.dv, "limit", staged ? "" : gp + "const float* vr = " + valueRow("(j0 + u)") + ";",
                       staged ? "sm[" + voff + " + u * " + DV + " + e]" : "vr[e]");
  s += "    }\n";
  s += "    if (live) {\n";
  s += "      const " + L + " oo = ((b * " + num(a.hq) + " + h) * " + S + " + i) * " + DV + ";\n";
  s += "      for (int c = 0; c < " + NV + "; ++c) {\n";
  s += "        const int e = t + c * " + WS + ";\n";
  s += "        if (e < " + DV + ") y0[oo + e] = ok ? acc[c] / l : GK_NAN;\n";
  s += "      }\n    }\n  }\n}\n";
  k.source = std::move(s);
  return k;
}

// ---- BlockQuantMatMul(x, w, scales, offsets?, bias?) -> y --------------------------------
StatusOr<RenderedKernel> blockQuantMatMul(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                          const KernelDialect& d) {
  const auto& qa = node.attrs.get<QuantAttrs>();
  const bool offsets = present(node, 3), bias = present(node, 4);
  ASSIGN_OR_RETURN(ops::BlockQuantDims q, ops::blockQuantDims(shapeOf(g, node, 0), shapeOf(g, node, 1), shapeOf(g, node, 2),
                                                               offsets ? &shapeOf(g, node, 3) : nullptr,
                                                               bias ? &shapeOf(g, node, 4) : nullptr, qa));
  for (size_t t : {size_t(0), size_t(2), size_t(3), size_t(4)}) {
    if (present(node, t) && g.tensors[node.inputs[t]].dtype != DType::kFloat32) return unsupported("BlockQuantMatMul of float32 x, scales, offsets and bias only");
  }
  const DType wt = g.tensors[node.inputs[1]].dtype;
  if (wt != DType::kUInt8 && wt != DType::kInt8) return unsupported("BlockQuantMatMul weights of uint8 or int8 storage only");
  if (q.blob % 4 != 0) return unsupported("BlockQuantMatMul blocks of under 4 bytes");
  constexpr int W = kFlashLanes, R = kBqColumns;
  const int64_t words = q.blocks * q.blob / 4, per_block = q.blob / 4, per_word = q.nibbles ? 8 : 4;
  const int64_t n_tiles = (q.N + R - 1) / R;
  const bool stage = q.K + q.blocks <= kPatternLocalFloats - W * R;  // x's row (and its block scales) in local memory
  // precision int8: x's blocks quantized as the reference does (quantizeActivationBlock),
  // in local memory, so the sums are the reference's integers
  const bool qx = q.int8_activations;
  if (qx && !stage) return unsupported("BlockQuantMatMul with int8 activations and K over " + num(kPatternLocalFloats - W * R));
  const bool partial = q.blocks * q.block != q.K;         // values past K in the last block: skipped
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = q.M * n_tiles;
  k.reduce_size = q.K;
  k.local_size = W * R;
  const std::string L = d.long_type, gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  const std::string K = num(q.K), N = num(q.N), WS = num(W), G = num(k.local_size);
  const std::string xs = stage ? "xs[" : "x0[xo + ";
  std::string s = signature(g, node, name, d);
  s += "  " + std::string(d.local_array) + " float red[" + G + "];\n";
  if (stage) s += "  " + std::string(d.local_array) + " float xs[" + K + "];\n";
  if (qx) s += "  " + std::string(d.local_array) + " float sx[" + num(q.blocks) + "];\n";
  s += "  const int lid = (int)" + std::string(d.local_id) + ", c = lid / " + WS + ", t = lid % " + WS + ";\n";
  s += "  " + gp + "const unsigned int* wq = (" + gp + "const unsigned int*)x1;\n";
  s += "  for (" + L + " grp = (" + L + ")" + d.group_id + "; grp < " + num(k.items) + "; grp += (" + L + ")" + d.num_groups + ") {\n";
  s += "    const " + L + " row = grp / " + num(n_tiles) + ", n = (grp % " + num(n_tiles) + ") * " + num(R) + " + c;\n";
  s += "    const " + L + " xo = row * " + K + ";\n";
  if (stage) {
    s += "    " + std::string(d.barrier) + ";\n";
    s += "    for (int z = lid; z < " + K + "; z += " + G + ") xs[z] = x0[xo + z];\n";
    s += "    " + std::string(d.barrier) + ";\n";
  }
  if (qx) {  // q = rint(x * (127 / max|x|)) per block, scale max|x| / 127 (0 for a block of zeros)
    const std::string B = num(q.block), end = "(b + 1) * " + B + " < " + K + " ? (b + 1) * " + B + " : " + K;
    s += "    for (int b = lid; b < " + num(q.blocks) + "; b += " + G + ") {\n";
    s += "      const int e1 = " + end + ";\n";
    s += "      float amax = 0.0f;\n";
    s += "      for (int e = b * " + B + "; e < e1; ++e) amax = " + d.math("fmax") + "(amax, " + d.math("fabs") + "(xs[e]));\n";
    s += "      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;\n";
    s += "      for (int e = b * " + B + "; e < e1; ++e) xs[e] = " + d.math("rint") + "(xs[e] * inv);\n";
    s += "      sx[b] = amax / 127.0f;\n    }\n";
    s += "    " + std::string(d.barrier) + ";\n";
  }
  s += "    float acc = 0.0f;\n";
  s += "    if (n < " + N + ") {\n";
  s += "      for (int w = t; w < " + num(words) + "; w += " + WS + ") {\n";
  s += "        const int blk = w / " + num(per_block) + ", k0 = blk * " + num(q.block) + " + (w % " + num(per_block) + ") * " +
       num(per_word) + ";\n";
  s += "        const unsigned int u = wq[n * " + num(words) + " + w];\n";
  s += "        float dot = 0.0f, xsum = 0.0f;\n";
  s += "        for (int e = 0; e < " + num(per_word) + "; ++e) {\n";
  if (q.nibbles) {
    s += "          const int v = (int)((u >> (4 * e)) & 15u);\n";
    s += std::string("          const float qv = (float)") + (q.signed_nibbles ? "((v ^ 8) - 8)" : "v") + ";\n";
  } else {
    s += "          const int v = (int)((u >> (8 * e)) & 255u);\n";
    s += "          const float qv = (float)((v ^ 128) - 128);\n";  // int8 values (blockQuantDims checked the storage)
  }
  s += "          const float xv = " + (partial ? "k0 + e < " + K + " ? " + xs + "k0 + e] : 0.0f" : xs + "k0 + e]") + ";\n";
  s += "          dot += qv * xv;\n";
  if (offsets) s += "          xsum += xv;\n";
  s += "        }\n";
  const std::string term = "dot * x2[n * " + num(q.blocks) + " + blk]" + (offsets ? " + xsum * x3[n * " + num(q.blocks) + " + blk]" : "");
  s += "        acc += " + (qx ? "sx[blk] * (" + term + ")" : term) + ";\n";
  s += "      }\n    }\n";
  s += "    red[lid] = acc;\n    " + std::string(d.barrier) + ";\n";
  s += "    for (int hh = " + num(W / 2) + "; hh > 0; hh >>= 1) {\n";
  s += "      if (t < hh) red[lid] += red[lid + hh];\n      " + std::string(d.barrier) + ";\n    }\n";
  s += "    if (t == 0 && n < " + N + ") y0[row * " + N + " + n] = red[lid]" + (bias ? " + x4[n]" : "") + ";\n";
  s += "  }\n}\n";
  k.source = std::move(s);
  return k;
}

}  // namespace

bool isLlmKernelOp(const ir::Node& node) {
  return isOp(node, "RmsNorm") || isOp(node, "Rotary") || isOp(node, "CachedAttention") || isOp(node, "BlockQuantMatMul");
}

StatusOr<RenderedKernel> renderLlmKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                         const KernelDialect& d) {
  if (!isLlmKernelOp(node)) return unsupported("not an LLM kernel");
  if (!present(node, 0)) return unsupported(std::string(node.op->name) + " with an absent input");
  for (int t : node.outputs) if (t < 0) return unsupported(std::string(node.op->name) + " with an absent output");
  if (isOp(node, "RmsNorm")) return rmsNorm(g, node, name, d);
  if (isOp(node, "Rotary")) return rotary(g, node, name, d);
  if (isOp(node, "CachedAttention")) return cachedAttention(g, node, name, d);
  return blockQuantMatMul(g, node, name, d);
}

}  // namespace gkrt::codegen
