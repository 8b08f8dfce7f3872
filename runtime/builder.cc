#include "runtime/builder.h"

#include <algorithm>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {

GraphBuilder::GraphBuilder() { graph_.metadata["producer"] = "gkrt GraphBuilder"; }

bool GraphBuilder::fail(Status s) {
  if (status_.ok()) status_ = std::move(s);
  return false;
}

std::string GraphBuilder::uniqueName(const std::string& base) { return base + "_" + std::to_string(counter_++); }

Value GraphBuilder::input(const std::string& name, DType dtype, const Shape& shape, std::vector<std::string> symbols) {
  ir::Tensor t{name, dtype, shape, std::move(symbols), nullptr};
  const int id = graph_.addTensor(std::move(t));
  graph_.inputs.push_back(id);
  return {id};
}

Value GraphBuilder::constant(const std::string& name, DType dtype, const Shape& shape, const void* bytes) {
  auto count = checkedNumElements(shape);
  if (!count.ok()) return fail(count.status().withContext("constant '" + name + "'")), Value{};
  ir::Tensor t{name.empty() ? uniqueName("const") : name, dtype, shape, {}, nullptr};
  t.constant = ir::ConstData::copyOf(bytes, static_cast<size_t>(*count) * dtypeSize(dtype));
  return {graph_.addTensor(std::move(t))};
}

Value GraphBuilder::constant(const std::string& name, DType dtype, const Shape& shape, std::shared_ptr<const ir::ConstData> data) {
  auto count = checkedNumElements(shape);
  if (!count.ok()) return fail(count.status().withContext("constant '" + name + "'")), Value{};
  if (!data || data->size != static_cast<size_t>(*count) * dtypeSize(dtype)) {
    fail(makeError(StatusCode::kInvalidArgument, "constant '", name, "' of shape ", shapeToString(shape), " given ",
                   data ? data->size : 0, " bytes"));
    return {};
  }
  ir::Tensor t{name.empty() ? uniqueName("const") : name, dtype, shape, {}, nullptr};
  t.constant = std::move(data);
  return {graph_.addTensor(std::move(t))};
}

Value GraphBuilder::constant(const Shape& shape, const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != numElements(shape)) {
    fail(makeError(StatusCode::kInvalidArgument, "constant of shape ", shapeToString(shape), " given ", values.size(),
                   " values"));
    return {};
  }
  return constant("", DType::kFloat32, shape, values.data());
}

Value GraphBuilder::scalar(float v, Value like) {
  if (like.id < 0) return {};
  const DType dt = graph_.tensors[like.id].dtype;
  std::vector<uint8_t> bytes(dtypeSize(dt));
  ops::storeF(bytes.data(), dt, 0, v);
  return constant("", dt, {}, bytes.data());
}

std::vector<Value> GraphBuilder::op(const std::string& op_name, const std::vector<Value>& inputs, Attrs attrs,
                                    int num_outputs, const std::string& node_name,
                                    std::vector<std::shared_ptr<ir::Graph>> subgraphs) {
  const OpDef* def = findOp(op_name);
  if (!def) {
    fail(makeError(StatusCode::kInvalidArgument, "unknown op '", op_name, "' (did you mean '", closestOpName(op_name), "'?)"));
    return std::vector<Value>(std::max(num_outputs, 1));
  }
  const int nout = num_outputs > 0 ? num_outputs : def->min_outputs;
  std::vector<Value> outs(nout);
  if (!status_.ok()) return outs;
  ir::Node n;
  n.name = node_name.empty() ? uniqueName(def->name) : node_name;
  n.op = def;
  n.attrs = std::move(attrs);
  n.subgraphs = std::move(subgraphs);
  for (Value v : inputs) n.inputs.push_back(v.id);
  for (int k = 0; k < nout; ++k) {
    outs[k].id = graph_.addTensor({n.name + (nout > 1 ? ":" + std::to_string(k) : ""), DType::kFloat32, {}, {}, nullptr});
    n.outputs.push_back(outs[k].id);
  }
  graph_.addNode(std::move(n));
  // Check this node now so the error points at the call that caused it.
  const ir::Node& added = graph_.nodes.back();
  for (size_t k = 0; k < added.inputs.size(); ++k) {
    const int t = added.inputs[k];
    if (t == -1 && static_cast<int>(k) >= def->min_inputs) continue;
    if (t < 0 || t >= static_cast<int>(graph_.tensors.size())) {
      fail(makeError(StatusCode::kInvalidArgument, added.name, " input ", k, " is not a built value"));
      return outs;
    }
  }
  // Structural checks on this node alone, in a graph of only the tensors it names (a
  // copy of every tensor a node would make building a graph quadratic).
  ir::Graph probe;
  std::vector<std::pair<int, int>> taken;  // (graph tensor, probe tensor)
  auto take = [&](int t) {
    if (t < 0) return t;
    for (const auto& [from, to] : taken) if (from == t) return to;
    probe.tensors.push_back(graph_.tensors[size_t(t)]);
    taken.push_back({t, int(probe.tensors.size()) - 1});
    return taken.back().second;
  };
  ir::Node local = added;
  for (int& t : local.inputs) t = take(t);
  for (int& t : local.outputs) t = take(t);
  for (int t : local.inputs) {
    const bool listed = std::find(probe.inputs.begin(), probe.inputs.end(), t) != probe.inputs.end();
    if (t >= 0 && !probe.tensors[size_t(t)].isConstant() && !listed) probe.inputs.push_back(t);
  }
  probe.outputs = local.outputs;
  probe.nodes = {std::move(local)};
  Status s = ir::validateGraph(probe);
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<std::shared_ptr<const ir::ConstData>> values;
  if (s.ok()) s = ir::inferNodeOutputs(graph_, added, &dtypes, &shapes, &values);
  if (!s.ok()) {
    fail(s.withContext(added.name));
    return outs;
  }
  for (size_t k = 0; k < added.outputs.size(); ++k) {
    graph_.tensors[added.outputs[k]].dtype = dtypes[k];
    if (!shapes.empty()) graph_.tensors[added.outputs[k]].shape = shapes[k];
    graph_.tensors[added.outputs[k]].value = values[k];
  }
  return outs;
}

Value GraphBuilder::op1(const std::string& op_name, const std::vector<Value>& inputs, Attrs attrs) {
  return op(op_name, inputs, std::move(attrs), 1)[0];
}

Value GraphBuilder::matmul(Value a, Value b, bool transpose_b) {
  const bool batched = a.id >= 0 && graph_.tensors[a.id].shape.size() > 2;
  MatMulAttrs attrs;
  attrs.transpose_b = transpose_b;
  return op1(batched ? "BatchMatMul" : "MatMul", {a, b}, attrs);
}

void GraphBuilder::output(Value v, const std::string& name) {
  if (v.id < 0) {
    fail(Status(StatusCode::kInvalidArgument, "output of a value that failed to build"));
    return;
  }
  if (!name.empty()) graph_.tensors[v.id].name = name;
  graph_.outputs.push_back(v.id);
}

StatusOr<ir::Graph> GraphBuilder::finish() {
  if (!status_.ok()) return status_;
  ir::Graph g = graph_;
  RETURN_IF_ERROR(ir::validateGraph(g));
  RETURN_IF_ERROR(ir::inferShapes(g));
  return g;
}

}  // namespace gkrt
