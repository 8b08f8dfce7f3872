#include "runtime/shape_specialize.h"

#include "runtime/ir/op_def.h"

namespace gkrt {

Status checkInputShapes(const ir::Graph& g, const std::map<std::string, Shape>& shapes) {
  std::map<std::string, std::pair<int64_t, std::string>> bound;  // symbol -> value, where
  for (const auto& [name, shape] : shapes) {
    const int t = g.findTensor(name);
    bool is_input = false;
    for (int i : g.inputs) is_input = is_input || i == t;
    if (t < 0 || !is_input) {
      std::string valid;
      for (int i : g.inputs) valid += (valid.empty() ? "" : ", ") + g.tensors[i].name;
      return makeError(StatusCode::kNotFound, "'", name, "' is not a model input; inputs: ", valid);
    }
    const ir::Tensor& in = g.tensors[t];
    if (shape.size() != in.shape.size()) {
      return makeError(StatusCode::kInvalidArgument, "input '", name, "' is declared ", shapeToString(in.shape),
                       " (rank ", in.shape.size(), "); got ", shapeToString(shape), " (rank ", shape.size(), ")");
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::string symbol = d < in.dim_symbols.size() ? in.dim_symbols[d] : "";
      if (shape[d] < 0) {
        return makeError(StatusCode::kInvalidArgument, "input '", name, "' dim ", d, " is ", shape[d],
                         "; give every dim a size >= 0");
      }
      if (in.shape[d] >= 0 && in.shape[d] != shape[d]) {
        return makeError(StatusCode::kInvalidArgument, "input '", name, "' dim ", d, " is fixed at ", in.shape[d],
                         " (declared ", shapeToString(in.shape), "); got ", shapeToString(shape),
                         ". Only dims shown as ? may change");
      }
      if (symbol.empty() || in.shape[d] >= 0) continue;
      auto [it, fresh] = bound.emplace(symbol, std::make_pair(shape[d], name));
      if (!fresh && it->second.first != shape[d]) {
        return makeError(StatusCode::kInvalidArgument, "dim '", symbol, "' is ", it->second.first, " in input '",
                         it->second.second, "' but ", shape[d], " in input '", name, "' dim ", d,
                         "; inputs sharing a dim name must agree");
      }
    }
  }
  return Status::Ok();
}

namespace {

// Nodes whose outputs all have known values become constants; dynamic-shape ops whose
// operands are now known become their static form. Returns whether anything changed.
StatusOr<bool> foldAndLower(ir::Graph& g) {
  bool changed = false;
  std::vector<ir::Node> kept;
  for (ir::Node& n : g.nodes) {
    bool all_known = !n.outputs.empty();
    for (int t : n.outputs) all_known = all_known && g.tensors[t].value != nullptr;
    if (all_known) {  // shape arithmetic: its results are constants from now on
      for (int t : n.outputs) {
        ir::Tensor& out = g.tensors[t];
        out.constant = out.value;
        out.value = nullptr;
      }
      changed = true;
      continue;
    }
    if (n.op->lower) {
      std::vector<TensorType> types(n.inputs.size());
      std::vector<const TensorType*> in(n.inputs.size(), nullptr);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] < 0) continue;
        const ir::Tensor& t = g.tensors[n.inputs[k]];
        types[k] = {t.dtype, t.shape, t.knownData()};
        in[k] = &types[k];
      }
      LoweredOp l;
      Status s = n.op->lower(n, in, l);
      if (!s.ok()) return s.withContext("lowering node '" + n.name + "' (" + n.op->name + ")");
      const OpDef* def = findOp(l.op);
      if (!def) return makeError(StatusCode::kUnsupported, "node '", n.name, "' needs op ", l.op, ", not in this build");
      std::vector<int> inputs;
      for (int k : l.inputs) inputs.push_back(n.inputs[size_t(k)]);
      n.op = def;
      n.attrs = l.attrs;
      n.inputs = inputs;
      changed = true;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return changed;
}

}  // namespace

bool hasShapeArithmetic(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    if (n.op->lower || n.op->reads_only_shapes) return true;
  }
  return false;
}

Status specializeShapes(ir::Graph& g, const std::map<std::string, Shape>& shapes) {
  for (int t : g.inputs) {
    auto it = shapes.find(g.tensors[t].name);
    if (it != shapes.end()) g.tensors[t].shape = it->second;
  }
  for (int t : g.inputs) {
    if (!isStatic(g.tensors[t].shape)) {
      return makeError(StatusCode::kInvalidArgument, "input '", g.tensors[t].name, "' has shape ",
                       shapeToString(g.tensors[t].shape), " with unknown dims; give its shape (setInput with a "
                       "tensor of that size, SessionOptions::input_shapes, resizeInput, or `gkrt run --input`)");
    }
  }
  if (!hasShapeArithmetic(g)) return ir::inferShapes(g);
  for (;;) {
    RETURN_IF_ERROR(ir::inferShapes(g));
    ASSIGN_OR_RETURN(bool changed, foldAndLower(g));
    if (!changed) break;
  }
  ir::compactGraph(g);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (!isStatic(g.tensors[t].shape)) {
      return makeError(StatusCode::kUnsupported, ir::describeTensor(g, static_cast<int>(t)),
                       " still has an unknown shape for these input shapes");
    }
  }
  return ir::validateGraph(g);
}

}  // namespace gkrt
