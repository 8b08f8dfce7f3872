// What the Appendix 3 pattern passes share: who produces and who reads each tensor, op
// tests, scalar constants, and the rewrite that puts one pattern node in place of the
// nodes it matched.
//
//   PatternGraph pg(g);
//   const ir::Node* add = pg.producer(ln.inputs[0], "Add");   // null unless an Add makes it
//   if (add && pg.singleUse(ln.inputs[0])) ...
//   RETURN_IF_ERROR(replaceWithPatternNode(g, root_index, std::move(node), {add_index}));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_context.h"
#include "runtime/ir/graph.h"

namespace gkrt::passes {

class PatternGraph {
 public:
  explicit PatternGraph(const ir::Graph& g);
  // The node making tensor t when its op is one of `ops` (any op when empty), else null.
  const ir::Node* producer(int t, std::initializer_list<const char*> ops = {}) const;
  int producerIndex(int t) const { return t >= 0 ? producers_[t] : -1; }
  // Readers of t: node inputs plus one for each graph output slot holding it.
  int uses(int t) const { return uses_[t]; }
  bool singleUse(int t) const { return t >= 0 && uses_[t] == 1; }
  // The nodes reading t (once each).
  std::vector<int> users(int t) const;
  const ir::Graph& graph() const { return g_; }

 private:
  const ir::Graph& g_;
  std::vector<int> producers_;
  std::vector<int> uses_;
  mutable std::vector<int> user_start_, user_list_;  // readers of tensor t: user_list_[user_start_[t] ..]
};

bool isOp(const ir::Node& n, const char* op);
// A MatMul or BatchMatMul of two inputs, neither transposed.
bool isPlainMatMul(const ir::Node& n);
// The dtypes the pattern kernels take, as MindSpore's: float32, float16, bfloat16.
bool isPatternDType(DType t);
// The value of a one-element float constant (any shape of one element).
std::optional<float> scalarConstant(const ir::Graph& g, int t);

// Puts `node` at nodes[root] (its outputs may reuse tensors of the nodes it replaces),
// erases the nodes in `erase` (whose outputs `node` now produces or nothing reads),
// drops nodes left unread and restores the topological order.
Status replaceWithPatternNode(ir::Graph& g, int root, ir::Node node, std::vector<int> erase = {});
// A new tensor for a node output, named after `base`.
int addPatternTensor(ir::Graph& g, const std::string& base, DType dtype, const Shape& shape);
// A new constant tensor holding `bytes` (numElements(shape) * dtypeSize(dtype) of them).
int addPatternConstant(ir::Graph& g, const std::string& base, DType dtype, const Shape& shape, const void* bytes);
// A node of `op` (null op when this build lacks it: check findOp first).
ir::Node patternNode(const char* op, const std::string& name, Attrs attrs, std::vector<int> inputs,
                     std::vector<int> outputs);

// Runs `match_one` (returns true after one rewrite) until it finds nothing more.
StatusOr<bool> rewriteAll(FusionContext& ctx, StatusOr<bool> (*match_one)(FusionContext&));

}  // namespace gkrt::passes
