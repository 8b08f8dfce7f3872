// The gkrt IR: a graph of nodes over tensors, indexed by position.
//
//   ir::Graph g;
//   int x = g.addTensor({"x", DType::kFloat32, {4, 4}});
//   ...
//   RETURN_IF_ERROR(ir::validateGraph(g));   // structure: ops, arity, attrs, acyclic
//   RETURN_IF_ERROR(ir::inferShapes(g));     // shapes and dtypes from graph inputs
//
// Nodes are kept in a topological order once validated. A fused node owns a subgraph
// whose inputs/outputs correspond position by position to the node's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ir/attrs.h"
#include "runtime/ir/dtype.h"
#include "runtime/ir/shape.h"
#include "runtime/ir/status.h"

namespace gkrt {
struct OpDef;

namespace ir {

// Immutable bytes of a constant, kept alive by `owner` (a mapped file, a vector, ...).
struct ConstData {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
  bool huge_pages = false;  // the bytes lie in transparent huge pages (runtime/base/huge_page_arena.h)
  static std::shared_ptr<const ConstData> copyOf(const void* bytes, size_t size);
};

struct Tensor {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;                            // kUnknownDim where not yet known
  std::vector<std::string> dim_symbols;   // empty, or one name per dim ("" = none)
  std::shared_ptr<const ConstData> constant;  // set for constants (weights)
  // Not a constant, but a value known at compile time for the current input shapes
  // (shape arithmetic: Shape, Gather, Concat, ... of small tensors); never saved.
  std::shared_ptr<const ConstData> value;
  bool isConstant() const { return constant != nullptr; }
  // The constant's bytes, else the known value's, else null.
  const ConstData* knownData() const { return constant ? constant.get() : value.get(); }
};

class Graph;

struct Node {
  std::string name;
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<int> inputs;   // tensor ids; -1 marks an absent optional input
  std::vector<int> outputs;  // tensor ids
  std::shared_ptr<Graph> subgraph;  // only for fused nodes
  // Control flow only (If: then, else; Loop, Scan: body). Bound to the node by
  // position (see runtime/ir/ops/control_flow.cc); outer values come in as inputs.
  std::vector<std::shared_ptr<Graph>> subgraphs;
};

class Graph {
 public:
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<std::string, std::string> metadata;  // "producer", "description", ...

  int addTensor(Tensor t);
  int addNode(Node n);
  int findTensor(const std::string& name) const;  // -1 when absent
  // For each tensor, the index of the node producing it, or -1.
  std::vector<int> producers() const;
  // Number of nodes, counting fused subgraphs' nodes recursively.
  size_t countNodesDeep() const;
};

// Structural checks: every op known, arity and attribute kinds match, tensor indices
// in range, each tensor produced at most once, outputs produced, no cycles. Reorders
// `nodes` topologically. Messages name the node/tensor and the problem.
Status validateGraph(Graph& g);
// Only the reordering: nodes sorted topologically where a reader comes before its
// producer (an error on a cycle), without validateGraph's checks (for passes rewriting
// a graph many times; the pipeline validates once at its end).
Status restoreTopologicalOrder(Graph& g);

// Infers every tensor's dtype and shape from the graph inputs and constants, and the
// known values of small computable tensors (Tensor::value). Nodes whose inputs are not
// all static are left as declared.
Status inferShapes(Graph& g);

// Output dtypes of node `n` (a node of `g` or one about to be added), and its output
// shapes when every input shape is static (`shapes` left empty otherwise). With
// `values`, also the outputs' values where they are small and computable now (every
// input constant or known, or an op reading only input shapes such as Shape).
Status inferNodeOutputs(const Graph& g, const Node& n, std::vector<DType>* dtypes, std::vector<Shape>* shapes,
                        std::vector<std::shared_ptr<const ConstData>>* values = nullptr);

// Text form of a node's identity for messages: "node 3 'mul_1' (Mul)".
std::string describeNode(const Graph& g, int node_index);
std::string describeTensor(const Graph& g, int tensor_index);

}  // namespace ir
}  // namespace gkrt

namespace gkrt::ir {
// A copy that owns fresh copies of every Fused and control-flow subgraph (constants
// stay shared).
Graph cloneGraph(const Graph& g);
// Drops nodes nothing reads and tensors nothing references, renumbering the rest.
void compactGraph(Graph& g);
}  // namespace gkrt::ir
