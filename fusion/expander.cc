#include "fusion/expander.h"

#include <map>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {

namespace expanders {
void registerMathExpanders(std::map<std::string, ExpanderFn>& m);
void registerNNExpanders(std::map<std::string, ExpanderFn>& m);
void registerArrayExpanders(std::map<std::string, ExpanderFn>& m);
void registerTrainingExpanders(std::map<std::string, ExpanderFn>& m);
}  // namespace expanders

namespace {

const std::map<std::string, ExpanderFn>& registry() {
  static const std::map<std::string, ExpanderFn> m = [] {
    std::map<std::string, ExpanderFn> r;
    expanders::registerMathExpanders(r);
    expanders::registerNNExpanders(r);
    expanders::registerArrayExpanders(r);
    expanders::registerTrainingExpanders(r);
    r["SoftplusExt"] = r.at("Softplus");
    r["SoftplusGradExt"] = r.at("SoftplusGrad");
    r["MeanExt"] = r.at("ReduceMean");
    return r;
  }();
  return m;
}

}  // namespace

bool hasExpander(const std::string& op_name) { return findExpander(op_name) != nullptr; }

ExpanderFn findExpander(const std::string& op_name) {
  const OpDef* def = findOp(op_name);
  if (!def) return nullptr;
  auto it = registry().find(def->name);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<std::string> expanderOpNames() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : registry()) names.push_back(name);
  return names;
}

int Emitter::op(const char* name, std::vector<int> inputs, Attrs attrs, int num_outputs, std::vector<int>* outs) {
  if (!status_.ok()) return -1;
  for (int i : inputs) {
    if (i < -1) { status_ = makeError(StatusCode::kInternal, "expander of ", node_.op->name, " used a failed value"); return -1; }
  }
  ir::Node n;
  n.name = node_.name + "/" + name + "_" + std::to_string(nodes_.size());
  n.op = findOp(name);
  if (!n.op || declined_) {
    declined_ = true;
    return -1;
  }
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  const int nout = num_outputs > 0 ? num_outputs : n.op->min_outputs;
  for (int k = 0; k < nout; ++k) n.outputs.push_back(g_.addTensor({n.name + (nout > 1 ? ":" + std::to_string(k) : ""), DType::kFloat32, {}, {}, nullptr}));
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  Status s = ir::inferNodeOutputs(g_, n, &dtypes, &shapes);
  if (!s.ok()) {
    status_ = s.withContext(std::string("expanding ") + node_.op->name + " '" + node_.name + "'");
    return -1;
  }
  for (int k = 0; k < nout; ++k) {
    g_.tensors[n.outputs[k]].dtype = dtypes[k];
    if (!shapes.empty()) g_.tensors[n.outputs[k]].shape = shapes[k];
  }
  if (outs) *outs = n.outputs;
  const int first = n.outputs[0];
  nodes_.push_back(std::move(n));
  return first;
}

int Emitter::scalar(float v, int like) {
  if (like < 0) return -1;
  const DType dt = g_.tensors[like].dtype;
  std::vector<uint8_t> bytes(dtypeSize(dt));
  ops::storeF(bytes.data(), dt, 0, v);
  ir::Tensor c{node_.name + "/const_" + std::to_string(g_.tensors.size()), dt, {}, {}, nullptr};
  c.constant = ir::ConstData::copyOf(bytes.data(), bytes.size());
  return g_.addTensor(std::move(c));
}

bool Emitter::outputUsed(size_t k) const {
  const int t = node_.outputs[k];
  for (const ir::Node& n : g_.nodes) for (int i : n.inputs) if (i == t) return true;
  for (int o : g_.outputs) if (o == t) return true;
  return false;
}

ExpandResult Emitter::outputs(std::vector<int> ids) const {
  if (declined_) return std::nullopt;
  for (int id : ids) if (id < 0) return std::nullopt;
  return ids;
}

int Emitter::sigmoid(int a) { return div(scalar(1, a), addScalar(exp(neg(a)), 1)); }

StatusOr<bool> expandNode(ir::Graph& g, int index, ExpanderFn fn) {
  const ir::Node original = g.nodes[index];
  for (int t : original.inputs) if (t >= 0 && !isStatic(g.tensors[t].shape)) return false;
  const size_t tensors_before = g.tensors.size();
  Emitter e(g, original);
  ExpandResult result = fn(e);
  if (e.declined()) {
    g.tensors.resize(tensors_before);
    return false;
  }
  if (!e.status().ok() || !result || result->size() != original.outputs.size()) {
    g.tensors.resize(tensors_before);  // drop what a declined expansion made
    if (!e.status().ok()) return e.status();
    if (result && result->size() != original.outputs.size()) {
      return makeError(StatusCode::kInternal, "expander of ", original.op->name, " gave ", result->size(),
                       " outputs, the op has ", original.outputs.size());
    }
    return false;
  }
  std::vector<ir::Node>& nodes = e.emitted();
  // Route each expansion output into the original output tensor.
  for (size_t k = 0; k < original.outputs.size(); ++k) {
    const int want = original.outputs[k], have = (*result)[k];
    const ir::Tensor& wt = g.tensors[want];
    if (g.tensors[have].dtype != wt.dtype || g.tensors[have].shape != wt.shape) {
      g.tensors.resize(tensors_before);
      return makeError(StatusCode::kInternal, "expander of ", original.op->name, " output ", k, " is ",
                       dtypeName(g.tensors[have].dtype), " ", shapeToString(g.tensors[have].shape), ", the op's is ",
                       dtypeName(wt.dtype), " ", shapeToString(wt.shape));
    }
    ir::Node* producer = nullptr;
    for (ir::Node& n : nodes) for (int& o : n.outputs) if (o == have) producer = &n;
    bool shared = false;
    for (size_t j = 0; j < k; ++j) shared = shared || (*result)[j] == have;
    if (!producer || shared) {  // an input or constant passed through: copy it
      ir::Node copy;
      copy.name = original.name + "/copy_" + std::to_string(k);
      copy.op = findOp("Reshape");  // always in minimal builds (`gkrt convert --emit-op-list`)
      copy.attrs = ShapeAttrs{wt.shape};
      copy.inputs = {have};
      copy.outputs = {want};
      nodes.push_back(std::move(copy));
      continue;
    }
    for (int& o : producer->outputs) if (o == have) o = want;
    for (ir::Node& n : nodes) for (int& i : n.inputs) if (i == have) i = want;
  }
  g.nodes.erase(g.nodes.begin() + index);
  g.nodes.insert(g.nodes.begin() + index, nodes.begin(), nodes.end());
  return true;
}

}  // namespace gkrt
