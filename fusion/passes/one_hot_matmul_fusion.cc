// one_hot_matmul_fusion (gkrt's own pass, preprocess, opt_level 2: a new constant): an
// embedding lookup written as a one-hot product, as jax2tf/tf2onnx export
// `jax.nn.one_hot` + a dense layer (magika's byte embedding),
//   MatMul(Cast<float32>(Equal(ids [..., S, 1], iota [V])), W [V, D])   -> [..., S, D]
// becomes
//   Gather(W0, Select(ids >= 0 && ids < V, ids, V), axis 0) -> Reshape [..., S, D]
// where W0 is W with a row of zeros appended: an id outside [0, V) matches no column of the
// one-hot and reads the zero row. The one-hot (S x V floats) and the S x V x D product are
// gone; the index steps run on S values. Conditions: iota an integer constant holding 0..V-1
// (leading dims 1), ids an integer tensor of static shape whose last dim is 1, the Equal
// and the Cast each read only by the next op, W a float32 constant [V, D], no transposes.
#include <cstring>
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::passes {
namespace {

// V when t is an integer constant [1, ..., 1, V] holding 0, 1, ..., V-1; else 0.
int64_t iotaLength(const ir::Graph& g, int t) {
  const ir::Tensor& c = g.tensors[size_t(t)];
  if (!c.isConstant() || !isInteger(c.dtype) || c.shape.empty()) return 0;
  const int64_t v = c.shape.back();
  if (numElements(c.shape) != v || v < 1) return 0;
  TensorView view;
  view.dtype = c.dtype;
  view.shape = c.shape;
  view.data = c.constant->data;
  for (int64_t k = 0; k < v; ++k) if (ops::loadIndex(view, k) != k) return 0;
  return v;
}

int scalarOf(ir::Graph& g, const std::string& name, DType dt, int64_t value) {
  if (dt == DType::kInt32) {
    const int32_t v = int32_t(value);
    return addPatternConstant(g, name, dt, {}, &v);
  }
  return addPatternConstant(g, name, dt, {}, &value);
}

StatusOr<bool> fuseOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& mm = g.nodes[i];
    if (!isPlainMatMul(mm)) continue;
    const ir::Tensor& w = g.tensors[size_t(mm.inputs[1])];
    if (!w.isConstant() || w.dtype != DType::kFloat32 || w.shape.size() != 2) continue;
    if (!pg.singleUse(mm.inputs[0])) continue;
    const ir::Node* cast = pg.producer(mm.inputs[0], {"Cast"});
    if (!cast || cast->inputs.size() != 1 || g.tensors[size_t(mm.inputs[0])].dtype != DType::kFloat32 ||
        !pg.singleUse(cast->inputs[0])) {
      continue;
    }
    const ir::Node* eq = pg.producer(cast->inputs[0], {"Equal"});
    if (!eq || eq->inputs.size() != 2) continue;
    const int64_t V = w.shape[0], D = w.shape[1];
    int ids = -1;
    for (int k = 0; k < 2; ++k) if (iotaLength(g, eq->inputs[k]) == V) ids = eq->inputs[1 - k];
    if (ids < 0) continue;
    const ir::Tensor& it = g.tensors[size_t(ids)];
    const Shape& onehot = g.tensors[size_t(mm.inputs[0])].shape;
    if (!isInteger(it.dtype) || (it.dtype != DType::kInt32 && it.dtype != DType::kInt64) || !isStatic(it.shape) ||
        it.shape.empty() || it.shape.back() != 1 || onehot.size() != it.shape.size() || onehot.back() != V) {
      continue;
    }
    bool same_rows = true;  // the one-hot has the ids' shape with V along the last dim
    for (size_t d = 0; d + 1 < onehot.size(); ++d) same_rows = same_rows && onehot[d] == it.shape[d];
    const Shape ys = g.tensors[size_t(mm.outputs[0])].shape;
    if (!same_rows || ys.empty() || ys.back() != D) continue;
    // Copies: the graph's node and tensor vectors grow below.
    const Shape ids_shape = it.shape;
    const DType dt = it.dtype;
    const int cast_index = pg.producerIndex(mm.inputs[0]), eq_index = pg.producerIndex(cast->inputs[0]);
    const int y = mm.outputs[0];
    const std::string base = mm.name + "/one_hot";
    // W with a row of zeros after its V rows.
    std::vector<float> padded(size_t((V + 1) * D), 0.0f);
    std::memcpy(padded.data(), w.constant->data, size_t(V * D) * sizeof(float));
    const int table = addPatternConstant(g, base + "_table", DType::kFloat32, {V + 1, D}, padded.data());
    const int zero = scalarOf(g, base + "_zero", dt, 0), count = scalarOf(g, base + "_count", dt, V);
    const int ge = addPatternTensor(g, base + "_not_negative", DType::kBool, ids_shape);
    const int lt = addPatternTensor(g, base + "_below_count", DType::kBool, ids_shape);
    const int valid = addPatternTensor(g, base + "_in_range", DType::kBool, ids_shape);
    const int index = addPatternTensor(g, base + "_index", dt, ids_shape);
    Shape gathered = ids_shape;
    gathered.push_back(D);
    const int rows = addPatternTensor(g, base + "_rows", DType::kFloat32, gathered);
    g.addNode(patternNode("GreaterEqual", base + "/not_negative", Attrs(), {ids, zero}, {ge}));
    g.addNode(patternNode("Less", base + "/below_count", Attrs(), {ids, count}, {lt}));
    g.addNode(patternNode("LogicalAnd", base + "/in_range", Attrs(), {ge, lt}, {valid}));
    g.addNode(patternNode("Select", base + "/index", Attrs(), {valid, ids, count}, {index}));
    g.addNode(patternNode("Gather", base + "/gather", Attrs(AxisAttrs{0, false}), {table, index}, {rows}));
    RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
                                           patternNode("Reshape", base + "/rows", Attrs(ShapeAttrs{Ints(ys.begin(), ys.end())}),
                                                       {rows}, {y}),
                                           {cast_index, eq_index}));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseOneHotMatMul(FusionContext& ctx) {
  for (const char* op : {"Gather", "Select", "LogicalAnd", "GreaterEqual", "Less", "Reshape"}) if (!findOp(op)) return PassResult(false);
  return rewriteAll(ctx, fuseOne);
}

}  // namespace gkrt::passes
