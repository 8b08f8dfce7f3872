// RecognizeExportedPatterns: the forms ONNX exporters write for LayerNorm, GeLU and SiLU
// become those ops, so the Appendix 3 passes (and the backends' kernels) find them.
//   LayerNorm: d = Sub(x, ReduceMean(x, last axis, keepdims)); n = Div(d, Sqrt(Add(
//              ReduceMean(Pow(d, 2)), eps))); optionally Add(Mul(n, gamma), beta)
//   GeLU (erf):  Mul(Mul(x, Add(Erf(Div(x, sqrt 2) | Mul(x, 1/sqrt 2)), 1)), 0.5)
//   GeLU (tanh): Mul(Mul(x, Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2/pi))), 1)), 0.5)
//                (the cube also as x * (x * (0.044715 * x)) in any grouping, as jax2tf writes it)
//   SiLU: Mul(x, Sigmoid(x))
//   RmsNorm: Mul(x, Reciprocal(Sqrt(Add(ReduceMean(Pow(x, 2)), eps)))) or
//            Mul(x, Rsqrt(Add(...))) or Div(x, Sqrt(...)), the square also as Mul(x, x),
//            then Mul by a 1-D [last dim] constant gamma
// Every intermediate has one reader (d has its two: the Sub's result feeds the variance
// and the division); constants are checked to 1e-3 relative; Mul and Add in either order.
#include <cmath>
#include <vector>

#include "fusion/passes/pattern_match.h"
#include "fusion/passes/pattern_passes.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool near(std::optional<float> v, double want) { return v && std::fabs(*v - want) <= 1e-3 * std::fabs(want); }

// For a commutative binary node: the operand that is not the constant `want`, or -1.
int otherThanConstant(const ir::Graph& g, const ir::Node& n, double want) {
  if (near(scalarConstant(g, n.inputs[1]), want)) return n.inputs[0];
  if (near(scalarConstant(g, n.inputs[0]), want)) return n.inputs[1];
  return -1;
}

// ReduceMean over the last axis only, keeping dims.
bool meanOverLastAxis(const ir::Graph& g, const ir::Node& n) {
  if (!isOp(n, "ReduceMean")) return false;
  const auto& a = n.attrs.get<AxesAttrs>();
  const int64_t rank = static_cast<int64_t>(g.tensors[n.inputs[0]].shape.size());
  return a.keep_dims && a.axes.size() == 1 && (a.axes[0] == -1 || a.axes[0] == rank - 1);
}

// Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps))) with d = Sub(x, ReduceMean(x)): x and eps.
bool layerNormCore(const PatternGraph& pg, const ir::Node& div, int* x, float* eps) {
  const ir::Graph& g = pg.graph();
  if (!isOp(div, "Div") && !isOp(div, "RealDiv")) return false;
  const ir::Node* sub = pg.producer(div.inputs[0], {"Sub"});
  const ir::Node* sqrt = pg.producer(div.inputs[1], {"Sqrt"});
  if (!sub || !sqrt || pg.uses(div.inputs[0]) != 2 || !pg.singleUse(div.inputs[1])) return false;
  const ir::Node* mean = pg.producer(sub->inputs[1]);
  if (!mean || !meanOverLastAxis(g, *mean) || mean->inputs[0] != sub->inputs[0] || !pg.singleUse(sub->inputs[1])) return false;
  const ir::Node* add = pg.producer(sqrt->inputs[0], {"Add"});
  if (!add || !pg.singleUse(sqrt->inputs[0])) return false;
  for (int k : {0, 1}) {
    const auto e = scalarConstant(g, add->inputs[1 - k]);
    const ir::Node* var = pg.producer(add->inputs[k]);
    if (!e || !var || !meanOverLastAxis(g, *var) || !pg.singleUse(add->inputs[k])) continue;
    const ir::Node* pow = pg.producer(var->inputs[0], {"Pow"});
    if (!pow || !pg.singleUse(var->inputs[0]) || pow->inputs[0] != div.inputs[0] ||
        !near(scalarConstant(g, pow->inputs[1]), 2.0)) {
      continue;
    }
    *x = sub->inputs[0];
    *eps = *e;
    return true;
  }
  return false;
}

// x * Reciprocal(Sqrt(Add(ReduceMean(Pow(x, 2)), eps))) or x / Sqrt(...): x and eps.
bool rmsNormCore(const PatternGraph& pg, const ir::Node& n, int* x, float* eps) {
  const ir::Graph& g = pg.graph();
  std::vector<std::pair<int, const ir::Node*>> tries;  // (x candidate, Sqrt or Rsqrt node)
  if (isOp(n, "Mul")) {
    for (int k : {0, 1}) {
      if (const ir::Node* rs = pg.singleUse(n.inputs[k]) ? pg.producer(n.inputs[k], {"Rsqrt"}) : nullptr) {
        tries.push_back({n.inputs[1 - k], rs});
        continue;
      }
      const ir::Node* r = pg.producer(n.inputs[k], {"Reciprocal"});
      const ir::Node* sq = r && pg.singleUse(n.inputs[k]) && pg.singleUse(r->inputs[0]) ? pg.producer(r->inputs[0], {"Sqrt"}) : nullptr;
      if (sq) tries.push_back({n.inputs[1 - k], sq});
    }
  } else if (isOp(n, "Div") || isOp(n, "RealDiv")) {
    const ir::Node* sq = pg.singleUse(n.inputs[1]) ? pg.producer(n.inputs[1], {"Sqrt"}) : nullptr;
    if (sq) tries.push_back({n.inputs[0], sq});
  }
  for (const auto& [xin, sq] : tries) {
    const ir::Node* add = pg.singleUse(sq->inputs[0]) ? pg.producer(sq->inputs[0], {"Add"}) : nullptr;
    if (!add) continue;
    for (int k : {0, 1}) {
      const auto e = scalarConstant(g, add->inputs[1 - k]);
      const ir::Node* mean = pg.producer(add->inputs[k]);
      if (!e || !mean || !meanOverLastAxis(g, *mean) || !pg.singleUse(add->inputs[k]) || !pg.singleUse(mean->inputs[0])) continue;
      const ir::Node* sq = pg.producer(mean->inputs[0], {"Pow", "Mul"});
      const bool square = sq && sq->inputs[0] == xin &&
                          (isOp(*sq, "Mul") ? sq->inputs[1] == xin : near(scalarConstant(g, sq->inputs[1]), 2.0));
      if (!square) continue;
      *x = xin;
      *eps = *e;
      return true;
    }
  }
  return false;
}

// The Mul tree x * a * 0.5 in any grouping: the (x, a) pairs it could be, a being the
// (1 + f(x)) factor (geluFactor decides).
std::vector<std::pair<int, int>> halfTimesXTimes(const PatternGraph& pg, const ir::Node& root) {
  const ir::Graph& g = pg.graph();
  std::vector<std::pair<int, int>> out;
  if (!isOp(root, "Mul")) return out;
  const int inner = otherThanConstant(g, root, 0.5);
  if (inner >= 0) {  // Mul(Mul(x, a), 0.5)
    const ir::Node* m = pg.producer(inner, {"Mul"});
    if (m && pg.singleUse(inner)) out = {{m->inputs[0], m->inputs[1]}, {m->inputs[1], m->inputs[0]}};
    return out;
  }
  for (int k : {0, 1}) {  // Mul(x, Mul(a, 0.5)) or Mul(Mul(x, 0.5), a)
    const ir::Node* m = pg.producer(root.inputs[k], {"Mul"});
    if (!m || !pg.singleUse(root.inputs[k])) continue;
    const int v = otherThanConstant(g, *m, 0.5);
    if (v < 0) continue;
    out.push_back({root.inputs[1 - k], v});
    out.push_back({v, root.inputs[1 - k]});
  }
  return out;
}

// t = 0.044715 x^3 as a tree of Muls (each read only by the next) over x, x, x and the
// constant, in any grouping, or with Pow(x, 3) for the three x: jax2tf writes
// x * (x * (0.044715 * x)), PyTorch Mul(Pow(x, 3), 0.044715).
bool isCubicTerm(const PatternGraph& pg, int t, int x) {
  const ir::Graph& g = pg.graph();
  int xs = 0, constants = 0;
  std::vector<int> stack = {t};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (v == x) {
      ++xs;
      continue;
    }
    if (near(scalarConstant(g, v), 0.044715)) {
      ++constants;
      continue;
    }
    const ir::Node* n = pg.producer(v, {"Mul", "Pow"});
    if (!n || n->inputs.size() != 2 || (v != t && !pg.singleUse(v)) || xs > 3) return false;
    if (isOp(*n, "Pow")) {
      if (n->inputs[0] != x || !near(scalarConstant(g, n->inputs[1]), 3.0)) return false;
      xs += 3;
      continue;
    }
    stack.push_back(n->inputs[0]);
    stack.push_back(n->inputs[1]);
  }
  return xs == 3 && constants == 1;
}

// factor = Add(f, 1) with f = Erf(x / sqrt 2) or Tanh(sqrt(2/pi) (x + 0.044715 x^3)).
std::optional<GeluApprox> geluFactor(const PatternGraph& pg, int factor, int x) {
  const ir::Graph& g = pg.graph();
  const ir::Node* add = pg.producer(factor, {"Add"});
  if (!add || !pg.singleUse(factor)) return std::nullopt;
  const int f = otherThanConstant(g, *add, 1.0);
  if (f < 0 || !pg.singleUse(f)) return std::nullopt;
  if (const ir::Node* erf = pg.producer(f, {"Erf"})) {
    const ir::Node* s = pg.producer(erf->inputs[0], {"Div", "RealDiv", "Mul"});
    if (!s || !pg.singleUse(erf->inputs[0])) return std::nullopt;
    const bool ok = !isOp(*s, "Mul") ? s->inputs[0] == x && near(scalarConstant(g, s->inputs[1]), std::sqrt(2.0))
                                    : otherThanConstant(g, *s, 1.0 / std::sqrt(2.0)) == x;
    return ok ? std::optional<GeluApprox>(GeluApprox::kNone) : std::nullopt;
  }
  const ir::Node* tanh = pg.producer(f, {"Tanh"});
  if (!tanh || !pg.singleUse(tanh->inputs[0])) return std::nullopt;
  const ir::Node* scaled = pg.producer(tanh->inputs[0], {"Mul"});
  const int inner = scaled ? otherThanConstant(g, *scaled, std::sqrt(2.0 / M_PI)) : -1;
  const ir::Node* sum = inner >= 0 && pg.singleUse(inner) ? pg.producer(inner, {"Add"}) : nullptr;
  if (!sum) return std::nullopt;
  for (int k : {0, 1}) {
    if (sum->inputs[k] == x && pg.singleUse(sum->inputs[1 - k]) && isCubicTerm(pg, sum->inputs[1 - k], x)) return GeluApprox::kTanh;
  }
  return std::nullopt;
}

StatusOr<bool> recognizeOnce(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  PatternGraph pg(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!isOp(n, "Div") && !isOp(n, "RealDiv") && !isOp(n, "Mul")) continue;
    int x = -1;
    float eps = 0;
    if (layerNormCore(pg, n, &x, &eps)) {
      if (!isPatternDType(g.tensors[x].dtype)) continue;
      // The affine tail, when its Mul and Add take 1-D [last dim] constants.
      int out = n.outputs[0], gamma = -1, beta = -1, root = static_cast<int>(i);
      const Shape& xs = g.tensors[x].shape;
      auto param = [&](int t) { return g.tensors[t].isConstant() && g.tensors[t].shape == Shape{xs.back()}; };
      const std::vector<int> readers = pg.users(out);
      if (pg.singleUse(out) && readers.size() == 1 && isOp(g.nodes[readers[0]], "Mul")) {
        const ir::Node& mul = g.nodes[readers[0]];
        const int gm = mul.inputs[0] == out ? mul.inputs[1] : mul.inputs[0];
        const std::vector<int> next = pg.users(mul.outputs[0]);
        if (param(gm)) {
          gamma = gm, out = mul.outputs[0], root = readers[0];
          if (pg.singleUse(out) && next.size() == 1 && isOp(g.nodes[next[0]], "Add")) {
            const ir::Node& add = g.nodes[next[0]];
            const int bt = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
            if (param(bt)) beta = bt, out = add.outputs[0], root = next[0];
          }
        }
      }
      std::vector<int> outs = {out};
      std::vector<int> ins = {x, gamma, beta};
      while (ins.back() < 0) ins.pop_back();
      RETURN_IF_ERROR(replaceWithPatternNode(g, root, patternNode("LayerNorm", n.name + "/layer_norm", Attrs(NormAttrs{-1, eps}), ins, outs)));
      return true;
    }
    if (findOp("RmsNorm") && rmsNormCore(pg, n, &x, &eps) && isPatternDType(g.tensors[x].dtype)) {
      const std::vector<int> readers = pg.users(n.outputs[0]);  // the gamma Mul: RmsNorm takes it
      if (pg.singleUse(n.outputs[0]) && readers.size() == 1 && isOp(g.nodes[readers[0]], "Mul")) {
        const ir::Node& mul = g.nodes[readers[0]];
        const int gm = mul.inputs[0] == n.outputs[0] ? mul.inputs[1] : mul.inputs[0];
        if (g.tensors[gm].isConstant() && g.tensors[gm].shape == Shape{g.tensors[x].shape.back()} &&
            g.tensors[gm].dtype == g.tensors[x].dtype) {
          RETURN_IF_ERROR(replaceWithPatternNode(g, readers[0], patternNode("RmsNorm", n.name + "/rms_norm", Attrs(NormAttrs{-1, eps}),
                                                                            {x, gm}, mul.outputs)));
          return true;
        }
      }
    }
    if (!isOp(n, "Mul")) continue;
    for (const auto& [gx, factor] : halfTimesXTimes(pg, n)) {
      if (auto approx = geluFactor(pg, factor, gx)) {
        RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
            patternNode("GeLU", n.name + "/gelu", Attrs(GeluAttrs{*approx}), {gx}, n.outputs)));
        return true;
      }
    }
    for (int k : {0, 1}) {
      const ir::Node* sig = pg.producer(n.inputs[k], {"Sigmoid"});
      if (sig && sig->inputs[0] == n.inputs[1 - k] && pg.singleUse(n.inputs[k])) {
        RETURN_IF_ERROR(replaceWithPatternNode(g, static_cast<int>(i),
            patternNode("SiLU", n.name + "/silu", Attrs(), {n.inputs[1 - k]}, n.outputs)));
        return true;
      }
    }
  }
  return false;
}

}  // namespace

// A minimal build without LayerNorm, GeLU or SiLU leaves the forms as they are.
PassResult recognizeExportedPatterns(FusionContext& ctx) {
  return !findOp("LayerNorm") || !findOp("GeLU") || !findOp("SiLU") ? PassResult(false) : rewriteAll(ctx, recognizeOnce);
}

}  // namespace gkrt::passes
