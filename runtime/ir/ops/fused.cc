// Fused: a node carrying a subgraph of basic ops (made by the fusion engine or saved
// pre-fused by `gkrt convert --fuse-for`). Types and shapes come from inferring the
// subgraph; the reference kernel interprets it op by op.
#include "runtime/ir/interpret.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

// Binds the node's input types to the subgraph inputs and infers the subgraph.
Status inferSubgraph(const ir::Node& n, const In& in) {
  ir::Graph& sub = *n.subgraph;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!in[k]) return makeError(StatusCode::kInvalidModel, "Fused node input ", k, " is absent");
    ir::Tensor& t = sub.tensors[sub.inputs[k]];
    if (t.dtype != in[k]->dtype) {
      return makeError(StatusCode::kInvalidModel, "Fused subgraph input ", k, " is ", dtypeName(t.dtype),
                       ", the node feeds ", dtypeName(in[k]->dtype));
    }
    t.shape = in[k]->shape;
  }
  return ir::inferShapes(sub).withContext("in fused subgraph");
}

Status dtypeFused(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(inferSubgraph(n, in));
  out.clear();
  for (int t : n.subgraph->outputs) out.push_back(n.subgraph->tensors[t].dtype);
  return Status::Ok();
}

Status shapeFused(const ir::Node& n, const In&, std::vector<Shape>& out) {
  out.clear();
  for (int t : n.subgraph->outputs) out.push_back(n.subgraph->tensors[t].shape);
  return Status::Ok();
}

Status fusedKernel(const KernelContext& c) { return ir::interpretGraph(*c.node.subgraph, c.inputs, c.outputs); }

}  // namespace

void registerFusedOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Fused")) t.push_back({"Fused", OpClass::kOpaque, 0, kVariadic, 1, 1024, AttrKind::kNone, dtypeFused, shapeFused, fusedKernel,
               "a subgraph of basic ops run as one kernel"});
}

}  // namespace gkrt::ops
