// Dead-node elimination, constant folding and common-subexpression elimination.
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "fusion/pass_manager.h"
#include "fusion/passes/passes.h"
#include "runtime/base/huge_page_arena.h"
#include "runtime/ir/interpret.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {
namespace {

bool isRandom(const OpDef* op) {
  const std::string n = op->name;
  return n == "Dropout" || n == "StandardNormal" || n == "UniformReal";
}

// Folded constants stay small, unless the op makes no more values than its largest input
// has (a dequantization of weights, a transpose): that cannot blow up memory.
constexpr int64_t kMaxFoldElements = 1 << 20;
constexpr size_t kMappedFoldBytes = size_t(256) << 10;  // results this big get a mapping of their own
constexpr size_t kReleaseBytes = size_t(64) << 10;   // unread folded-away constants at least this big are freed
constexpr size_t kMaxSharedConstantBytes = 256;  // constants CSE treats as equal by value

// Small constants read by nodes, each replaced by the first one of the same type, shape
// and bytes: exporters write a fresh scalar for every use (each decoder layer's
// `position + 1`, its own copy of the same 1), which would keep CSE from seeing that the
// layers compute the same thing.
bool shareEqualConstants(ir::Graph& g) {
  std::map<std::tuple<DType, Shape, std::string>, int> first;
  std::map<int, int> same;
  bool changed = false;
  for (ir::Node& n : g.nodes) {
    for (int& t : n.inputs) {
      if (t < 0) continue;
      const ir::Tensor& c = g.tensors[size_t(t)];
      if (!c.isConstant()) continue;
      const size_t bytes = size_t(numElements(c.shape)) * dtypeSize(c.dtype);
      if (bytes > kMaxSharedConstantBytes) continue;
      auto known = same.find(t);
      if (known == same.end()) {
        const std::string value(reinterpret_cast<const char*>(c.constant->data), bytes);
        known = same.emplace(t, first.emplace(std::make_tuple(c.dtype, c.shape, value), t).first->second).first;
      }
      if (known->second != t) {
        t = known->second;
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace

void replaceUses(ir::Graph& g, int from, int to) {
  for (ir::Node& n : g.nodes) for (int& t : n.inputs) if (t == from) t = to;
  for (int& t : g.outputs) if (t == from) t = to;
}

bool isGraphOutput(const ir::Graph& g, int t) {
  for (int o : g.outputs) if (o == t) return true;
  return false;
}

int producerOf(const ir::Graph& g, int t) {
  for (size_t i = 0; i < g.nodes.size(); ++i) for (int o : g.nodes[i].outputs) if (o == t) return static_cast<int>(i);
  return -1;
}

int readers(const ir::Graph& g, int t) {
  int r = isGraphOutput(g, t) ? 1 : 0;
  for (const ir::Node& n : g.nodes) for (int x : n.inputs) r += x == t;
  return r;
}

PassResult eliminateDeadNodes(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    std::vector<char> read(g.tensors.size(), 0);
    for (const ir::Node& n : g.nodes) for (int t : n.inputs) if (t >= 0) read[t] = 1;
    for (int t : g.outputs) read[t] = 1;
    for (size_t i = g.nodes.size(); i-- > 0;) {
      bool live = false;
      for (int t : g.nodes[i].outputs) live = live || read[t];
      if (!live) {
        g.nodes.erase(g.nodes.begin() + i);
        again = changed = true;
      }
    }
    if (!again) {  // constants nothing reads any more (a merged or repacked weight's parts): their bytes go
      for (size_t t = 0; t < g.tensors.size(); ++t) {
        if (!read[t] && g.tensors[t].constant && g.tensors[t].constant->size >= kReleaseBytes) g.tensors[t].constant.reset();
      }
    }
  }
  return changed;
}

PassResult foldConstants(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  bool changed = false;
  // int8 weights inference_qbmm_add_fusion will take stay quantised.
  const std::set<int> keep = passWillRun("inference_qbmm_add_fusion", ctx.options, ctx.column) ? qbmmAddTensors(g)
                                                                                              : std::set<int>{};
  // Readers of each tensor: a constant whose last reader folds is let go (a dequantized
  // weight's int8 source and its float32 Cast would otherwise stay with the graph).
  std::vector<int> readers(g.tensors.size(), 0);
  for (const ir::Node& n : g.nodes) for (int t : n.inputs) if (t >= 0) ++readers[size_t(t)];
  for (int t : g.outputs) ++readers[size_t(t)];
  for (size_t i = 0; i < g.nodes.size();) {
    const ir::Node& n = g.nodes[i];
    bool foldable = !n.inputs.empty() && !isRandom(n.op) && !n.subgraph && !keep.count(n.outputs[0]);
    int64_t largest_input = 0;
    for (int t : n.inputs) {
      foldable = foldable && t >= 0 && g.tensors[t].isConstant();
      if (foldable) largest_input = std::max(largest_input, numElements(g.tensors[t].shape));
    }
    for (int t : n.outputs) {
      const int64_t e = isStatic(g.tensors[t].shape) ? numElements(g.tensors[t].shape) : -1;
      foldable = foldable && e >= 0 && (e <= kMaxFoldElements || e <= largest_input);
    }
    if (!foldable) { ++i; continue; }
    std::vector<TensorView> in;
    for (int t : n.inputs) in.push_back({g.tensors[t].dtype, g.tensors[t].shape, g.tensors[t].constant->data});
    // Each result computed straight into the constant that keeps it (no zeroing, no copy:
    // a folded dequantization of a model's weights is tens of MB).
    std::vector<std::shared_ptr<ir::ConstData>> results;
    std::vector<MutableTensorView> out;
    for (int t : n.outputs) {
      const size_t bytes = size_t(numElements(g.tensors[t].shape)) * dtypeSize(g.tensors[t].dtype);
      auto c = std::make_shared<ir::ConstData>();
      uint8_t* raw = nullptr;
      if (bytes >= kMappedFoldBytes) {  // its own mapping: gone from the process when released
        std::shared_ptr<uint8_t> m = mapPrivateBytes(bytes);
        raw = m.get();
        c->owner = std::move(m);
      }
      if (!raw) {
        raw = new uint8_t[std::max<size_t>(1, bytes)];
        c->owner = std::shared_ptr<const void>(raw, [](const void* p) { delete[] static_cast<const uint8_t*>(p); });
      }
      c->data = raw;
      c->size = bytes;
      results.push_back(c);
      out.push_back({g.tensors[t].dtype, g.tensors[t].shape, raw});
    }
    if (!n.op->reference(KernelContext{n, in, out}).ok()) { ++i; continue; }  // leave it for run time to report
    for (size_t k = 0; k < n.outputs.size(); ++k) g.tensors[n.outputs[k]].constant = std::move(results[k]);
    for (int t : n.inputs) {
      if (--readers[size_t(t)] == 0 && g.tensors[t].constant && g.tensors[t].constant->size >= kReleaseBytes) {
        g.tensors[t].constant.reset();
      }
    }
    g.nodes.erase(g.nodes.begin() + i);
    changed = true;
  }
  return changed;
}

PassResult eliminateCommonSubexpressions(FusionContext& ctx) {
  ir::Graph& g = ctx.graph;
  bool changed = shareEqualConstants(g);
  // Same op, attributes and inputs compute the same values (random ops excepted).
  std::map<std::tuple<const OpDef*, std::vector<int>, size_t>, std::vector<size_t>> seen;
  std::vector<size_t> dead;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (isRandom(n.op) || n.subgraph || !n.subgraphs.empty()) continue;  // subgraphs are not in the key
    auto& bucket = seen[{n.op, n.inputs, n.attrs.hash()}];
    bool merged = false;
    for (size_t j : bucket) {
      const ir::Node& m = g.nodes[j];
      if (!(m.attrs == n.attrs) || m.outputs.size() != n.outputs.size()) continue;
      bool outputs_free = true;
      for (int t : n.outputs) outputs_free = outputs_free && !isGraphOutput(g, t);
      if (!outputs_free) continue;
      for (size_t k = 0; k < n.outputs.size(); ++k) replaceUses(g, n.outputs[k], m.outputs[k]);
      dead.push_back(i);
      merged = changed = true;
      break;
    }
    if (!merged) bucket.push_back(i);
  }
  for (size_t k = dead.size(); k-- > 0;) g.nodes.erase(g.nodes.begin() + dead[k]);
  return changed;
}

}  // namespace gkrt::passes
