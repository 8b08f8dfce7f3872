// Shape and reduction helpers of the kernel renderers (cluster_renderer.cc,
// pattern_kernels.cc, movement_kernels.cc).
#pragma once

#include <cstring>
#include <string>

#include "runtime/ir/graph.h"
#include "runtime/ir/op_def.h"

namespace gkrt::codegen {

inline Status unsupported(const std::string& why) { return makeError(StatusCode::kUnsupported, why); }
// `n` is a single (unfused) node of op `name`.
inline bool isOp(const ir::Node& n, const char* name) { return n.op && !n.subgraph && std::strcmp(n.op->name, name) == 0; }
inline std::string num(int64_t v) { return std::to_string(v); }

struct ReduceKind {
  const char* op;
  const char* init;
  bool mean;
};
inline const ReduceKind* reduceKind(const ir::Node& n) {
  static const ReduceKind kKinds[] = {{"ReduceSum", "0.0f", false}, {"ReduceMean", "0.0f", true},
                                      {"ReduceMax", "(-GK_INF)", false}, {"ReduceMin", "GK_INF", false},
                                      {"ReduceProd", "1.0f", false},
                                      {"GlobalAvgPool", "0.0f", true}};  // the mean over every axis after N, C
  for (const ReduceKind& k : kKinds) if (n.op && std::strcmp(n.op->name, k.op) == 0) return &k;
  return nullptr;
}
// A reduction that combines one element per output (a ReduceSum over an axis of 1, a
// GlobalAvgPool over 1 x 1 planes): its input, reshaped; no reduction to render.
inline bool isIdentityReduce(const ir::Node& n, const std::vector<ir::Tensor>& tensors) {
  if (!reduceKind(n) || n.inputs.empty() || n.outputs.empty() || n.inputs[0] < 0 || n.outputs[0] < 0) return false;
  return numElements(tensors[n.inputs[0]].shape) == numElements(tensors[n.outputs[0]].shape);
}
inline std::string combine(const ReduceKind& k, const std::string& a, const std::string& b) {
  const std::string op = k.op;
  if (op == "ReduceMax") return "((isnan(" + b + ") || " + b + " > " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceMin") return "((isnan(" + b + ") || " + b + " < " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceProd") return "(" + a + " * " + b + ")";
  return "(" + a + " + " + b + ")";
}

}  // namespace gkrt::codegen
