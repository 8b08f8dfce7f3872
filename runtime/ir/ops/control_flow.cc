// Control flow: If, Loop and Scan (ONNX semantics), nodes holding subgraphs. The
// binding of node inputs/outputs to subgraph inputs/outputs is listed in
// runtime/ir/control_flow.h. The dtype rule binds the node's input types to the
// subgraphs and infers them (as Fused does); the shape rule reads the result. The
// reference kernels interpret the subgraphs; sessions run them compiled
// (runtime/control_flow_kernels.cc).
#include "runtime/ir/control_flow.h"
#include "runtime/ir/interpret.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {

int subgraphCount(const OpDef& op) {
  const std::string name = op.name;
  return name == "If" ? 2 : name == "Loop" || name == "Scan" ? 1 : 0;
}

namespace ir {

Status validateControlFlowSubgraphs(const Graph& g, int i) {
  const Node& n = g.nodes[i];
  const std::string who = describeNode(g, i);
  const size_t want = static_cast<size_t>(subgraphCount(*n.op));
  if (want == 0) {
    if (n.subgraphs.empty()) return Status::Ok();
    return makeError(StatusCode::kInvalidModel, who, ": holds ", n.subgraphs.size(),
                     " control-flow subgraphs; only If, Loop and Scan nodes hold them");
  }
  if (n.subgraphs.size() != want) {
    return makeError(StatusCode::kInvalidModel, who, ": holds ", n.subgraphs.size(), " subgraphs, ", n.op->name,
                     " takes ", want, want == 2 ? " (then and else branches)" : " (its body)");
  }
  const size_t nin = n.inputs.size(), nout = n.outputs.size();
  size_t sub_inputs = nin, sub_outputs = nout;
  if (want == 2) {
    sub_inputs = nin - 1;
    const int64_t unbuilt = unbuiltBranch(n);
    if (unbuilt < -1 || unbuilt > 1) {
      return makeError(StatusCode::kInvalidModel, who, ": unbuilt_branch ", unbuilt,
                       " is not -1 (both built), 0 (then) or 1 (else)");
    }
  } else if (n.attrs.kind() == AttrKind::kLoop) {
    const LoopAttrs& a = n.attrs.get<LoopAttrs>();
    if (nin < 2 || a.num_carried < 0 || static_cast<size_t>(a.num_carried) > std::min(nin - 2, nout)) {
      return makeError(StatusCode::kInvalidModel, who, ": num_carried ", a.num_carried, " does not fit ", nin,
                       " inputs {M, cond, carried..., captured...} and ", nout, " outputs");
    }
    sub_outputs = nout + 1;
  } else {
    const ScanAttrs& a = n.attrs.get<ScanAttrs>();
    if (a.num_state < 0 || a.num_scan_inputs < 1 || static_cast<size_t>(a.num_state) > nout ||
        static_cast<size_t>(a.num_state + a.num_scan_inputs) > nin) {
      return makeError(StatusCode::kInvalidModel, who, ": num_state ", a.num_state, " and num_scan_inputs ",
                       a.num_scan_inputs, " do not fit ", nin, " inputs and ", nout, " outputs");
    }
    const size_t scanned = static_cast<size_t>(a.num_scan_inputs), scans = nout - static_cast<size_t>(a.num_state);
    if ((!a.scan_input_axes.empty() && a.scan_input_axes.size() != scanned) ||
        (!a.scan_input_directions.empty() && a.scan_input_directions.size() != scanned) ||
        (!a.scan_output_axes.empty() && a.scan_output_axes.size() != scans) ||
        (!a.scan_output_directions.empty() && a.scan_output_directions.size() != scans)) {
      return makeError(StatusCode::kInvalidModel, who, ": scan axes/directions lists must be empty or list one "
                       "value per scan input (", scanned, ") / scan output (", scans, ")");
    }
  }
  for (size_t k = 0; k < want; ++k) {
    const std::string which = want == 2 ? (k == 0 ? " then branch" : " else branch") : " body";
    if (!n.subgraphs[k]) return makeError(StatusCode::kInvalidModel, who, which, " is missing");
    Graph& sub = *n.subgraphs[k];
    if (sub.inputs.size() != sub_inputs || sub.outputs.size() != sub_outputs) {
      return makeError(StatusCode::kInvalidModel, who, which, " has ", sub.inputs.size(), " inputs and ",
                       sub.outputs.size(), " outputs; the node binds ", sub_inputs, " and ", sub_outputs);
    }
    RETURN_IF_ERROR(validateGraph(sub).withContext(who + which));
  }
  return Status::Ok();
}

}  // namespace ir

namespace ops {
namespace {

std::string nodeName(const ir::Node& n) { return std::string(n.op->name) + " '" + n.name + "'"; }

// Sets subgraph input k to `types[k]` (dtypes must agree) and infers the subgraph.
Status bindAndInfer(const ir::Node& n, ir::Graph& sub, const std::vector<TensorType>& types, const char* which) {
  for (size_t k = 0; k < types.size(); ++k) {
    ir::Tensor& t = sub.tensors[sub.inputs[k]];
    if (t.dtype != types[k].dtype) {
      return makeError(StatusCode::kInvalidModel, nodeName(n), " ", which, " input ", k, " '", t.name, "' is ",
                       dtypeName(t.dtype), ", the node binds ", dtypeName(types[k].dtype));
    }
    t.shape = types[k].shape;
  }
  return ir::inferShapes(sub).withContext(nodeName(n) + " " + which);
}

StatusOr<TensorType> required(const ir::Node& n, const In& in, size_t k) {
  if (!in[k]) return makeError(StatusCode::kInvalidModel, nodeName(n), ": input ", k, " is absent");
  return *in[k];
}

const ir::Tensor& subOutput(const ir::Graph& sub, size_t k) { return sub.tensors[sub.outputs[k]]; }

Status requireScalar(const ir::Node& n, const TensorType* t, DType dtype, const char* what) {
  if (!t) return Status::Ok();
  if (t->dtype != dtype || (isStatic(t->shape) && numElements(t->shape) != 1)) {
    return makeError(StatusCode::kInvalidModel, nodeName(n), ": ", what, " must be one ", dtypeName(dtype),
                     " value, got ", dtypeName(t->dtype), " ", shapeToString(t->shape));
  }
  return Status::Ok();
}

// The node's output dtypes: body outputs from `first_out` on; the first `carried`
// must keep the dtype of body inputs from `first_in` on.
Status bodyOutputDTypes(const ir::Node& n, const std::vector<TensorType>& body_in, size_t first_in, size_t first_out,
                        size_t carried, const char* what, std::vector<DType>& out) {
  out.clear();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const DType d = subOutput(*n.subgraphs[0], first_out + k).dtype;
    if (k < carried && d != body_in[first_in + k].dtype) {
      return makeError(StatusCode::kInvalidModel, nodeName(n), ": ", what, " ", k, " enters the body as ",
                       dtypeName(body_in[first_in + k].dtype), " and leaves it as ", dtypeName(d));
    }
    out.push_back(d);
  }
  return Status::Ok();
}

// ---- If ----------------------------------------------------------------------
Status dtypeIf(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (!in[0]) return makeError(StatusCode::kInvalidModel, nodeName(n), ": the condition is absent");
  RETURN_IF_ERROR(requireScalar(n, in[0], DType::kBool, "the condition"));
  std::vector<TensorType> captured;
  for (size_t k = 1; k < in.size(); ++k) { ASSIGN_OR_RETURN(TensorType t, required(n, in, k)); captured.push_back(t); }
  RETURN_IF_ERROR(bindAndInfer(n, *n.subgraphs[0], captured, "then branch"));
  RETURN_IF_ERROR(bindAndInfer(n, *n.subgraphs[1], captured, "else branch"));
  out.clear();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const ir::Tensor &a = subOutput(*n.subgraphs[0], k), &b = subOutput(*n.subgraphs[1], k);
    if (a.dtype != b.dtype) {
      return makeError(StatusCode::kInvalidModel, nodeName(n), ": output ", k, " is ", dtypeName(a.dtype), " ('",
                       a.name, "') in the then branch but ", dtypeName(b.dtype), " ('", b.name,
                       "') in the else branch; both branches must give the same types");
    }
    out.push_back(a.dtype);
  }
  return Status::Ok();
}

Status shapeIf(const ir::Node& n, const In&, std::vector<Shape>& out) {
  out.clear();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const ir::Tensor &a = subOutput(*n.subgraphs[0], k), &b = subOutput(*n.subgraphs[1], k);
    if (a.shape != b.shape) {
      return makeError(StatusCode::kInvalidModel, nodeName(n), ": output ", k, " is ", shapeToString(a.shape), " ('",
                       a.name, "') in the then branch but ", shapeToString(b.shape), " ('", b.name,
                       "') in the else branch; both branches must give the same shapes unless the condition is a "
                       "constant (freeze the input it depends on at conversion: gkrt convert --freeze)");
    }
    out.push_back(a.shape);
  }
  return Status::Ok();
}

// ---- Loop --------------------------------------------------------------------
Status dtypeLoop(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const LoopAttrs& a = n.attrs.get<LoopAttrs>();
  const size_t carried = static_cast<size_t>(a.num_carried);
  RETURN_IF_ERROR(requireScalar(n, in[0], DType::kInt64, "the trip count M"));
  RETURN_IF_ERROR(requireScalar(n, in[1], DType::kBool, "the condition"));
  std::vector<TensorType> body_in{{DType::kInt64, {}}, {DType::kBool, {}}};
  for (size_t k = 2; k < in.size(); ++k) { ASSIGN_OR_RETURN(TensorType t, required(n, in, k)); body_in.push_back(t); }
  const ir::Graph& body = *n.subgraphs[0];
  RETURN_IF_ERROR(bindAndInfer(n, *n.subgraphs[0], body_in, "body"));
  if (subOutput(body, 0).dtype != DType::kBool) {
    return makeError(StatusCode::kInvalidModel, nodeName(n), ": body output 0 (the condition) is ",
                     dtypeName(subOutput(body, 0).dtype), ", not bool");
  }
  return bodyOutputDTypes(n, body_in, 2, 1, carried, "carried value", out);
}

Status shapeLoop(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const LoopAttrs& a = n.attrs.get<LoopAttrs>();
  const size_t carried = static_cast<size_t>(a.num_carried);
  const ir::Graph& body = *n.subgraphs[0];
  out.clear();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const ir::Tensor& o = subOutput(body, 1 + k);
    if (k < carried) {
      if (o.shape != in[2 + k]->shape) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": carried value ", k, " enters the body as ",
                         shapeToString(in[2 + k]->shape), " and leaves it as ", shapeToString(o.shape), " ('", o.name,
                         "'); loop-carried values must keep their shapes");
      }
      out.push_back(o.shape);
      continue;
    }
    if (a.trip_count < 0) {
      return makeError(StatusCode::kInvalidModel, nodeName(n), ": scan output ", k - carried, " ('", o.name,
                       "') needs the trip count, which is not known; make M a constant (or freeze the inputs it "
                       "comes from: gkrt convert --freeze)");
    }
    Shape s{a.trip_count};
    s.insert(s.end(), o.shape.begin(), o.shape.end());
    out.push_back(s);
  }
  return Status::Ok();
}

// ---- Scan --------------------------------------------------------------------
size_t axisIn(const Ints& axes, size_t k, size_t rank) {
  const int64_t ax = k < axes.size() ? axes[k] : 0;
  return static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(rank) : ax);
}

Status dtypeScan(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t states = static_cast<size_t>(a.num_state), scanned = static_cast<size_t>(a.num_scan_inputs);
  const size_t lead = a.batched ? 1 : 0;
  std::vector<TensorType> body_in;
  int64_t length = -1;
  for (size_t k = 0; k < in.size(); ++k) {
    ASSIGN_OR_RETURN(TensorType t, required(n, in, k));
    if (k < states + scanned && a.batched) {
      if (t.shape.empty()) return makeError(StatusCode::kInvalidModel, nodeName(n), ": input ", k, " has no batch axis");
      t.shape.erase(t.shape.begin());
    }
    if (k >= states && k < states + scanned) {
      const int64_t rank = static_cast<int64_t>(t.shape.size());
      const int64_t ax = k - states < a.scan_input_axes.size() ? a.scan_input_axes[k - states] : 0;
      if (ax < -rank || ax >= rank) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": scan input ", k - states, " axis ", ax,
                         " is out of range for rank ", rank + static_cast<int64_t>(lead));
      }
      const size_t axis = axisIn(a.scan_input_axes, k - states, t.shape.size());
      if (t.shape[axis] >= 0 && length >= 0 && t.shape[axis] != length) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": scan input ", k - states, " has ", t.shape[axis],
                         " steps, an earlier one ", length, "; every scan input must have the same length");
      }
      if (t.shape[axis] >= 0) length = t.shape[axis];
      t.shape.erase(t.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    }
    body_in.push_back(t);
  }
  RETURN_IF_ERROR(bindAndInfer(n, *n.subgraphs[0], body_in, "body"));
  return bodyOutputDTypes(n, body_in, 0, 0, states, "state", out);
}

Status shapeScan(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t states = static_cast<size_t>(a.num_state);
  const ir::Graph& body = *n.subgraphs[0];
  const Shape& first = in[states]->shape;
  const size_t lead = a.batched ? 1 : 0;
  const int64_t length = first[lead + axisIn(a.scan_input_axes, 0, first.size() - lead)];
  out.clear();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const ir::Tensor& o = subOutput(body, k);
    Shape s = o.shape;
    if (k < states) {
      Shape want = in[k]->shape;
      if (a.batched) want.erase(want.begin());
      if (s != want) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": state ", k, " enters the body as ",
                         shapeToString(want), " and leaves it as ", shapeToString(s), " ('", o.name,
                         "'); scan states must keep their shapes");
      }
    } else {
      const int64_t rank = static_cast<int64_t>(s.size()) + 1;
      const int64_t ax = k - states < a.scan_output_axes.size() ? a.scan_output_axes[k - states] : 0;
      if (ax < -rank || ax >= rank) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": scan output ", k - states, " axis ", ax,
                         " is out of range for rank ", rank);
      }
      s.insert(s.begin() + (ax < 0 ? ax + rank : ax), length);
    }
    if (a.batched) s.insert(s.begin(), in[0]->shape[0]);
    out.push_back(s);
  }
  return Status::Ok();
}

Status controlFlowKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(ir::ControlFlowFrame frame, ir::ControlFlowFrame::prepare(c.node, c.inputs, c.outputs));
  auto run = [&](size_t which, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out) {
    return ir::interpretGraph(*c.node.subgraphs[which], in, out);
  };
  return ir::runControlFlow(c.node, c.inputs, c.outputs, run, frame);
}

}  // namespace

void registerControlFlowOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("If")) t.push_back({"If", OpClass::kOpaque, 1, kVariadic, 1, 1024, AttrKind::kIf, dtypeIf, shapeIf, controlFlowKernel,
               "runs the then branch when cond is true, else the else branch; inputs {cond, captured...}"});
  if constexpr (opSelected("Loop")) t.push_back({"Loop", OpClass::kOpaque, 0, kVariadic, 1, 1024, AttrKind::kLoop, dtypeLoop, shapeLoop, controlFlowKernel,
               "runs the body while i < M and cond; inputs {M, cond, carried..., captured...}"});
  if constexpr (opSelected("Scan")) t.push_back({"Scan", OpClass::kOpaque, 1, kVariadic, 1, 1024, AttrKind::kScan, dtypeScan, shapeScan, controlFlowKernel,
               "runs the body once per slice of the scanned inputs; inputs {state..., scanned..., captured...}"});
}

}  // namespace ops
}  // namespace gkrt
