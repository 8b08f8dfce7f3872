#include "runtime/ir/subnormal_weights.h"

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/ir/op_def.h"

namespace gkrt::ir {
namespace {

bool isSubnormal(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  return (bits & 0x7f800000u) == 0 && (bits & 0x007fffffu) != 0;
}

// The values of `c` with subnormals zeroed (signs kept), or null when it holds none (read
// in place: no copy of a constant without them).
std::shared_ptr<const ConstData> withoutSubnormals(const ConstData& c, int64_t* zeroed) {
  const size_t n = c.size / 4;
  size_t first = 0;
  while (first < n && !isSubnormal(c.data + 4 * first)) ++first;
  if (first == n) return nullptr;
  auto values = std::make_shared<std::vector<float>>(n);
  std::memcpy(values->data(), c.data, n * 4);
  for (size_t i = first; i < n; ++i) {
    float& v = (*values)[i];
    if (!isSubnormal(reinterpret_cast<const uint8_t*>(&v))) continue;
    v = std::signbit(v) ? -0.0f : 0.0f;
    ++*zeroed;
  }
  auto out = std::make_shared<ConstData>();
  out->data = reinterpret_cast<const uint8_t*>(values->data());
  out->size = n * 4;
  out->owner = values;
  return out;
}

int64_t zeroIn(Graph& g, std::map<const ConstData*, std::shared_ptr<const ConstData>>& done) {
  // 1: read only as a product input so far; 2: read elsewhere too.
  std::vector<uint8_t> use(g.tensors.size(), 0);
  for (const Node& n : g.nodes) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int t = n.inputs[k];
      if (t < 0) continue;
      const bool product = n.op && k < 32 && (n.op->product_inputs >> k & 1u);
      use[size_t(t)] = product && use[size_t(t)] != 2 ? 1 : 2;
    }
  }
  for (int t : g.outputs) use[size_t(t)] = 2;
  int64_t zeroed = 0;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& tensor = g.tensors[t];
    if (use[t] != 1 || !tensor.constant || tensor.dtype != DType::kFloat32) continue;
    auto it = done.find(tensor.constant.get());
    if (it == done.end()) it = done.emplace(tensor.constant.get(), withoutSubnormals(*tensor.constant, &zeroed)).first;
    if (it->second) tensor.constant = it->second;
  }
  for (Node& n : g.nodes) {
    if (n.subgraph) zeroed += zeroIn(*n.subgraph, done);
  }
  return zeroed;
}

}  // namespace

int64_t zeroSubnormalWeights(Graph& g) {
  std::map<const ConstData*, std::shared_ptr<const ConstData>> done;
  return zeroIn(g, done);
}

}  // namespace gkrt::ir
