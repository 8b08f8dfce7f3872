// squeeze_sink (gkrt's own pass, preprocess): a Squeeze of a convolution's output moves
// below the elementwise ops that follow it,
//   Conv2D -> Squeeze(axis 2) -> Add(bias [C, 1]) -> ReLU   (tf2onnx's Conv1D + bias + relu)
// becomes
//   Conv2D -> Add(bias [C, 1, 1]) -> ReLU -> Squeeze
// so that the convolution's epilogue (bias, activation) can join it as post-ops instead of
// running as a loop of its own (deepcut's twelve Conv1D layers). Each step moves one op:
// a unary elementwise op, or a binary one whose other operand is a constant, reshaped with
// a 1 at each squeezed axis (numpy broadcasting gives the same values). Conditions: the
// Squeeze read only by that op, the op's result of the Squeeze's shape, float32. A
// StridedSlice that keeps the whole convolution output (tf2onnx writes one before the
// Squeeze) is bypassed first.
#include <algorithm>
#include <vector>

#include "fusion/passes/passes.h"
#include "fusion/passes/pattern_match.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool movable(const ir::Node& n) {
  static const char* kOps[] = {"Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum", "ReLU", "Sigmoid", "Tanh",
                               "SiLU", "HSwish", "HSigmoid", "Clip", "LeakyReLU", "Exp", "Neg", "Abs", "GeLU"};
  for (const char* op : kOps) if (isOp(n, op)) return true;
  return false;
}

// A StridedSlice that keeps its whole input: every begin 0, every step 1, the output of
// the input's shape (static).
bool identitySlice(const ir::Graph& g, const ir::Node& n) {
  if (!isOp(n, "StridedSlice") || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  const auto& a = n.attrs.get<StridedSliceAttrs>();
  for (int64_t b : a.begins) if (b != 0) return false;
  for (int64_t st : a.steps) if (st != 1) return false;
  const Shape& in = g.tensors[size_t(n.inputs[0])].shape;
  return isStatic(in) && in == g.tensors[size_t(n.outputs[0])].shape;
}

// The squeezed axes of `squeeze` on an input of rank r, sorted; empty when not all of
// them are 1 wide.
std::vector<int64_t> squeezedAxes(const ir::Node& squeeze, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  for (int64_t a : squeeze.attrs.get<AxesAttrs>().axes) {
    const int64_t k = a < 0 ? a + r : a;
    if (k < 0 || k >= r || x[size_t(k)] != 1) return {};
    axes.push_back(k);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

StatusOr<bool> sinkOne(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& sq = g.nodes[i];
    if (!isOp(sq, "Squeeze") || sq.inputs.size() != 1 || sq.outputs.size() != 1) continue;
    const int x = sq.inputs[0], s = sq.outputs[0];
    const ir::Node* from = pg.producer(x);  // a convolution, or an op already moved above the Squeeze
    if (from && identitySlice(g, *from) && pg.singleUse(x) && pg.producer(from->inputs[0], {"Conv2D"}) &&
        pg.singleUse(from->inputs[0])) {  // tf2onnx's Conv1D slices its output's whole width first
      const int slice = pg.producerIndex(x);
      g.nodes[i].inputs = {from->inputs[0]};
      g.nodes.erase(g.nodes.begin() + slice);  // read by nothing now
      return true;
    }
    if (!from || !(isOp(*from, "Conv2D") || movable(*from)) || !pg.singleUse(s) || isGraphOutput(g, s)) continue;
    const Shape xs = g.tensors[size_t(x)].shape, ss = g.tensors[size_t(s)].shape;
    const std::vector<int64_t> axes = squeezedAxes(sq, xs);
    const std::vector<int> users = pg.users(s);
    if (axes.empty() || users.size() != 1 || g.tensors[size_t(x)].dtype != DType::kFloat32) continue;
    const size_t j = size_t(users[0]);
    const ir::Node& e = g.nodes[j];
    if (j <= i || !movable(e) || e.outputs.size() != 1 || g.tensors[size_t(e.outputs[0])].shape != ss) continue;
    bool ok = std::count(e.inputs.begin(), e.inputs.end(), s) == 1;
    for (int t : e.inputs) {
      if (t == s) continue;
      const ir::Tensor& c = g.tensors[size_t(t)];
      ok = ok && c.isConstant() && c.dtype == DType::kFloat32 && c.shape.size() <= ss.size();
    }
    if (!ok) continue;
    // The constants with a 1 at each squeezed axis (right-aligned to the Squeeze's output first).
    std::vector<int> inputs = e.inputs;
    for (int& t : inputs) {
      if (t == s) {
        t = x;
        continue;
      }
      const ir::Tensor c = g.tensors[size_t(t)];
      if (c.shape.empty()) continue;  // a scalar broadcasts either way
      Shape aligned(ss.size() - c.shape.size(), 1);
      aligned.insert(aligned.end(), c.shape.begin(), c.shape.end());
      for (int64_t a : axes) aligned.insert(aligned.begin() + a, 1);
      t = addPatternConstant(g, c.name + "/unsqueezed", c.dtype, aligned, c.constant->data);
    }
    const int moved = addPatternTensor(g, g.nodes[j].name + "/before_squeeze", DType::kFloat32, xs);
    const int out = g.nodes[j].outputs[0];
    g.nodes[j].inputs = inputs;
    g.nodes[j].outputs = {moved};
    g.nodes[i].inputs = {moved};
    g.nodes[i].outputs = {out};
    std::swap(g.nodes[i], g.nodes[j]);  // the op first, the Squeeze where the op was
    return true;
  }
  return false;
}

}  // namespace

PassResult sinkSqueezes(FusionContext& ctx) { return rewriteAll(ctx, sinkOne); }

}  // namespace gkrt::passes
