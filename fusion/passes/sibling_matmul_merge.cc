// sibling_matmul_merge (gkrt's own, preprocess): matmuls that read the same activation
// with constant 2-D weights (a decoder's Q/K/V projections, its gate and up projections)
// become one matmul over the weights concatenated along N, then a Split into the
// original outputs (their bias adds concatenated too). inference_matmul_split_fusion then makes MatMulSplit of it, and
// inference_swiglu_fusion SwiGLU of a gate/up pair: one GEMM instead of two or three.
// The concatenated weights are new constants of this plan (the model's stay as they are).
// A packed projection (onnxruntime-genai's QKV: one matmul whose output only contiguous
// slices of its last axis read) gets the Split the merged form has, so the same passes
// take it (SmolLM2's genai int4 file: 610 -> 550 kernels a decode step).
// BlockQuantMatMul siblings (genai's gate and up MatMulNBits) are not merged: tried, the
// step was no faster (93.0-97.6 against 91.9-100.3 tokens/s) and the resident memory grew
// by the merged copy (+35 MB int4, +61 MB int8), the session keeping the unmerged blocks
// for its other plans.
#include <algorithm>
#include <cstring>

#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool isWeightMatMul(const ir::Graph& g, const ir::Node& n, int x) {
  if ((!isOp(n, "MatMul") && !isOp(n, "BatchMatMul")) || n.inputs.size() != 2 || n.inputs[0] != x) return false;
  const auto& a = n.attrs.get<MatMulAttrs>();
  const ir::Tensor& w = g.tensors[size_t(n.inputs[1])];
  const Shape& xs = g.tensors[size_t(x)].shape;
  return !a.transpose_a && !a.transpose_b && w.isConstant() && w.shape.size() == 2 && !xs.empty() && isStatic(xs) &&
         w.shape[0] == xs.back() && w.dtype == g.tensors[size_t(x)].dtype && isPatternDType(w.dtype);
}

// A product read only by StridedSlices of its last axis (step 1, static bounds) that tile
// it end to end -> one Split into those slices' outputs.
StatusOr<bool> slicesToSplitOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (const ir::Node& mm : g.nodes) {
    if (!isOp(mm, "MatMul") && !isOp(mm, "BatchMatMul") && !isOp(mm, "BlockQuantMatMul")) continue;
    const int p = mm.outputs[0];
    const Shape& ps = g.tensors[size_t(p)].shape;
    if (ps.empty() || !isStatic(ps) || std::find(g.outputs.begin(), g.outputs.end(), p) != g.outputs.end()) continue;
    const int64_t rank = int64_t(ps.size()), n = ps.back();
    std::vector<std::pair<int64_t, int>> parts;  // (begin, slice node)
    bool ok = true;
    for (int r : pg.users(p)) {
      const ir::Node& sl = g.nodes[size_t(r)];
      if (!isOp(sl, "StridedSlice") || sl.inputs.size() != 1 || sl.inputs[0] != p) { ok = false; break; }
      const auto& a = sl.attrs.get<StridedSliceAttrs>();
      if (a.axes.size() != 1 || a.begins.size() != 1 || a.ends.size() != 1 || (a.axes[0] != -1 && a.axes[0] != rank - 1) ||
          (!a.steps.empty() && (a.steps.size() != 1 || a.steps[0] != 1))) {
        ok = false;
        break;
      }
      const int64_t b = a.begins[0] < 0 ? a.begins[0] + n : a.begins[0];
      const int64_t e = std::min(a.ends[0] < 0 ? a.ends[0] + n : a.ends[0], n);
      if (b < 0 || e <= b) { ok = false; break; }
      parts.push_back({b, r});
      if (g.tensors[size_t(sl.outputs[0])].shape.back() != e - b) { ok = false; break; }
    }
    if (!ok || parts.size() < 2) continue;
    std::sort(parts.begin(), parts.end());
    SplitAttrs split{-1, {}};
    std::vector<int> outs, erase;
    int64_t at = 0;
    for (const auto& [b, r] : parts) {
      const int64_t len = g.tensors[size_t(g.nodes[size_t(r)].outputs[0])].shape.back();
      if (b != at) { ok = false; break; }
      at += len;
      split.sizes.push_back(len);
      outs.push_back(g.nodes[size_t(r)].outputs[0]);
      erase.push_back(r);
    }
    if (!ok || at != n) continue;
    const int root = erase[0];
    RETURN_IF_ERROR(replaceWithPatternNode(g, root, patternNode("Split", mm.name + "/split", Attrs(split), {p}, outs), erase));
    return true;
  }
  return false;
}

StatusOr<bool> mergeOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    std::vector<int> mm;  // the weight matmuls reading t, of the first one's op
    for (int r : pg.users(int(t))) {
      if (isWeightMatMul(g, g.nodes[size_t(r)], int(t)) && (mm.empty() || g.nodes[size_t(r)].op == g.nodes[size_t(mm[0])].op)) mm.push_back(r);
    }
    if (mm.size() < 2) continue;
    std::sort(mm.begin(), mm.end());  // the graph's order: Q, K, V; gate before up
    const DType dt = g.tensors[t].dtype;
    const int64_t K = g.tensors[size_t(g.nodes[size_t(mm[0])].inputs[1])].shape[0];
    const size_t es = dtypeSize(dt);
    int64_t total = 0;
    SplitAttrs split{-1, {}};
    for (int r : mm) {
      const int64_t n = g.tensors[size_t(g.nodes[size_t(r)].inputs[1])].shape[1];
      split.sizes.push_back(n);
      total += n;
    }
    // Biases: when every sibling's only reader adds a constant [N_i], they go with it
    // (Split(Add(P, b)) is what inference_matmul_split_fusion takes).
    std::vector<int> bias_adds;
    for (size_t i = 0; i < mm.size(); ++i) {
      const int out = g.nodes[size_t(mm[i])].outputs[0];
      const std::vector<int> readers = pg.users(out);
      if (!pg.singleUse(out) || readers.size() != 1 || !isOp(g.nodes[size_t(readers[0])], "Add")) break;
      const ir::Node& add = g.nodes[size_t(readers[0])];
      const int b = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
      const ir::Tensor& bt = g.tensors[size_t(b)];
      if (!bt.isConstant() || bt.dtype != dt || bt.shape != Shape{split.sizes[i]} || g.tensors[size_t(add.outputs[0])].shape != g.tensors[size_t(out)].shape) break;
      bias_adds.push_back(readers[0]);
    }
    if (bias_adds.size() != mm.size() || !findOp("Add")) bias_adds.clear();
    std::vector<uint8_t> bytes(size_t(K * total) * es);
    int64_t col = 0;
    for (size_t i = 0; i < mm.size(); ++i) {
      const ir::Tensor& w = g.tensors[size_t(g.nodes[size_t(mm[i])].inputs[1])];
      const int64_t n = split.sizes[i];
      for (int64_t k = 0; k < K; ++k) {
        std::memcpy(&bytes[size_t(k * total + col) * es], w.constant->data + size_t(k * n) * es, size_t(n) * es);
      }
      col += n;
    }
    const ir::Node first = g.nodes[size_t(mm[0])];
    Shape ys = g.tensors[t].shape;
    ys.back() = total;
    const int w = addPatternConstant(g, first.name + "/merged_weights", dt, {K, total}, bytes.data());
    const int y = addPatternTensor(g, first.name + "/merged", dt, ys);
    std::vector<int> outs, erase(mm.begin() + 1, mm.end());
    int split_in = y;
    if (!bias_adds.empty()) {
      std::vector<uint8_t> b(size_t(total) * es);
      int64_t at = 0;
      for (size_t i = 0; i < mm.size(); ++i) {
        const ir::Node& add = g.nodes[size_t(bias_adds[i])];
        const int bt = add.inputs[0] == g.nodes[size_t(mm[i])].outputs[0] ? add.inputs[1] : add.inputs[0];
        std::memcpy(&b[size_t(at) * es], g.tensors[size_t(bt)].constant->data, size_t(split.sizes[i]) * es);
        at += split.sizes[i];
        outs.push_back(add.outputs[0]);
        erase.push_back(bias_adds[i]);
      }
      const int bias = addPatternConstant(g, first.name + "/merged_bias", dt, {total}, b.data());
      split_in = addPatternTensor(g, first.name + "/merged_biased", dt, ys);
      g.addNode(patternNode("Add", first.name + "/merged_bias_add", Attrs(), {y, bias}, {split_in}));
    } else {
      for (int r : mm) outs.push_back(g.nodes[size_t(r)].outputs[0]);
    }
    g.addNode(patternNode("Split", first.name + "/split", Attrs(split), {split_in}, outs));
    RETURN_IF_ERROR(replaceWithPatternNode(g, mm[0], patternNode(first.op->name, first.name + "/merged", first.attrs, {int(t), w}, {y}), erase));
    return true;
  }
  return false;
}

}  // namespace

PassResult mergeSiblingMatMuls(FusionContext& ctx) {
  if (!findOp("Split")) return PassResult(false);
  bool changed = false;
  for (auto once : {mergeOnce, slicesToSplitOnce}) {
    ASSIGN_OR_RETURN(bool c, rewriteAll(ctx, once));
    changed = changed || c;
  }
  return changed;
}

}  // namespace gkrt::passes
