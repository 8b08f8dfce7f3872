#include "runtime/ir/graph.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <sstream>

#include "runtime/ir/known_values.h"
#include "runtime/ir/op_def.h"

namespace gkrt::ir {

std::shared_ptr<const ConstData> ConstData::copyOf(const void* bytes, size_t size) {
  auto storage = std::make_shared<std::vector<uint8_t>>(std::max<size_t>(size, 1));  // never a null data pointer
  if (size) std::memcpy(storage->data(), bytes, size);
  auto c = std::make_shared<ConstData>();
  c->data = storage->data();
  c->size = size;
  c->owner = storage;
  return c;
}

int Graph::addTensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int Graph::addNode(Node n) {
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

int Graph::findTensor(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(tensors.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int t : nodes[n].outputs) {
      if (t >= 0 && t < static_cast<int>(p.size())) p[t] = static_cast<int>(n);
    }
  }
  return p;
}

size_t Graph::countNodesDeep() const {
  size_t n = 0;
  for (const Node& node : nodes) n += node.subgraph ? node.subgraph->countNodesDeep() : 1;
  return n;
}

std::string describeNode(const Graph& g, int i) {
  std::ostringstream os;
  os << "node " << i;
  if (i >= 0 && i < static_cast<int>(g.nodes.size())) {
    const Node& n = g.nodes[i];
    if (!n.name.empty()) os << " '" << n.name << "'";
    if (n.op) os << " (" << n.op->name << ")";
  }
  return os.str();
}

std::string describeTensor(const Graph& g, int i) {
  std::ostringstream os;
  os << "tensor " << i;
  if (i >= 0 && i < static_cast<int>(g.tensors.size()) && !g.tensors[i].name.empty()) {
    os << " '" << g.tensors[i].name << "'";
  }
  return os.str();
}

namespace {

Status checkIndex(const Graph& g, int t, const std::string& where) {
  if (t < 0 || t >= static_cast<int>(g.tensors.size())) {
    return makeError(StatusCode::kInvalidModel, where, " refers to tensor ", t, ", but the graph has ",
                     g.tensors.size(), " tensors");
  }
  return Status::Ok();
}

Status checkNodeShape(const Graph& g, int i) {
  const Node& n = g.nodes[i];
  // The node's description, spelled only for an error (validation runs after every
  // pattern rewrite: formatting it for every node each time was most of a plan's compile).
  auto who = [&g, i] { return describeNode(g, i); };
  if (!n.op) return makeError(StatusCode::kInvalidModel, who(), ": op is not set");
  const OpDef& op = *n.op;
  const int nin = static_cast<int>(n.inputs.size());
  if (nin < op.min_inputs || (op.max_inputs != kVariadic && nin > op.max_inputs)) {
    std::string want = op.max_inputs == kVariadic ? "at least " + std::to_string(op.min_inputs)
                       : op.min_inputs == op.max_inputs
                           ? std::to_string(op.min_inputs)
                           : std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs);
    return makeError(StatusCode::kInvalidModel, who(), ": has ", nin, " inputs, ", op.name, " takes ", want);
  }
  const int nout = static_cast<int>(n.outputs.size());
  if (nout < op.min_outputs || nout > op.max_outputs) {
    return makeError(StatusCode::kInvalidModel, who(), ": has ", nout, " outputs, ", op.name, " produces ",
                     op.min_outputs, op.min_outputs == op.max_outputs ? "" : " to " + std::to_string(op.max_outputs));
  }
  if (n.attrs.kind() != op.attr_kind) {
    return makeError(StatusCode::kInvalidModel, who(), ": attributes are of kind ", attrKindName(n.attrs.kind()),
                     ", ", op.name, " takes ", attrKindName(op.attr_kind));
  }
  for (int k = 0; k < nin; ++k) {
    const int t = n.inputs[k];
    if (t == -1 && k >= op.min_inputs) continue;  // absent optional input
    if (t < 0 || t >= static_cast<int>(g.tensors.size())) RETURN_IF_ERROR(checkIndex(g, t, who() + " input " + std::to_string(k)));
  }
  for (int k = 0; k < nout; ++k) {
    const int t = n.outputs[k];
    if (t < 0 || t >= static_cast<int>(g.tensors.size())) RETURN_IF_ERROR(checkIndex(g, t, who() + " output " + std::to_string(k)));
  }
  const bool fused = std::string(op.name) == "Fused";
  if (fused != (n.subgraph != nullptr)) {
    return makeError(StatusCode::kInvalidModel, who(), fused ? ": fused node has no subgraph" : ": only Fused nodes carry a subgraph");
  }
  if (fused) {
    Graph& sub = *n.subgraph;
    if (sub.inputs.size() != n.inputs.size() || sub.outputs.size() != n.outputs.size()) {
      return makeError(StatusCode::kInvalidModel, who(), ": subgraph has ", sub.inputs.size(), " inputs and ",
                       sub.outputs.size(), " outputs, the node ", n.inputs.size(), " and ", n.outputs.size());
    }
    Status sub_ok = validateGraph(sub);
    if (!sub_ok.ok()) return sub_ok.withContext(who() + " subgraph");
  }
  RETURN_IF_ERROR(validateControlFlowSubgraphs(g, i));
  return Status::Ok();
}

}  // namespace

// Kahn's algorithm over `producer` (each tensor's node or -1), keeping the nodes' order
// where it can; leftover nodes lie on a cycle.
static Status sortTopologically(Graph& g, const std::vector<int>& producer) {
  const int nn = static_cast<int>(g.nodes.size());
  std::vector<int> pending(nn, 0);
  std::vector<std::vector<int>> users(nn);
  for (int i = 0; i < nn; ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t >= 0 && producer[t] >= 0) {
        ++pending[i];
        users[producer[t]].push_back(i);
      }
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // keeps file order when possible
  for (int i = 0; i < nn; ++i) if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i]) if (--pending[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != nn) {
    for (int i = 0; i < nn; ++i) {
      if (pending[i] > 0) {
        return makeError(StatusCode::kInvalidModel, "the graph has a cycle through ", describeNode(g, i));
      }
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(nn);
  for (int i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  return Status::Ok();
}

Status validateGraph(Graph& g) {
  const int nt = static_cast<int>(g.tensors.size());
  std::vector<int> producer(nt, -1);
  std::vector<char> is_input(nt, 0);
  for (int t : g.inputs) {
    RETURN_IF_ERROR(checkIndex(g, t, "graph input"));
    if (is_input[t]) return makeError(StatusCode::kInvalidModel, describeTensor(g, t), " is listed twice as a graph input");
    if (g.tensors[t].isConstant()) {
      return makeError(StatusCode::kInvalidModel, describeTensor(g, t), " is a graph input and also a constant");
    }
    is_input[t] = 1;
  }
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    RETURN_IF_ERROR(checkNodeShape(g, i));
    for (int t : g.nodes[i].outputs) {
      if (producer[t] >= 0) {
        return makeError(StatusCode::kInvalidModel, describeTensor(g, t), " is produced by both ",
                         describeNode(g, producer[t]), " and ", describeNode(g, i));
      }
      if (is_input[t] || g.tensors[t].isConstant()) {
        return makeError(StatusCode::kInvalidModel, describeNode(g, i), " writes ", describeTensor(g, t),
                         ", which is a graph input or constant");
      }
      producer[t] = i;
    }
  }
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t >= 0 && producer[t] < 0 && !is_input[t] && !g.tensors[t].isConstant()) {
        return makeError(StatusCode::kInvalidModel, describeNode(g, i), " reads ", describeTensor(g, t),
                         ", which no node produces and which is neither a graph input nor a constant");
      }
    }
  }
  if (g.outputs.empty()) return makeError(StatusCode::kInvalidModel, "the graph has no outputs");
  for (int t : g.outputs) {
    RETURN_IF_ERROR(checkIndex(g, t, "graph output"));
    if (producer[t] < 0 && !is_input[t] && !g.tensors[t].isConstant()) {
      return makeError(StatusCode::kInvalidModel, "graph output ", describeTensor(g, t), " is never produced");
    }
  }
  return sortTopologically(g, producer);
}

Status restoreTopologicalOrder(Graph& g) {
  const std::vector<int> producer = g.producers();
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t >= 0 && producer[t] >= i) return sortTopologically(g, producer);
    }
  }
  return Status::Ok();
}

Status inferNodeOutputs(const Graph& g, const Node& n, std::vector<DType>* dtypes, std::vector<Shape>* shapes,
                        std::vector<std::shared_ptr<const ConstData>>* values) {
  if (values) values->assign(n.outputs.size(), nullptr);
  std::vector<TensorType> types(n.inputs.size());
  std::vector<const TensorType*> in(n.inputs.size(), nullptr);
  bool all_static = true;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] < 0) continue;
    const Tensor& t = g.tensors[n.inputs[k]];
    types[k] = {t.dtype, t.shape, t.knownData()};
    in[k] = &types[k];
    all_static = all_static && isStatic(t.shape);
    if (isStatic(t.shape)) {  // a shape from the file: the rules may multiply its dims
      auto count = checkedNumElements(t.shape);
      if (!count.ok()) return count.status().withContext("input " + std::to_string(k) + " '" + t.name + "'");
    }
  }
  dtypes->clear();
  shapes->clear();
  RETURN_IF_ERROR(n.op->dtype_rule(n, in, *dtypes));
  if (dtypes->size() < n.outputs.size()) {
    return makeError(StatusCode::kInternal, n.op->name, " dtype rule gave ", dtypes->size(), " outputs");
  }
  if (!all_static) return Status::Ok();
  RETURN_IF_ERROR(n.op->shape_rule(n, in, *shapes));
  if (shapes->size() < n.outputs.size()) {
    return makeError(StatusCode::kInternal, n.op->name, " shape rule gave ", shapes->size(), " outputs");
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    auto count = checkedNumElements((*shapes)[k]);
    if (!count.ok()) return count.status().withContext("output " + std::to_string(k));
  }
  if (values) RETURN_IF_ERROR(computeKnownValues(g, n, *dtypes, *shapes, values));
  return Status::Ok();
}

Status inferShapes(Graph& g) {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<std::shared_ptr<const ConstData>> values;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    RETURN_IF_ERROR(inferNodeOutputs(g, n, &dtypes, &shapes, &values).withContext(describeNode(g, i)));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      g.tensors[n.outputs[k]].dtype = dtypes[k];
      if (!shapes.empty()) g.tensors[n.outputs[k]].shape = shapes[k];
      g.tensors[n.outputs[k]].value = values[k];
    }
  }
  return Status::Ok();
}

}  // namespace gkrt::ir

namespace gkrt::ir {
void compactGraph(Graph& g) {
  for (bool again = true; again;) {  // dead nodes first
    again = false;
    std::vector<char> read(g.tensors.size(), 0);
    for (const Node& n : g.nodes) for (int t : n.inputs) if (t >= 0) read[t] = 1;
    for (int t : g.outputs) read[t] = 1;
    for (size_t i = g.nodes.size(); i-- > 0;) {
      bool live = false;
      for (int t : g.nodes[i].outputs) live = live || read[t];
      if (!live) { g.nodes.erase(g.nodes.begin() + i); again = true; }
    }
  }
  std::vector<int> remap(g.tensors.size(), -1);
  auto keep = [&](int t) { if (t >= 0) remap[t] = 0; };
  for (const Node& n : g.nodes) { for (int t : n.inputs) keep(t); for (int t : n.outputs) keep(t); }
  for (int t : g.inputs) keep(t);
  for (int t : g.outputs) keep(t);
  std::vector<Tensor> kept;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (remap[t] < 0) continue;
    remap[t] = static_cast<int>(kept.size());
    kept.push_back(std::move(g.tensors[t]));
  }
  g.tensors = std::move(kept);
  for (Node& n : g.nodes) { for (int& t : n.inputs) if (t >= 0) t = remap[t]; for (int& t : n.outputs) t = remap[t]; }
  for (int& t : g.inputs) t = remap[t];
  for (int& t : g.outputs) t = remap[t];
}

Graph cloneGraph(const Graph& g) {
  Graph c = g;
  for (Node& n : c.nodes) {
    if (n.subgraph) n.subgraph = std::make_shared<Graph>(cloneGraph(*n.subgraph));
    for (auto& sub : n.subgraphs) sub = std::make_shared<Graph>(cloneGraph(*sub));
  }
  return c;
}
}  // namespace gkrt::ir
