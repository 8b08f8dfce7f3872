// Test harness: several independent graphs as one (their disjoint union), so a device
// backend compiles one program for many small test cases (PoCL builds a program in about
// 0.4 s plus 0.2 s a kernel; twenty cases in one program cost a third of twenty programs).
// Fusion never joins the parts (no tensor is shared), so each part's kernels are the
// ones it gets alone.
//
//   GraphUnion u;
//   for (...) u.add(graph_k);            // part k: tensors and node names prefixed "p<k>/"
//   ir::Graph g = u.graph();             // inputs and outputs part by part, in order
//   u.inputOf(k, j), u.outputOf(k, j)    // positions in g.inputs / g.outputs
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::testing {

class GraphUnion {
 public:
  void add(const ir::Graph& part) {
    const int base = static_cast<int>(g_.tensors.size());
    const std::string prefix = "p" + std::to_string(parts_) + "/";
    for (ir::Tensor t : part.tensors) {
      t.name = prefix + t.name;
      g_.tensors.push_back(std::move(t));
    }
    for (ir::Node n : part.nodes) {
      n.name = prefix + n.name;
      for (int& t : n.inputs) if (t >= 0) t += base;
      for (int& t : n.outputs) t += base;
      g_.nodes.push_back(std::move(n));  // subgraphs keep their own tensors: shared as they are
    }
    first_input_.push_back(static_cast<int>(g_.inputs.size()));
    first_output_.push_back(static_cast<int>(g_.outputs.size()));
    for (int t : part.inputs) g_.inputs.push_back(t + base);
    for (int t : part.outputs) g_.outputs.push_back(t + base);
    ++parts_;
  }
  const ir::Graph& graph() const { return g_; }
  int parts() const { return parts_; }
  int inputOf(int part, int j) const { return first_input_[part] + j; }
  int outputOf(int part, int j) const { return first_output_[part] + j; }

 private:
  ir::Graph g_;
  int parts_ = 0;
  std::vector<int> first_input_, first_output_;
};

}  // namespace gkrt::testing
