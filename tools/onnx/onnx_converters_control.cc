// ONNX control flow: If, Loop, Scan. Each subgraph converts recursively in a context
// of its own; the outer values it reads become explicit inputs of the node (after
// the node's own), in the order they are first read (onnx_context.h). An If whose
// condition is a constant at conversion (an initializer, folded from them, or a
// frozen input) is replaced by the nodes of the branch it takes.
#include <algorithm>
#include <memory>

#include "runtime/base/log.h"
#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

struct Subgraph {
  std::shared_ptr<ir::Graph> graph;
  std::vector<Value> captures;      // in the outer context, one per input after `types`
  std::vector<std::string> capture_names;
};

const onnx::GraphProto* graphAttr(const Node& n, const char* name) {
  const auto* a = findAttr(n, name);
  return a && a->has_g() ? &a->g() : nullptr;
}

// Converts `g` with its inputs typed `types`; `preset` names outer values to capture
// first (in this order), so two branches can share one input list.
StatusOr<Subgraph> convertSubgraph(Context& outer, const onnx::GraphProto& g, const std::vector<TensorType>& types,
                                   const std::vector<std::string>& preset, const std::string& what) {
  if (static_cast<size_t>(g.input_size()) != types.size()) {
    return makeError(StatusCode::kInvalidModel, what, " has ", g.input_size(), " inputs, the node binds ", types.size());
  }
  Context c(outer.opset());
  c.parent = &outer;
  c.base_dir = outer.base_dir;
  GraphBuilder& b = c.builder();
  for (size_t k = 0; k < types.size(); ++k) {
    c.bind(g.input(static_cast<int>(k)).name(), b.input(g.input(static_cast<int>(k)).name(), types[k].dtype, types[k].shape));
  }
  for (const std::string& name : preset) {
    if (!c.resolveOuter(name)) return makeError(StatusCode::kInternal, what, ": cannot capture '", name, "'");
  }
  for (const auto& init : g.initializer()) {
    auto t = tensorFromProto(init, c.base_dir);
    if (!t.ok()) return t.status().withContext(what + " initializer '" + init.name() + "'");
    c.bind(init.name(), b.constant(init.name(), t->dtype(), t->shape(), t->data()));
  }
  RETURN_IF_ERROR(convertGraphNodes(c, g, true).withContext(what));
  std::vector<int> outputs;
  for (const auto& out : g.output()) {
    if (!c.has(out.name()) && !c.resolveOuter(out.name())) {
      return makeError(StatusCode::kInvalidModel, what, " output '", out.name(), "' is never produced");
    }
    Value v = c.value(out.name());
    // Each output is a tensor a node of the subgraph produces: inputs, constants and
    // repeated outputs get a copy (a session's outputs are distinct tensors).
    bool copy = c.isConstant(v) || std::count(outputs.begin(), outputs.end(), v.id) > 0;
    for (int k = 0; k < g.input_size(); ++k) copy = copy || c.value(g.input(k).name()).id == v.id;
    for (const std::string& name : c.capture_names) copy = copy || c.value(name).id == v.id;
    if (copy) v = b.op1("Reshape", {v}, ShapeAttrs{b.tensor(v).shape});
    outputs.push_back(v.id);
    b.output(v, out.name());
  }
  auto graph = b.finish();
  if (!graph.ok()) return graph.status().withContext(what);
  return Subgraph{std::make_shared<ir::Graph>(std::move(graph).value()), c.captures, c.capture_names};
}

std::vector<Value> withCaptures(std::vector<Value> inputs, const std::vector<Value>& captures) {
  inputs.insert(inputs.end(), captures.begin(), captures.end());
  return inputs;
}

TensorType typeOf(Context& c, Value v) { return {dtypeOf(c, v), shapeOf(c, v)}; }

// The placeholder for a branch that cannot be built at the model's shapes (IfAttrs): the
// inputs of `built` (the other branch) and outputs of its types and shapes, zeros, which
// never run (runControlFlow refuses the branch). Needs static output shapes.
StatusOr<Subgraph> placeholderBranch(Context& outer, const Subgraph& built, const std::string& what) {
  Context c(outer.opset());
  c.parent = &outer;
  c.base_dir = outer.base_dir;
  GraphBuilder& b = c.builder();
  for (const std::string& name : built.capture_names) {
    if (!c.resolveOuter(name)) return makeError(StatusCode::kInternal, what, ": cannot capture '", name, "'");
  }
  for (int t : built.graph->outputs) {
    const ir::Tensor& out = built.graph->tensors[static_cast<size_t>(t)];
    for (int64_t d : out.shape) {
      if (d < 0) return makeError(StatusCode::kUnsupported, what, ": output '", out.name, "' has a dynamic shape");
    }
    const std::vector<uint8_t> zeros(static_cast<size_t>(numElements(out.shape)) * dtypeSize(out.dtype), 0);
    const Value v = b.constant(out.name + "/unbuilt", out.dtype, out.shape, zeros.data());
    b.output(b.op1("Reshape", {v}, ShapeAttrs{out.shape}), out.name);
  }
  auto graph = b.finish();
  if (!graph.ok()) return graph.status().withContext(what);
  return Subgraph{std::make_shared<ir::Graph>(std::move(graph).value()), c.captures, c.capture_names};
}

// An If whose condition is known only at run time, with one branch that cannot run at the
// model's shapes (Silero VAD's 8 kHz branch at 16 kHz sizes): as onnxruntime, which checks
// a branch only when it takes it, the model converts; that branch becomes a placeholder and
// taking it is a run-time error. Only shape errors (kInvalidArgument) qualify, and only when
// the other branch builds.
Status convertIfOneBranch(Context& c, const Node& n, const onnx::GraphProto& then_g, const onnx::GraphProto& else_g,
                          int failed, const Status& why, Outs& outs) {
  const char* names[2] = {"then branch", "else branch"};
  auto built = convertSubgraph(c, failed == 0 ? else_g : then_g, {}, {}, names[1 - failed]);
  if (!built.ok()) return why;  // neither builds: the first error stands
  auto placeholder = placeholderBranch(c, *built, names[failed]);
  if (!placeholder.ok()) return why;
  GKRT_LOG_WARNING("converting If '", n.name(), "': its ", names[failed],
                   " cannot run at these input shapes and is left out; the model runs while the condition takes the ",
                   names[1 - failed], ", and taking the other is a run-time error (", why.message(), ")");
  std::vector<std::shared_ptr<ir::Graph>> branches = {built->graph, placeholder->graph};
  if (failed == 0) std::swap(branches[0], branches[1]);
  IfAttrs attrs;
  attrs.unbuilt_branch = failed;
  outs = c.builder().op("If", withCaptures({c.in(n, 0)}, built->captures), attrs, n.output_size(), n.name(), branches);
  return Status::Ok();
}

// A branch taken at conversion: its nodes join the enclosing graph.
Status inlineBranch(Context& c, const Node& n, const onnx::GraphProto& branch, Outs& outs) {
  for (const auto& init : branch.initializer()) {
    auto t = tensorFromProto(init, c.base_dir);
    if (!t.ok()) return t.status().withContext("initializer '" + init.name() + "'");
    c.bind(init.name(), c.builder().constant(init.name(), t->dtype(), t->shape(), t->data()));
  }
  RETURN_IF_ERROR(convertGraphNodes(c, branch, false).withContext("the branch taken"));
  if (branch.output_size() != n.output_size()) {
    return unsupported(n, "the branch taken has " + std::to_string(branch.output_size()) + " outputs, the node " +
                              std::to_string(n.output_size()));
  }
  for (const auto& out : branch.output()) {
    if (!c.has(out.name()) && !c.resolveOuter(out.name())) {
      return makeError(StatusCode::kInvalidModel, "branch output '", out.name(), "' is never produced");
    }
    outs.push_back(c.value(out.name()));
  }
  return Status::Ok();
}

Status convertIf(Context& c, const Node& n, Outs& outs) {
  const onnx::GraphProto* then_g = graphAttr(n, "then_branch");
  const onnx::GraphProto* else_g = graphAttr(n, "else_branch");
  if (!then_g || !else_g) return unsupported(n, "needs then_branch and else_branch graphs");
  const Value cond = c.in(n, 0);
  if (c.isConstant(cond)) {
    ASSIGN_OR_RETURN(HostTensor h, c.constant(cond, "If condition"));
    if (h.size() != 1) return unsupported(n, "the condition holds " + std::to_string(h.size()) + " values, not one");
    return inlineBranch(c, n, h.toFloats()[0] != 0.0f ? *then_g : *else_g, outs);
  }
  auto then_r = convertSubgraph(c, *then_g, {}, {}, "then branch");
  if (!then_r.ok()) {
    if (then_r.status().code() != StatusCode::kInvalidArgument) return then_r.status();
    return convertIfOneBranch(c, n, *then_g, *else_g, 0, then_r.status(), outs);
  }
  Subgraph then_b = std::move(then_r).value();
  auto else_r = convertSubgraph(c, *else_g, {}, then_b.capture_names, "else branch");
  if (!else_r.ok()) {
    if (else_r.status().code() != StatusCode::kInvalidArgument) return else_r.status();
    return convertIfOneBranch(c, n, *then_g, *else_g, 1, else_r.status(), outs);
  }
  Subgraph else_b = std::move(else_r).value();
  // Values only the else branch reads: unused inputs of the then branch.
  for (size_t k = then_b.captures.size(); k < else_b.captures.size(); ++k) {
    const ir::Tensor& t = c.tensor(else_b.captures[k]);
    ir::Graph& g = *then_b.graph;
    g.inputs.push_back(g.addTensor({else_b.capture_names[k], t.dtype, t.shape, {}, nullptr}));
  }
  outs = c.builder().op("If", withCaptures({cond}, else_b.captures), IfAttrs{}, n.output_size(), n.name(),
                        {then_b.graph, else_b.graph});
  return Status::Ok();
}

Status convertLoop(Context& c, const Node& n, Outs& outs) {
  const onnx::GraphProto* body_g = graphAttr(n, "body");
  if (!body_g) return unsupported(n, "needs a body graph");
  const Value trips = c.in(n, 0), cond = c.in(n, 1);
  const int carried = std::max(0, n.input_size() - 2);
  const int scans = n.output_size() - carried;
  if (scans < 0) return unsupported(n, "has fewer outputs than loop-carried values");
  LoopAttrs attrs;
  attrs.num_carried = carried;
  if (c.isConstant(trips)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> m, c.constInts(trips, "Loop trip count M"));
    if (m.size() != 1) return unsupported(n, "the trip count M holds " + std::to_string(m.size()) + " values");
    attrs.trip_count = std::max<int64_t>(0, m[0]);
  } else if (scans > 0) {
    return unsupported(n, std::to_string(scans) + " scan output(s) are sized by the trip count, so M ('" + n.input(0) +
                              "') must be a constant at conversion, but it is " +
                              (trips.id < 0 ? "absent" : "computed at run time") +
                              "; freeze the inputs it depends on (gkrt convert --freeze NAME=values.npy) or export "
                              "the loop with a constant trip count");
  }
  std::vector<TensorType> types{{DType::kInt64, {}}, {DType::kBool, {}}};
  std::vector<Value> inputs{trips, cond};
  for (int k = 2; k < n.input_size(); ++k) {
    const Value v = c.in(n, k);
    if (v.id < 0) return unsupported(n, "loop-carried input " + std::to_string(k - 2) + " is absent");
    types.push_back(typeOf(c, v));
    inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(Subgraph body, convertSubgraph(c, *body_g, types, {}, "Loop body"));
  outs = c.builder().op("Loop", withCaptures(inputs, body.captures), attrs, n.output_size(), n.name(), {body.graph});
  return Status::Ok();
}

Status convertScan(Context& c, const Node& n, Outs& outs) {
  const onnx::GraphProto* body_g = graphAttr(n, "body");
  if (!body_g) return unsupported(n, "needs a body graph");
  const bool v8 = c.opset() < 9;
  const int first = v8 ? 1 : 0;
  ScanAttrs attrs;
  attrs.batched = v8;
  attrs.num_scan_inputs = attrInt(n, "num_scan_inputs", 0);
  attrs.num_state = n.input_size() - first - attrs.num_scan_inputs;
  if (attrs.num_scan_inputs < 1 || attrs.num_state < 0) {
    return unsupported(n, "num_scan_inputs " + std::to_string(attrs.num_scan_inputs) + " does not fit its inputs");
  }
  if (v8) {
    attrs.scan_input_directions = attrInts(n, "directions");
    if (c.present(n, 0)) {  // sequence_lens: only the full length is supported
      ASSIGN_OR_RETURN(std::vector<int64_t> lens, c.constInts(c.in(n, 0), "Scan sequence_lens"));
      const Value x = c.in(n, first + static_cast<int>(attrs.num_state));
      for (int64_t l : lens) {
        if (x.id < 0 || shapeOf(c, x).size() < 2 || l != shapeOf(c, x)[1]) {
          return unsupported(n, "sequence_lens shorter than the sequence are not supported");
        }
      }
    }
  } else {
    attrs.scan_input_axes = attrInts(n, "scan_input_axes");
    attrs.scan_input_directions = attrInts(n, "scan_input_directions");
    attrs.scan_output_axes = attrInts(n, "scan_output_axes");
    attrs.scan_output_directions = attrInts(n, "scan_output_directions");
  }
  std::vector<TensorType> types;
  std::vector<Value> inputs;
  for (int k = first; k < n.input_size(); ++k) {
    const Value v = c.in(n, k);
    if (v.id < 0) return unsupported(n, "input " + std::to_string(k) + " is absent");
    TensorType t = typeOf(c, v);
    if (v8 && !t.shape.empty()) t.shape.erase(t.shape.begin());
    const int64_t j = k - first - attrs.num_state;
    if (j >= 0) {
      const int64_t rank = static_cast<int64_t>(t.shape.size());
      int64_t axis = static_cast<size_t>(j) < attrs.scan_input_axes.size() ? attrs.scan_input_axes[j] : 0;
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return unsupported(n, "scan input " + std::to_string(j) + " axis is out of range");
      t.shape.erase(t.shape.begin() + axis);
    }
    types.push_back(t);
    inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(Subgraph body, convertSubgraph(c, *body_g, types, {}, "Scan body"));
  outs = c.builder().op("Scan", withCaptures(inputs, body.captures), attrs, n.output_size(), n.name(), {body.graph});
  return Status::Ok();
}

}  // namespace

void registerControlConverters(std::map<std::string, Converter>& t) {
  t["If"] = convertIf;
  t["Loop"] = convertLoop;
  t["Scan"] = convertScan;
}

}  // namespace gkrt::onnx_import
