// Areas: groups of a graph's nodes being merged into fused kernels. Starts with one
// area per node; merge(a, b) joins two areas unless that would create a cycle
// (a path from one to the other through a third area).
#pragma once

#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

class AreaGraph {
 public:
  explicit AreaGraph(const ir::Graph& g);

  int areaOf(int node) const;
  int size(int area) const { return static_cast<int>(members_[areaOf(area)].size()); }
  const std::vector<int>& members(int area) const { return members_[areaOf(area)]; }
  // Areas reading an output of `area` / producing an input of `area`.
  std::vector<int> consumers(int area) const;
  std::vector<int> producers(int area) const;
  // True when a and b are distinct and joining them keeps the area graph acyclic.
  bool canMerge(int a, int b) const;
  void merge(int a, int b);
  // Node lists of every area with at least `min_size` nodes, each in topological order.
  std::vector<std::vector<int>> groups(int min_size) const;

 private:
  bool reachesAvoiding(int from, int to, int skip) const;  // path from -> ... -> to via other areas
  // The other areas at the ends of `edges` (node_users_ or node_producers_) from area's nodes.
  std::vector<int> neighbours(int area, const std::vector<std::vector<int>>& edges) const;

  mutable std::vector<int> parent_;  // union-find, compressed as it is read
  std::vector<std::vector<int>> members_;
  std::vector<std::vector<int>> node_users_, node_producers_;
  mutable std::vector<int> seen_, stack_;  // reachesAvoiding's marks (by stamp) and stack
  mutable int stamp_ = 0;
};

// Replaces each group (node indices of `g`, 2+ nodes) by one Fused node whose
// subgraph holds the group's nodes; constants move inside; outputs are the group's
// tensors read elsewhere. Re-sorts the graph.
Status outlineGroups(ir::Graph& g, const std::vector<std::vector<int>>& groups, const std::string& name_prefix);

// Replaces every Fused node by its subgraph's nodes. `label` gets, per node of the
// result, the index of the Fused node it came from among them (in order), or -1.
Status inlineFusedNodes(ir::Graph& g, std::vector<int>* label);

}  // namespace gkrt
