// matmul_integer_to_float_fusion (gkrt's own pass): the dequantization chain onnxruntime's
// quantize_dynamic writes after each integer matmul becomes one op, so the cpu backend
// runs it as one oneDNN int8 matmul with run-time output scales and post-ops instead of an
// int32 product, a loop over it and (for GeLU) two more kernels around an Erf. Pattern
// (every intermediate read only by the next op):
//   act?( Add?( Mul( Cast<float32>(MatMulInteger(a, b, azp?, bzp?)), S ), bias ) )
//     -> MatMulIntegerToFloat[Relu|Gelu](a, b, as, bs, azp?, bzp?, bias?)
// S = Mul(as, bs) (either order) with as one float32 element (the DynamicQuantizeLinear's
// run-time scale) and bs a float32 constant of 1 or N elements (N = b's columns), or S
// itself such a constant (as then a new constant 1). b is a constant int8/uint8 [K, N],
// bzp a constant of 1 or N elements, azp one element; bias a float32 constant of N
// elements broadcast along the last axis (either Add operand); act ReLU or GeLU. The op
// rounds each step as the unfused ops do (runtime/ir/ops/quant_linear.cc). Runs after
// RecognizeExportedPatterns (GeLU is one op by then) and before GraphKernelExpander.
#include <string>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool isInt8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
int64_t elements(const ir::Graph& g, int t) { return numElements(g.tensors[t].shape); }
bool floatConst(const ir::Graph& g, int t, int64_t n) {
  const ir::Tensor& x = g.tensors[t];
  return x.isConstant() && x.dtype == DType::kFloat32 && (elements(g, t) == 1 || elements(g, t) == n);
}
// A constant with one element per column, broadcast along the last axis only.
bool columnConst(const ir::Graph& g, int t, int64_t n) {
  const ir::Tensor& x = g.tensors[t];
  return x.isConstant() && x.dtype == DType::kFloat32 && !x.shape.empty() && x.shape.back() == n && elements(g, t) == n;
}

struct Match {
  int mmi = -1, cast = -1, mul = -1, add = -1, act = -1;  // node indices
  int as = -1, bs = -1, bias = -1;
  const char* op = "MatMulIntegerToFloat";
};

// The scale operand S of the Mul: fills as/bs (as = -1: S is the whole constant).
bool scaleOf(const PatternGraph& pg, int s, int64_t n, Match* m) {
  const ir::Graph& g = pg.graph();
  if (g.tensors[s].dtype != DType::kFloat32) return false;
  if (const ir::Node* mul = pg.producer(s, {"Mul"}); mul && mul->inputs.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const int p = mul->inputs[side], q = mul->inputs[1 - side];
      if (g.tensors[p].dtype == DType::kFloat32 && elements(g, p) == 1 && floatConst(g, q, n) &&
          g.tensors[s].shape == g.tensors[q].shape) {
        m->as = p;
        m->bs = q;
        return true;
      }
    }
  }
  if (!floatConst(g, s, n)) return false;
  m->bs = s;
  return true;
}

// The one node reading t (null when t has other readers or is a graph output).
const ir::Node* onlyReader(const PatternGraph& pg, int t, int* index) {
  if (!pg.singleUse(t)) return nullptr;
  const std::vector<int> users = pg.users(t);
  if (users.size() != 1) return nullptr;
  *index = users[0];
  return &pg.graph().nodes[users[0]];
}

bool matchAt(const PatternGraph& pg, size_t mmi_index, Match* m) {
  const ir::Graph& g = pg.graph();
  const ir::Node& mmi = g.nodes[mmi_index];
  if (!isOp(mmi, "MatMulInteger") || mmi.inputs.size() < 2) return false;
  const int a = mmi.inputs[0], b = mmi.inputs[1];
  const ir::Tensor &at = g.tensors[a], &bt = g.tensors[b];
  if (!isInt8(at.dtype) || !isInt8(bt.dtype) || !bt.isConstant() || bt.shape.size() != 2 || at.shape.size() < 2) return false;
  const int64_t n = bt.shape[1];
  if (mmi.inputs.size() > 2 && mmi.inputs[2] >= 0 && elements(g, mmi.inputs[2]) != 1) return false;
  if (mmi.inputs.size() > 3 && mmi.inputs[3] >= 0) {
    const int z = mmi.inputs[3];
    if (!g.tensors[z].isConstant() || (elements(g, z) != 1 && elements(g, z) != n)) return false;
  }
  const int acc = mmi.outputs[0];
  int cast_index = -1, mul_index = -1;
  const ir::Node* cast_node = onlyReader(pg, acc, &cast_index);
  if (!cast_node || !isOp(*cast_node, "Cast") || cast_node->attrs.get<CastAttrs>().to != DType::kFloat32) return false;
  const ir::Node& cast = *cast_node;
  const ir::Node* mul_node = onlyReader(pg, cast.outputs[0], &mul_index);
  if (!mul_node || !isOp(*mul_node, "Mul") || mul_node->inputs.size() != 2) return false;
  const ir::Node& mul = *mul_node;
  const int s = mul.inputs[0] == cast.outputs[0] ? mul.inputs[1] : mul.inputs[0];
  if (s == cast.outputs[0] || !scaleOf(pg, s, n, m)) return false;
  int y = mul.outputs[0];
  if (g.tensors[y].shape != g.tensors[acc].shape) return false;  // S broadcast no further than the columns
  m->mmi = static_cast<int>(mmi_index);
  m->cast = cast_index;
  m->mul = mul_index;
  int next = -1;
  if (const ir::Node* add = onlyReader(pg, y, &next); add && isOp(*add, "Add") && add->inputs.size() == 2) {
    const int bias = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    if (bias != y && columnConst(g, bias, n) && g.tensors[add->outputs[0]].shape == g.tensors[y].shape) {
      m->add = next;
      m->bias = bias;
      y = add->outputs[0];
    }
  }
  if (const ir::Node* act = onlyReader(pg, y, &next); act && act->inputs.size() == 1 && (isOp(*act, "ReLU") || isOp(*act, "GeLU"))) {
    m->act = next;
    m->op = isOp(*act, "ReLU") ? "MatMulIntegerToFloatRelu" : "MatMulIntegerToFloatGelu";
  }
  return true;
}

StatusOr<bool> fuseOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Match m;
    if (!matchAt(pg, i, &m) || !findOp(m.op)) continue;
    const ir::Node& mmi = g.nodes[m.mmi];
    const int root = m.act >= 0 ? m.act : m.add >= 0 ? m.add : m.mul;
    int as = m.as;
    const float one = 1.0f;
    if (as < 0) as = addPatternConstant(g, g.tensors[m.bs].name + "_unit", DType::kFloat32, {}, &one);  // S was the whole scale
    const int azp = mmi.inputs.size() > 2 ? mmi.inputs[2] : -1, bzp = mmi.inputs.size() > 3 ? mmi.inputs[3] : -1;
    std::vector<int> ins = {mmi.inputs[0], mmi.inputs[1], as, m.bs, azp, bzp};
    if (m.bias >= 0) ins.push_back(m.bias);
    while (!ins.empty() && ins.back() < 0) ins.pop_back();
    const Attrs attrs = m.act >= 0 && isOp(g.nodes[m.act], "GeLU") ? g.nodes[m.act].attrs : Attrs{};
    ir::Node node = patternNode(m.op, mmi.name + "_to_float", attrs, std::move(ins), {g.nodes[root].outputs[0]});
    std::vector<int> erase = {m.mmi, m.cast, m.mul};
    if (m.add >= 0) erase.push_back(m.add);
    RETURN_IF_ERROR(replaceWithPatternNode(g, root, std::move(node), erase));
    return true;
  }
  return false;
}

}  // namespace

PassResult fuseMatMulIntegerToFloat(FusionContext& ctx) {
  return !findOp("MatMulIntegerToFloat") ? PassResult(false) : rewriteAll(ctx, fuseOne);
}

}  // namespace gkrt::passes
