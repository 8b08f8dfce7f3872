#include "runtime/ir/channels_last_ends.h"

#include <string>

#include "runtime/ir/attrs.h"
#include "runtime/ir/op_def.h"

namespace gkrt::ir {
namespace {

bool isOp(const Node& n, const char* name) { return n.op && std::string(n.op->name) == name; }

bool isLayoutOnly(const Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1) return false;
  return isOp(n, "Squeeze") || isOp(n, "Unsqueeze") || isOp(n, "Reshape") || isOp(n, "Flatten") ||
         isOp(n, "Transpose");
}

std::vector<int64_t> nonUnit(const Shape& s) {
  std::vector<int64_t> v;
  for (int64_t d : s) if (d != 1) v.push_back(d);
  return v;
}

bool staticShape(const Shape& s) {
  for (int64_t d : s) if (d < 0) return false;
  return true;
}

}  // namespace

bool transposeKeepsNhwcBytes(const Shape& x, const Ints& perm) {
  if (x.size() != 4 || perm.size() != 4 || !staticShape(x)) return false;
  int last = -1;
  for (int k : {0, 2, 3, 1}) {  // the output's N, H, W, C as axes of x
    const int64_t axis = perm[size_t(k)];
    if (axis < 0 || axis > 3) return false;
    if (x[size_t(axis)] == 1) continue;
    if (axis <= last) return false;
    last = static_cast<int>(axis);
  }
  return true;
}

std::vector<int> nchwLabels(const Shape& y) {
  std::vector<int> labels(y.size(), -1);
  for (size_t d = 0; d < y.size(); ++d) if (y[d] != 1) labels[d] = static_cast<int>(d);
  return labels;
}

bool relabelThrough(const Node& n, const Shape& in, const Shape& out, std::vector<int>* labels) {
  if (n.inputs.empty() || n.outputs.size() != 1 || !staticShape(in) || !staticShape(out) || labels->size() != in.size()) {
    return false;
  }
  if (isOp(n, "Transpose")) {
    const Ints& perm = n.attrs.get<PermAttrs>().perm;
    if (perm.size() != in.size()) return false;
    std::vector<int> next(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] < 0 || perm[i] >= int64_t(in.size())) return false;
      next[i] = (*labels)[size_t(perm[i])];
    }
    *labels = next;
    return true;
  }
  if (!isLayoutOnly(n) || nonUnit(in) != nonUnit(out)) return false;  // only dims of 1 come or go
  std::vector<int> kept;
  for (int l : *labels) if (l >= 0) kept.push_back(l);
  std::vector<int> next(out.size(), -1);
  size_t k = 0;
  for (size_t d = 0; d < out.size(); ++d) if (out[d] != 1) next[d] = kept[k++];
  *labels = next;
  return true;
}

bool labelsAreNhwc(const std::vector<int>& labels) {
  std::vector<int> order;
  for (int l : labels) if (l >= 0) order.push_back(l);
  std::vector<int> want;
  for (int l : {0, 2, 3, 1}) {
    for (int o : order) if (o == l) want.push_back(l);
  }
  return order == want;
}

bool channelsLastEnds(const Node& node, ChannelsLastEnds* e) {
  if (!node.subgraph || node.outputs.size() != 1) return false;
  const Graph& body = *node.subgraph;
  if (body.nodes.empty() || body.outputs.size() != 1) return false;
  ChannelsLastEnds r;
  const auto readers = [&](int t) {
    int n = 0;
    for (const Node& m : body.nodes) for (int i : m.inputs) n += i == t;
    for (int o : body.outputs) n += o == t;
    return n;
  };
  const Node& first = body.nodes[0];
  if (isOp(first, "Transpose") && first.inputs.size() == 1 && first.outputs.size() == 1 && body.nodes.size() > 1) {
    for (size_t k = 0; k < body.inputs.size(); ++k) if (body.inputs[k] == first.inputs[0]) r.x_input = int(k);
    const Node& conv = body.nodes[1];
    if (r.x_input < 0 || !isOp(conv, "Conv2D") || conv.inputs.empty() || conv.inputs[0] != first.outputs[0] ||
        readers(first.outputs[0]) != 1 ||
        !transposeKeepsNhwcBytes(body.tensors[size_t(first.inputs[0])].shape, first.attrs.get<PermAttrs>().perm)) {
      return false;
    }
    r.in = true;
    r.conv = 1;
  }
  const Node& conv = body.nodes[r.conv];
  if (!isOp(conv, "Conv2D") || conv.inputs.empty() || conv.outputs.size() != 1) return false;
  r.conv_x = conv.inputs[0];
  // The tail: the longest run of layout-only nodes at the end, each reading the one before.
  size_t t = body.nodes.size();
  while (t > r.conv + 1 && isLayoutOnly(body.nodes[t - 1]) &&
         (t == body.nodes.size() || body.nodes[t].inputs[0] == body.nodes[t - 1].outputs[0])) {
    --t;
  }
  r.tail = t;
  r.chain_end = t > r.conv + 1 ? body.nodes[t - 1].outputs[0] : conv.outputs[0];
  if (t < body.nodes.size()) {
    const Shape& y = body.tensors[size_t(conv.outputs[0])].shape;
    if (body.nodes[t].inputs[0] != r.chain_end || body.tensors[size_t(r.chain_end)].shape != y || y.size() != 4 ||
        readers(r.chain_end) != 1) {
      return false;
    }
    std::vector<int> labels = nchwLabels(y);
    for (size_t i = t; i < body.nodes.size(); ++i) {
      const Node& n = body.nodes[i];
      if (i + 1 < body.nodes.size() && readers(n.outputs[0]) != 1) return false;
      if (!relabelThrough(n, body.tensors[size_t(n.inputs[0])].shape, body.tensors[size_t(n.outputs[0])].shape, &labels)) {
        return false;
      }
    }
    if (!labelsAreNhwc(labels) || body.nodes.back().outputs[0] != body.outputs[0]) return false;
    r.out = true;
  } else if (!r.in) {
    return false;
  }
  *e = r;
  return true;
}

}  // namespace gkrt::ir
