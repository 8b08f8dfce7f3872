// Shape and reduction helpers of the cluster renderer (cluster_renderer.cc).
#pragma once

#include <cstring>
#include <string>

#include "runtime/ir/graph.h"
#include "runtime/ir/op_def.h"

namespace gkrt::codegen {

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
// A GlobalAvgPool over 1 x 1 planes: its input, reshaped (no reduction to render).
inline bool isIdentityPool(const ir::Node& n, const std::vector<ir::Tensor>& tensors) {
  if (!n.op || std::strcmp(n.op->name, "GlobalAvgPool") != 0 || n.inputs.empty()) return false;
  const Shape& s = tensors[n.inputs[0]].shape;
  return s.size() >= 3 && numElements(s) == s[0] * s[1];
}
inline std::string combine(const ReduceKind& k, const std::string& a, const std::string& b) {
  const std::string op = k.op;
  if (op == "ReduceMax") return "((isnan(" + b + ") || " + b + " > " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceMin") return "((isnan(" + b + ") || " + b + " < " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceProd") return "(" + a + " * " + b + ")";
  return "(" + a + " + " + b + ")";
}

}  // namespace gkrt::codegen
