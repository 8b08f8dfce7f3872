#include "runtime/ir/value_offsets.h"

#include <string_view>

#include "runtime/ir/known_values.h"
#include "runtime/ir/op_def.h"

namespace gkrt::ir {
namespace {

// A tensor written as base + offsets: offsets has one entry per element of the
// tensor (or one shared by all), and element i reads base element i, or base's only
// element.
struct Affine {
  int base = -1;
  Ints offsets;
};

std::optional<Ints> constantInts(const Tensor& t) {
  const ConstData* d = t.knownData();
  if (!d || (t.dtype != DType::kInt64 && t.dtype != DType::kInt32)) return std::nullopt;
  const int64_t n = numElements(t.shape);
  if (n < 1 || n > kKnownValueMaxElements) return std::nullopt;
  Ints v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[size_t(i)] = t.dtype == DType::kInt64 ? reinterpret_cast<const int64_t*>(d->data)[i]
                                            : reinterpret_cast<const int32_t*>(d->data)[i];
  }
  return v;
}

// a + sign * b, either holding one value shared by all elements.
std::optional<Ints> combine(const Ints& a, const Ints& b, int64_t sign) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  Ints out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = a[a.size() == 1 ? 0 : i] + sign * b[b.size() == 1 ? 0 : i];
  return out;
}

bool isInt(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

Affine decompose(const Graph& g, const std::vector<int>& producers, int t) {
  Affine a{t, {0}};
  for (int guard = 0; guard < 64; ++guard) {
    const int p = producers[size_t(a.base)];
    if (p < 0) break;
    const Node& n = g.nodes[size_t(p)];
    const std::string_view op = n.op->name;
    const int64_t count = numElements(g.tensors[size_t(a.base)].shape);
    if (op == "ExpandDims" || op == "Squeeze" || op == "Reshape" || op == "Identity" || op == "Flatten" ||
        (op == "Cast" && isInt(g.tensors[size_t(n.inputs[0])].dtype))) {
      a.base = n.inputs[0];
      continue;
    }
    if ((op != "Add" && op != "Sub") || n.inputs.size() != 2) break;
    const int64_t sign = op == "Add" ? 1 : -1;
    std::optional<Ints> right = constantInts(g.tensors[size_t(n.inputs[1])]);
    std::optional<Ints> left = op == "Add" ? constantInts(g.tensors[size_t(n.inputs[0])]) : std::nullopt;
    const int other = right ? n.inputs[0] : n.inputs[1];
    const std::optional<Ints>& c = right ? right : left;
    if (!c || !isInt(g.tensors[size_t(other)].dtype)) break;
    // The run-time operand must map elementwise (same count) or be one shared value.
    const int64_t other_count = numElements(g.tensors[size_t(other)].shape);
    if (other_count != count && other_count != 1) break;
    if (static_cast<int64_t>(c->size()) != count && c->size() != 1) break;
    std::optional<Ints> next = combine(a.offsets, *c, right ? sign : 1);
    if (!next) break;
    a = {other, std::move(*next)};
  }
  return a;
}

}  // namespace

std::optional<Ints> constantDifference(const Graph& g, int from, int to) {
  if (from < 0 || to < 0 || !isInt(g.tensors[size_t(from)].dtype) || !isInt(g.tensors[size_t(to)].dtype)) {
    return std::nullopt;
  }
  const int64_t n_from = numElements(g.tensors[size_t(from)].shape), n_to = numElements(g.tensors[size_t(to)].shape);
  if (n_from < 1 || n_to < 1 || n_from > kKnownValueMaxElements || n_to > kKnownValueMaxElements) return std::nullopt;
  const std::vector<int> producers = g.producers();
  const Affine a = decompose(g, producers, from), b = decompose(g, producers, to);
  if (a.base != b.base) return std::nullopt;
  const int64_t n_base = numElements(g.tensors[size_t(a.base)].shape);
  if (n_base != 1 && (n_base != n_from || n_base != n_to)) return std::nullopt;
  std::optional<Ints> diff = combine(b.offsets, a.offsets, -1);
  if (!diff) return std::nullopt;
  const size_t n = static_cast<size_t>(std::max(n_from, n_to));
  if (diff->size() == 1 && n > 1) diff->assign(n, (*diff)[0]);
  return diff;
}

}  // namespace gkrt::ir
