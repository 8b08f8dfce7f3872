#include "fusion/area_graph.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "runtime/ir/op_def.h"

namespace gkrt {

AreaGraph::AreaGraph(const ir::Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  parent_.resize(n);
  std::iota(parent_.begin(), parent_.end(), 0);
  members_.resize(n);
  for (int i = 0; i < n; ++i) members_[i] = {i};
  node_users_.resize(n);
  node_producers_.resize(n);
  seen_.assign(size_t(n), 0);
  const std::vector<int> producer = g.producers();
  for (int i = 0; i < n; ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t < 0 || producer[t] < 0) continue;
      node_producers_[i].push_back(producer[t]);
      node_users_[producer[t]].push_back(i);
    }
  }
}

int AreaGraph::areaOf(int node) const {
  int r = node;
  while (parent_[r] != r) r = parent_[r];
  while (parent_[node] != r) {  // path compression: later lookups take one step
    const int next = parent_[node];
    parent_[node] = r;
    node = next;
  }
  return r;
}

std::vector<int> AreaGraph::neighbours(int area, const std::vector<std::vector<int>>& edges) const {
  std::vector<int> out;
  const int a = areaOf(area);
  for (int m : members_[a]) {
    for (int other : edges[size_t(m)]) {
      const int b = areaOf(other);
      if (b != a) out.push_back(b);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> AreaGraph::consumers(int area) const { return neighbours(area, node_users_); }
std::vector<int> AreaGraph::producers(int area) const { return neighbours(area, node_producers_); }

// Depth-first over the areas downstream of `from`, marks stamped per search (a set a
// search, and a sorted consumer list a step, made a decoder's clustering quadratic
// with a large constant: 20 ms a plan).
bool AreaGraph::reachesAvoiding(int from, int to, int skip) const {
  if (++stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  std::vector<int>& stack = stack_;
  stack.clear();
  auto push_consumers = [&](int a, bool first) {
    for (int m : members_[a]) {
      for (int u : node_users_[m]) {
        const int c = areaOf(u);
        if (c == a || c == skip || seen_[size_t(c)] == stamp_) continue;
        if (c == to) {
          if (first) continue;  // the direct edge from -> to is not a path through another area
          return true;
        }
        seen_[size_t(c)] = stamp_;
        stack.push_back(c);
      }
    }
    return false;
  };
  push_consumers(areaOf(from), true);
  while (!stack.empty()) {
    const int a = stack.back();
    stack.pop_back();
    if (push_consumers(a, false)) return true;
  }
  return false;
}

bool AreaGraph::canMerge(int a, int b) const {
  a = areaOf(a);
  b = areaOf(b);
  if (a == b) return false;
  return !reachesAvoiding(a, b, a) && !reachesAvoiding(b, a, b);
}

void AreaGraph::merge(int a, int b) {
  a = areaOf(a);
  b = areaOf(b);
  if (a == b) return;
  if (a > b) std::swap(a, b);
  parent_[b] = a;
  members_[a].insert(members_[a].end(), members_[b].begin(), members_[b].end());
  std::sort(members_[a].begin(), members_[a].end());
  members_[b].clear();
}

std::vector<std::vector<int>> AreaGraph::groups(int min_size) const {
  std::vector<std::vector<int>> out;
  for (size_t a = 0; a < parent_.size(); ++a) {
    if (parent_[a] == static_cast<int>(a) && static_cast<int>(members_[a].size()) >= min_size) out.push_back(members_[a]);
  }
  return out;
}

Status outlineGroups(ir::Graph& g, const std::vector<std::vector<int>>& groups, const std::string& prefix) {
  if (groups.empty()) return Status::Ok();
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k) for (int n : groups[k]) group_of[n] = static_cast<int>(k);
  std::vector<int> producer = g.producers();
  std::vector<std::set<int>> wanted(groups.size());  // each group's tensors read outside it or by the graph
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t < 0 || producer[t] < 0) continue;
      const int k = group_of[producer[t]];
      if (k >= 0 && k != group_of[i]) wanted[size_t(k)].insert(t);
    }
  }
  for (int t : g.outputs) if (producer[t] >= 0 && group_of[producer[t]] >= 0) wanted[size_t(group_of[producer[t]])].insert(t);
  std::vector<ir::Node> fused(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    auto sub = std::make_shared<ir::Graph>();
    std::map<int, int> remap;  // main tensor -> subgraph tensor
    ir::Node& f = fused[k];
    f.name = prefix + std::to_string(k);
    f.op = findOp("Fused");
    auto bind = [&](int t) {
      auto it = remap.find(t);
      if (it != remap.end()) return it->second;
      const int id = sub->addTensor(g.tensors[t]);
      remap[t] = id;
      return id;
    };
    for (int n : groups[k]) {
      for (int t : g.nodes[n].inputs) {
        if (t < 0 || remap.count(t)) continue;
        const bool inside = producer[t] >= 0 && group_of[producer[t]] == static_cast<int>(k);
        if (inside) continue;
        const int id = bind(t);
        if (!g.tensors[t].isConstant()) {
          sub->inputs.push_back(id);
          f.inputs.push_back(t);
        }
      }
      for (int t : g.nodes[n].outputs) bind(t);
    }
    for (int n : groups[k]) {
      ir::Node copy = g.nodes[n];
      for (int& t : copy.inputs) if (t >= 0) t = remap.at(t);
      for (int& t : copy.outputs) t = remap.at(t);
      sub->nodes.push_back(std::move(copy));
    }
    // Outputs: produced inside and read by a node outside the group or by the graph.
    for (int t : wanted[k]) {
      sub->outputs.push_back(remap.at(t));
      f.outputs.push_back(t);
    }
    if (f.outputs.empty()) f.op = nullptr;  // nothing reads the group: it is dead, drop it
    for (ir::Tensor& t : sub->tensors) t.dim_symbols.clear();
    f.subgraph = sub;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) if (group_of[i] < 0) kept.push_back(std::move(g.nodes[i]));
  for (ir::Node& f : fused) if (f.op) kept.push_back(std::move(f));
  g.nodes = std::move(kept);
  return ir::validateGraph(g);
}

Status inlineFusedNodes(ir::Graph& g, std::vector<int>* label) {
  std::vector<ir::Node> out;
  label->clear();
  int next = 0;
  for (ir::Node& n : g.nodes) {
    if (!n.subgraph) {
      out.push_back(std::move(n));
      label->push_back(-1);
      continue;
    }
    const ir::Graph& sub = *n.subgraph;
    std::vector<int> remap(sub.tensors.size(), -1);
    for (size_t k = 0; k < sub.inputs.size(); ++k) remap[sub.inputs[k]] = n.inputs[k];
    for (size_t k = 0; k < sub.outputs.size(); ++k) remap[sub.outputs[k]] = n.outputs[k];
    for (size_t t = 0; t < sub.tensors.size(); ++t) {
      if (remap[t] < 0) remap[t] = g.addTensor(sub.tensors[t]);
    }
    for (const ir::Node& inner : sub.nodes) {
      ir::Node copy = inner;
      for (int& t : copy.inputs) if (t >= 0) t = remap[t];
      for (int& t : copy.outputs) t = remap[t];
      out.push_back(std::move(copy));
      label->push_back(next);
    }
    ++next;
  }
  g.nodes = std::move(out);
  // Kahn's order is stable for already-sorted input, so labels stay aligned.
  return Status::Ok();
}

}  // namespace gkrt
