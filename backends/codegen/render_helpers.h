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
                                      {"ReduceProd", "1.0f", false}};
  for (const ReduceKind& k : kKinds) if (n.op && std::strcmp(n.op->name, k.op) == 0) return &k;
  return nullptr;
}
inline std::string combine(const ReduceKind& k, const std::string& a, const std::string& b) {
  const std::string op = k.op;
  if (op == "ReduceMax") return "((isnan(" + b + ") || " + b + " > " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceMin") return "((isnan(" + b + ") || " + b + " < " + a + ") ? " + b + " : " + a + ")";
  if (op == "ReduceProd") return "(" + a + " * " + b + ")";
  return "(" + a + " + " + b + ")";
}

}  // namespace gkrt::codegen
