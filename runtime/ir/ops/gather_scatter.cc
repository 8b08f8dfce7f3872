// Ops that read or write elements at positions held in an index tensor, as ONNX
// defines them: GatherElements, GatherND, ScatterElements, ScatterND. Indices may be
// negative (counted from the end); an index out of range is a run-time data error
// naming the position.
#include <algorithm>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status requireIndices(const ir::Node& n, const TensorType* t) {
  if (!isInteger(t->dtype)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " indices must be int32 or int64, got ", dtypeName(t->dtype));
  }
  return Status::Ok();
}

// An index read from `ind` at position `pos`, checked against `extent` (negative
// counts from the end).
StatusOr<int64_t> checkedIndex(const char* op, const TensorView& ind, int64_t pos, int64_t extent) {
  const int64_t raw = loadIndex(ind, pos);
  const int64_t k = raw < 0 ? raw + extent : raw;
  if (k < 0 || k >= extent) {
    return makeError(StatusCode::kInvalidArgument, op, " index ", raw, " at position ", pos,
                     " is out of range for an axis of size ", extent);
  }
  return k;
}

template <class T> T combine(T a, T b, ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kAdd: return static_cast<T>(a + b);
    case ScatterReduction::kMul: return static_cast<T>(a * b);
    case ScatterReduction::kMax: return std::max(a, b);
    case ScatterReduction::kMin: return std::min(a, b);
    case ScatterReduction::kNone: break;
  }
  return b;
}
// out[o] = out[o] (reduction) updates[u], in the tensor's own type (16-bit floats
// in float32).
void scatterInto(const MutableTensorView& out, int64_t o, const TensorView& updates, int64_t u, ScatterReduction r) {
  if (r == ScatterReduction::kNone) {
    copyElement(out, o, updates, u);
  } else if (out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16) {
    storeF(out.data, out.dtype, o, combine(loadF(out.data, out.dtype, o), loadF(updates.data, updates.dtype, u), r));
  } else if (out.dtype == DType::kBool) {
    out.as<uint8_t>()[o] = combine<uint8_t>(out.as<uint8_t>()[o] != 0, updates.as<uint8_t>()[u] != 0, r) != 0;
  } else {
    withStorageType(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      out.as<T>()[o] = combine<T>(out.as<T>()[o], updates.as<T>()[u], r);
    });
  }
}

// ---- GatherElements / ScatterElements --------------------------------------------
// out[i] = data[i with i[axis] = indices[i]]; indices has data's rank.
Status checkSameRank(const ir::Node& n, const Shape& data, const Shape& ind) {
  if (data.size() != ind.size() || data.empty()) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs indices of the data's rank (", data.size(),
                     " > 0), got ", shapeToString(ind));
  }
  return Status::Ok();
}
Status dtypeGatherElements(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireIndices(n, in[1]));
  out = {in[0]->dtype};
  return Status::Ok();
}
Status shapeGatherElements(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(checkSameRank(n, in[0]->shape, in[1]->shape));
  RETURN_IF_ERROR(normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(in[0]->shape.size())).status());
  out = {in[1]->shape};
  return Status::Ok();
}
// Calls fn(i, offset) for every index position i with the data offset it addresses
// (position i with its `axis` coordinate replaced by indices[i]).
template <class Fn> Status forEachElementIndex(const char* op, const TensorView& x, const TensorView& ind, int64_t axis_attr,
                                               Fn&& fn) {
  const int64_t axis = *normalizeAxis(axis_attr, static_cast<int64_t>(x.shape.size()));
  const std::vector<int64_t> st = contiguousStrides(x.shape);
  std::vector<int64_t> idx;
  for (int64_t i = 0, n = ind.size(); i < n; ++i) {
    unravel(i, ind.shape, idx);
    ASSIGN_OR_RETURN(idx[axis], checkedIndex(op, ind, i, x.shape[axis]));
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    fn(i, off);
  }
  return Status::Ok();
}
Status gatherElementsKernel(const KernelContext& c) {
  return forEachElementIndex("GatherElements", c.in(0), c.in(1), c.node.attrs.get<AxisAttrs>().axis,
                             [&](int64_t i, int64_t off) { copyElement(c.out(0), i, c.in(0), off); });
}

Status dtypeScatter(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireIndices(n, in[1]));
  if (in[2]->dtype != in[0]->dtype) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " updates are ", dtypeName(in[2]->dtype), ", data is ",
                     dtypeName(in[0]->dtype));
  }
  out = {in[0]->dtype};
  return Status::Ok();
}
Status shapeScatterElements(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(checkSameRank(n, in[0]->shape, in[1]->shape));
  if (in[2]->shape != in[1]->shape) {
    return makeError(StatusCode::kInvalidArgument, "ScatterElements updates ", shapeToString(in[2]->shape),
                     " must have the indices' shape ", shapeToString(in[1]->shape));
  }
  RETURN_IF_ERROR(normalizeAxis(n.attrs.get<ScatterAttrs>().axis, static_cast<int64_t>(in[0]->shape.size())).status());
  out = {in[0]->shape};
  return Status::Ok();
}
Status scatterElementsKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<ScatterAttrs>();
  const TensorView &x = c.in(0), &upd = c.in(2);
  const MutableTensorView& y = c.out(0);
  std::memcpy(y.data, x.data, static_cast<size_t>(x.size()) * dtypeSize(x.dtype));
  return forEachElementIndex("ScatterElements", x, c.in(1), a.axis,
                             [&](int64_t i, int64_t off) { scatterInto(y, off, upd, i, a.reduction); });
}

// ---- GatherND / ScatterND ----------------------------------------------------------
// indices [..., k] address data's axes [b, b + k) (b = batch_dims); each index tuple
// selects a slice of data.shape[b + k:].
struct NDLayout {
  int64_t batch = 1;       // product of the batch dims
  int64_t tuples = 1;      // index tuples per batch
  int64_t k = 0;           // tuple length
  int64_t slice = 1;       // elements per selected slice
  Shape addressed;         // data.shape[b, b + k)
  int64_t batch_stride = 1;  // data elements per batch
};
StatusOr<NDLayout> ndLayout(const ir::Node& n, const Shape& data, const Shape& ind, int64_t b) {
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(ind.size());
  if (q < 1 || b < 0 || b >= q || b > r) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": batch_dims ", b, " needs indices of rank > ", b,
                     " and data of rank >= ", b, ", got ", shapeToString(ind), " and ", shapeToString(data));
  }
  NDLayout l;
  l.k = ind.back();
  if (l.k < 1 || b + l.k > r) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, ": index tuples of length ", l.k, " cannot address data ",
                     shapeToString(data), " after ", b, " batch dims");
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data[d] != ind[d]) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, ": batch dim ", d, " is ", data[d], " in data and ",
                       ind[d], " in indices");
    }
    l.batch *= data[d];
  }
  for (int64_t d = b; d < q - 1; ++d) l.tuples *= ind[d];
  l.addressed.assign(data.begin() + b, data.begin() + b + l.k);
  for (int64_t d = b + l.k; d < r; ++d) l.slice *= data[d];
  l.batch_stride = numElements(l.addressed) * l.slice;
  return l;
}
// Data offset of index tuple t (0 .. batch * tuples) of `ind`.
StatusOr<int64_t> tupleOffset(const char* op, const NDLayout& l, const TensorView& ind, int64_t t) {
  int64_t off = 0;
  for (int64_t j = 0; j < l.k; ++j) {
    ASSIGN_OR_RETURN(int64_t v, checkedIndex(op, ind, t * l.k + j, l.addressed[j]));
    off = off * l.addressed[j] + v;
  }
  return (t / l.tuples) * l.batch_stride + off * l.slice;
}

Status shapeGatherND(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const int64_t b = n.attrs.get<GatherNDAttrs>().batch_dims;
  ASSIGN_OR_RETURN(NDLayout l, ndLayout(n, in[0]->shape, in[1]->shape, b));
  Shape s(in[1]->shape.begin(), in[1]->shape.end() - 1);
  s.insert(s.end(), in[0]->shape.begin() + b + l.k, in[0]->shape.end());
  out = {s};
  return Status::Ok();
}
Status gatherNDKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &ind = c.in(1);
  ASSIGN_OR_RETURN(NDLayout l, ndLayout(c.node, x.shape, ind.shape, c.node.attrs.get<GatherNDAttrs>().batch_dims));
  const size_t es = dtypeSize(x.dtype);
  for (int64_t t = 0; t < l.batch * l.tuples; ++t) {
    ASSIGN_OR_RETURN(int64_t off, tupleOffset("GatherND", l, ind, t));
    std::memcpy(static_cast<uint8_t*>(c.out(0).data) + t * l.slice * es, static_cast<const uint8_t*>(x.data) + off * es,
                static_cast<size_t>(l.slice) * es);
  }
  return Status::Ok();
}

Status shapeScatterND(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape &data = in[0]->shape, &ind = in[1]->shape;
  ASSIGN_OR_RETURN(NDLayout l, ndLayout(n, data, ind, 0));
  Shape want(ind.begin(), ind.end() - 1);
  want.insert(want.end(), data.begin() + l.k, data.end());
  if (in[2]->shape != want) {
    return makeError(StatusCode::kInvalidArgument, "ScatterND updates are ", shapeToString(in[2]->shape), ", indices ",
                     shapeToString(ind), " into data ", shapeToString(data), " need ", shapeToString(want));
  }
  out = {data};
  return Status::Ok();
}
Status scatterNDKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &ind = c.in(1), &upd = c.in(2);
  const MutableTensorView& y = c.out(0);
  std::memcpy(y.data, x.data, static_cast<size_t>(x.size()) * dtypeSize(x.dtype));
  ASSIGN_OR_RETURN(NDLayout l, ndLayout(c.node, x.shape, ind.shape, 0));
  const ScatterReduction r = c.node.attrs.get<ScatterAttrs>().reduction;
  for (int64_t t = 0; t < l.tuples; ++t) {
    ASSIGN_OR_RETURN(int64_t off, tupleOffset("ScatterND", l, ind, t));
    for (int64_t e = 0; e < l.slice; ++e) scatterInto(y, off + e, upd, t * l.slice + e, r);
  }
  return Status::Ok();
}

}  // namespace

void registerGatherScatterOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("GatherElements")) t.push_back({"GatherElements", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kAxis,
               dtypeGatherElements, shapeGatherElements, gatherElementsKernel,
               "out[i] = data[i with i[axis] = indices[i]] (ONNX GatherElements)"});
  if constexpr (opSelected("GatherND")) t.push_back({"GatherND", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kGatherND, dtypeGatherElements,
               shapeGatherND, gatherNDKernel, "slices of data at the index tuples in indices' last axis, after batch_dims"});
  if constexpr (opSelected("ScatterElements")) t.push_back({"ScatterElements", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kScatter,
               dtypeScatter, shapeScatterElements, scatterElementsKernel,
               "data with data[i with i[axis] = indices[i]] (reduction)= updates[i]"});
  if constexpr (opSelected("ScatterND")) t.push_back({"ScatterND", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kScatter, dtypeScatter,
               shapeScatterND, scatterNDKernel, "data with the slices at indices' tuples (reduction)= updates"});
}

}  // namespace gkrt::ops
