// Ops that order elements along an axis: TopK.
#include <algorithm>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status dtypeTopK(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (in[0]->dtype == DType::kBool) return makeError(StatusCode::kInvalidArgument, "TopK needs numbers, got bool");
  out = {in[0]->dtype, DType::kInt64};
  return Status::Ok();
}
Status shapeTopK(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<TopKAttrs>();
  Shape s = in[0]->shape;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(s.size())));
  if (a.k < 0 || a.k > s[axis]) {
    return makeError(StatusCode::kInvalidArgument, "TopK k=", a.k, " must lie in [0, ", s[axis], "], the length of axis ", axis);
  }
  s[axis] = a.k;
  out = {s, s};
  return Status::Ok();
}

// Per row along the axis: the k extreme elements, ties to the lower index (ONNX),
// NaN counted as larger than every number.
template <class K, class Load> void topKRows(const KernelContext& c, Load&& key) {
  const auto& a = c.node.attrs.get<TopKAttrs>();
  const TensorView& x = c.in(0);
  const int64_t axis = *normalizeAxis(a.axis, static_cast<int64_t>(x.shape.size()));
  const AxisSplit s = splitAtAxis(x.shape, axis);
  std::vector<std::pair<K, int64_t>> row(static_cast<size_t>(s.extent));
  auto before = [&](const std::pair<K, int64_t>& p, const std::pair<K, int64_t>& q) {
    const bool pn = p.first != p.first, qn = q.first != q.first;  // NaN
    if (pn != qn) return a.largest ? pn : qn;
    if (!pn && p.first != q.first) return a.largest ? p.first > q.first : p.first < q.first;
    return p.second < q.second;
  };
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      for (int64_t e = 0; e < s.extent; ++e) row[e] = {key((o * s.extent + e) * s.inner + in), e};
      std::partial_sort(row.begin(), row.begin() + a.k, row.end(), before);
      for (int64_t j = 0; j < a.k; ++j) {
        const int64_t dst = (o * a.k + j) * s.inner + in;
        copyElement(c.out(0), dst, x, (o * s.extent + row[j].second) * s.inner + in);
        c.out(1).as<int64_t>()[dst] = row[j].second;
      }
    }
}
Status topKKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  if (x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16) {
    topKRows<float>(c, [&](int64_t i) { return loadF(x.data, x.dtype, i); });
  } else {
    withStorageType(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      topKRows<T>(c, [&](int64_t i) { return x.as<T>()[i]; });
    });
  }
  return Status::Ok();
}

}  // namespace

void registerSortingOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("TopK")) t.push_back({"TopK", OpClass::kOpaque, 1, 1, 2, 2, AttrKind::kTopK, dtypeTopK, shapeTopK, topKKernel,
               "the k largest (or smallest) along axis and their int64 indices; ties keep the lower index"});
}

}  // namespace gkrt::ops
