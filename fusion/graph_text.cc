#include "fusion/graph_text.h"

#include <sstream>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {
namespace {

std::string ref(const ir::Graph& g, int t) {
  if (t < 0) return "none";
  const ir::Tensor& x = g.tensors[t];
  std::string s = "%" + std::to_string(t);
  if (!x.name.empty()) s += " " + x.name;
  if (x.isConstant() && numElements(x.shape) == 1) {
    std::ostringstream v;
    v << ops::loadF(x.constant->data, x.dtype, 0);
    s += "=" + v.str();
  }
  return s;
}

std::string type(const ir::Tensor& t) { return std::string(dtypeName(t.dtype)) + "[" + shapeToString(t.shape) + "]"; }

void print(const ir::Graph& g, int indent, std::ostringstream& os) {
  const std::string pad(indent, ' ');
  for (const ir::Node& n : g.nodes) {
    os << pad;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      os << (k ? ", " : "") << ref(g, n.outputs[k]) << ": " << type(g.tensors[n.outputs[k]]);
    }
    os << " = " << n.op->name;
    if (!n.name.empty()) os << " '" << n.name << "'";
    os << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << ref(g, n.inputs[k]);
    os << ")";
    const std::string attrs = n.attrs.toString();
    if (!attrs.empty()) os << " {" << attrs << "}";
    if (n.subgraph) {
      os << " [" << n.subgraph->nodes.size() << " ops] {\n";
      print(*n.subgraph, indent + 2, os);
      os << pad << "}";
    }
    for (size_t k = 0; k < n.subgraphs.size(); ++k) {  // control flow: branches or body, inputs by position
      const ir::Graph& sub = *n.subgraphs[k];
      os << " subgraph " << k << "(";
      for (size_t i = 0; i < sub.inputs.size(); ++i) os << (i ? ", " : "") << ref(sub, sub.inputs[i]);
      os << ") -> (";
      for (size_t i = 0; i < sub.outputs.size(); ++i) os << (i ? ", " : "") << ref(sub, sub.outputs[i]);
      os << ") {\n";
      print(sub, indent + 2, os);
      os << pad << "}";
    }
    os << "\n";
  }
}

}  // namespace

std::string graphToText(const ir::Graph& g) {
  std::ostringstream os;
  os << "graph(";
  for (size_t k = 0; k < g.inputs.size(); ++k) os << (k ? ", " : "") << ref(g, g.inputs[k]) << ": " << type(g.tensors[g.inputs[k]]);
  os << ") -> (";
  for (size_t k = 0; k < g.outputs.size(); ++k) os << (k ? ", " : "") << ref(g, g.outputs[k]);
  os << ") {\n";
  print(g, 2, os);
  os << "}\n";
  return os.str();
}

}  // namespace gkrt
