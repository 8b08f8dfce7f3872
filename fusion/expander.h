// Expanders: one small function per composite op, rewriting it into basic ops.
//
//   // SiLU(x) = x * Sigmoid(x) = x / (1 + exp(-x))
//   ExpandResult expandSiLU(Emitter& e) {
//     int x = e.in(0);
//     return e.outputs({e.div(x, e.add(e.scalar(1, x), e.exp(e.neg(x))))});
//   }
//
// An expander declines (returns no outputs) when the node is outside what it handles;
// the op then stays as it is. Outputs keep the original node's dtypes and shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

using ExpandResult = std::optional<std::vector<int>>;  // nullopt: declined

class Emitter {
 public:
  Emitter(ir::Graph& g, const ir::Node& node) : g_(g), node_(node) {}

  const ir::Node& node() const { return node_; }
  int in(size_t k) const { return k < node_.inputs.size() ? node_.inputs[k] : -1; }
  size_t numInputs() const { return node_.inputs.size(); }
  // Copies: emitting ops grows the tensor list, so references into it would dangle.
  ir::Tensor t(int id) const { return g_.tensors[id]; }
  Shape shape(int id) const { return g_.tensors[id].shape; }
  template <class T> const T& attrs() const { return node_.attrs.get<T>(); }
  // Whether output k of the node being expanded is read by anything.
  bool outputUsed(size_t k) const;
  ExpandResult outputs(std::vector<int> ids) const;  // ids; nullopt if any failed

  // Adds a node; returns its first output (all outputs in `outs` when given).
  int op(const char* name, std::vector<int> inputs, Attrs attrs = {}, int num_outputs = 1,
         std::vector<int>* outs = nullptr);
  int scalar(float v, int like);  // 0-d constant of `like`'s dtype

  int add(int a, int b) { return op("Add", {a, b}); }
  int sub(int a, int b) { return op("Sub", {a, b}); }
  int mul(int a, int b) { return op("Mul", {a, b}); }
  int div(int a, int b) { return op("RealDiv", {a, b}); }
  int neg(int a) { return op("Neg", {a}); }
  int exp(int a) { return op("Exp", {a}); }
  int log(int a) { return op("Log", {a}); }
  int sqrt(int a) { return op("Sqrt", {a}); }
  int abs(int a) { return op("Abs", {a}); }
  int tanh(int a) { return op("Tanh", {a}); }
  int maximum(int a, int b) { return op("Maximum", {a, b}); }
  int minimum(int a, int b) { return op("Minimum", {a, b}); }
  int select(int c, int a, int b) { return op("Select", {c, a, b}); }
  int cast(int a, DType to) { return op("Cast", {a}, CastAttrs{to}); }
  int reshape(int a, const Shape& s) { return op("Reshape", {a}, ShapeAttrs{s}); }
  int reduceSum(int a, Ints axes, bool keep) { return op("ReduceSum", {a}, AxesAttrs{std::move(axes), keep}); }
  int reduceMax(int a, Ints axes, bool keep) { return op("ReduceMax", {a}, AxesAttrs{std::move(axes), keep}); }
  int sigmoid(int a);  // 1 / (1 + exp(-a)) in basic ops
  int addScalar(int a, float v) { return add(a, scalar(v, a)); }
  int mulScalar(int a, float v) { return mul(a, scalar(v, a)); }

  const Status& status() const { return status_; }
  // True when the expansion needs an op this build lacks (minimal builds): the node
  // then stays as it is.
  bool declined() const { return declined_; }
  std::vector<ir::Node>& emitted() { return nodes_; }

 private:
  ir::Graph& g_;
  const ir::Node& node_;
  std::vector<ir::Node> nodes_;
  Status status_;
  bool declined_ = false;
};

using ExpanderFn = ExpandResult (*)(Emitter& e);

bool hasExpander(const std::string& op_name);
std::vector<std::string> expanderOpNames();
ExpanderFn findExpander(const std::string& op_name);

// Replaces node `index` of `g` by its expansion. Returns false (graph untouched) when
// the expander declines or the node's shapes are not static.
StatusOr<bool> expandNode(ir::Graph& g, int index, ExpanderFn fn);

}  // namespace gkrt
