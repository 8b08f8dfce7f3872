// Data-movement ops that keep every element: Reshape, ExpandDims, Squeeze,
// BroadcastTo, Transpose, Concat, Split, Tile, RepeatInterleaveInt, FillV2.
// All are dtype-agnostic byte copies.
#include <algorithm>
#include <numeric>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status copyKernel(const KernelContext& c) {  // Reshape/ExpandDims/Squeeze share row-major order
  const size_t bytes = c.in(0).size() * dtypeSize(c.in(0).dtype);
  if (bytes && c.out(0).data != c.in(0).data) std::memcpy(c.out(0).data, c.in(0).data, bytes);
  return Status::Ok();
}

Status shapeReshape(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  Shape s = n.attrs.get<ShapeAttrs>().shape;
  const int64_t total = numElements(in[0]->shape);
  int64_t known = 1, infer_at = -1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == -1) {
      if (infer_at >= 0) return makeError(StatusCode::kInvalidArgument, "Reshape shape ", shapeToString(s), " has two -1 dims");
      infer_at = static_cast<int64_t>(d);
    } else if (s[d] < 0) {
      return makeError(StatusCode::kInvalidArgument, "Reshape target dim ", d, " is ", s[d], "; use -1 for one inferred dim");
    } else if (__builtin_mul_overflow(known, s[d], &known)) {
      return makeError(StatusCode::kInvalidArgument, "Reshape target shape ", shapeToString(s),
                       " has more elements than int64 holds");
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return makeError(StatusCode::kInvalidArgument, "Reshape cannot infer the -1 dim: ", total,
                       " elements do not divide into ", known);
    }
    s[infer_at] = total / known;
  } else if (known != total) {
    return makeError(StatusCode::kInvalidArgument, "Reshape from ", shapeToString(in[0]->shape), " (", total,
                     " elements) to ", shapeToString(s), " (", known, " elements)");
  }
  out = {s};
  return Status::Ok();
}

Status shapeExpandDims(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& axes = n.attrs.get<AxesAttrs>().axes;
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size() + axes.size());
  std::vector<char> inserted(rank, 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, normalizeAxis(a, rank));
    if (inserted[ax]) return makeError(StatusCode::kInvalidArgument, "ExpandDims axis ", a, " given twice");
    inserted[ax] = 1;
  }
  Shape s;
  size_t src = 0;
  for (int64_t d = 0; d < rank; ++d) s.push_back(inserted[d] ? 1 : in[0]->shape[src++]);
  out = {s};
  return Status::Ok();
}

Status shapeSqueeze(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& x = in[0]->shape;
  const auto& axes = n.attrs.get<AxesAttrs>().axes;
  std::vector<char> drop(x.size(), 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, normalizeAxis(a, static_cast<int64_t>(x.size())));
    if (x[ax] != 1) {
      return makeError(StatusCode::kInvalidArgument, "Squeeze axis ", a, " has size ", x[ax], " in ",
                       shapeToString(x), "; only size-1 axes can be removed");
    }
    drop[ax] = 1;
  }
  Shape s;
  for (size_t d = 0; d < x.size(); ++d) {
    if (axes.empty() ? x[d] != 1 : !drop[d]) s.push_back(x[d]);
  }
  out = {s};
  return Status::Ok();
}

Status shapeBroadcastTo(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  Shape target = n.attrs.get<ShapeAttrs>().shape;
  const Shape& x = in[0]->shape;
  if (target.size() < x.size()) {
    return makeError(StatusCode::kInvalidArgument, "BroadcastTo target ", shapeToString(target), " has lower rank than ",
                     shapeToString(x));
  }
  const size_t lead = target.size() - x.size();
  for (size_t d = 0; d < target.size(); ++d) {
    const int64_t xd = d < lead ? 1 : x[d - lead];
    if (target[d] == -1) target[d] = xd;
    if (target[d] < 0 || (xd != 1 && xd != target[d])) {
      return makeError(StatusCode::kInvalidArgument, "cannot broadcast ", shapeToString(x), " to ",
                       shapeToString(n.attrs.get<ShapeAttrs>().shape));
    }
  }
  out = {target};
  return Status::Ok();
}
Status broadcastToKernel(const KernelContext& c) {
  forEachBroadcast<1>(c.out(0).shape, {&c.in(0).shape}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    copyElement(c.out(0), i, c.in(0), o[0]);
  });
  return Status::Ok();
}

StatusOr<Ints> transposePerm(const ir::Node& n, size_t rank) {
  Ints perm = n.attrs.get<PermAttrs>().perm;
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != rank) {
    return makeError(StatusCode::kInvalidArgument, "Transpose perm has ", perm.size(), " entries for rank ", rank);
  }
  std::vector<char> seen(rank, 0);
  for (int64_t& p : perm) {
    ASSIGN_OR_RETURN(p, normalizeAxis(p, static_cast<int64_t>(rank)));
    if (seen[p]) return makeError(StatusCode::kInvalidArgument, "Transpose perm repeats axis ", p);
    seen[p] = 1;
  }
  return perm;
}
Status shapeTranspose(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(Ints perm, transposePerm(n, in[0]->shape.size()));
  Shape s;
  for (int64_t p : perm) s.push_back(in[0]->shape[p]);
  out = {s};
  return Status::Ok();
}
Status transposeKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(Ints perm, transposePerm(c.node, c.in(0).shape.size()));
  gatherCopy(c.in(0), c.out(0), [&](const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[perm[d]];
    return off;
  });
  return Status::Ok();
}

Status shapeConcat(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& first = in[0]->shape;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(first.size())));
  Shape s = first;
  for (size_t k = 1; k < in.size(); ++k) {
    const Shape& x = in[k]->shape;
    bool ok = x.size() == first.size();
    for (size_t d = 0; ok && d < x.size(); ++d) ok = static_cast<int64_t>(d) == axis || x[d] == first[d];
    if (!ok) {
      return makeError(StatusCode::kInvalidArgument, "Concat input ", k, " has shape ", shapeToString(x),
                       ", input 0 has ", shapeToString(first), "; only axis ", axis, " may differ");
    }
    s[axis] += x[axis];
  }
  out = {s};
  return Status::Ok();
}
Status concatKernel(const KernelContext& c) {
  const int64_t axis = *normalizeAxis(c.node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(c.out(0).shape.size()));
  const AxisSplit o = splitAtAxis(c.out(0).shape, axis);
  const size_t es = dtypeSize(c.out(0).dtype);
  int64_t offset = 0;
  for (const TensorView& x : c.inputs) {
    const int64_t ext = x.shape[axis];
    for (int64_t outer = 0; outer < o.outer && ext * o.inner > 0; ++outer) {
      std::memcpy(static_cast<uint8_t*>(c.out(0).data) + ((outer * o.extent + offset) * o.inner) * es,
                  static_cast<const uint8_t*>(x.data) + outer * ext * o.inner * es, ext * o.inner * es);
    }
    offset += ext;
  }
  return Status::Ok();
}

StatusOr<Ints> splitSizes(const ir::Node& n, const Shape& x, int64_t* axis_out) {
  const auto& a = n.attrs.get<SplitAttrs>();
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(x.size())));
  const int64_t parts = static_cast<int64_t>(n.outputs.size());
  Ints sizes = a.sizes;
  if (sizes.empty()) {
    if (x[axis] % parts != 0) {
      return makeError(StatusCode::kInvalidArgument, "Split of ", x[axis], " into ", parts, " equal parts; give sizes");
    }
    sizes.assign(parts, x[axis] / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts) {
    return makeError(StatusCode::kInvalidArgument, "Split has ", sizes.size(), " sizes but ", parts, " outputs");
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return makeError(StatusCode::kInvalidArgument, "Split size ", s, " is negative");
    sum += s;
  }
  if (sum != x[axis]) {
    return makeError(StatusCode::kInvalidArgument, "Split sizes add up to ", sum, ", axis ", axis, " has ", x[axis]);
  }
  *axis_out = axis;
  return sizes;
}
Status shapeSplit(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  int64_t axis;
  ASSIGN_OR_RETURN(Ints sizes, splitSizes(n, in[0]->shape, &axis));
  out.clear();
  for (int64_t s : sizes) {
    Shape piece = in[0]->shape;
    piece[axis] = s;
    out.push_back(piece);
  }
  return Status::Ok();
}
Status splitKernel(const KernelContext& c) {
  int64_t axis;
  ASSIGN_OR_RETURN(Ints sizes, splitSizes(c.node, c.in(0).shape, &axis));
  const AxisSplit in = splitAtAxis(c.in(0).shape, axis);
  const size_t es = dtypeSize(c.in(0).dtype);
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    for (int64_t outer = 0; outer < in.outer && sizes[k] * in.inner > 0; ++outer) {
      std::memcpy(static_cast<uint8_t*>(c.out(k).data) + outer * sizes[k] * in.inner * es,
                  static_cast<const uint8_t*>(c.in(0).data) + ((outer * in.extent + offset) * in.inner) * es,
                  sizes[k] * in.inner * es);
    }
    offset += sizes[k];
  }
  return Status::Ok();
}

Status shapeTile(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Ints& m = n.attrs.get<TileAttrs>().multiples;
  const Shape& x = in[0]->shape;
  if (m.size() < x.size()) {
    return makeError(StatusCode::kInvalidArgument, "Tile multiples ", shapeToString(m), " shorter than rank of ",
                     shapeToString(x));
  }
  Shape s(m.size());
  const size_t lead = m.size() - x.size();
  for (size_t d = 0; d < m.size(); ++d) {
    if (m[d] < 0) return makeError(StatusCode::kInvalidArgument, "Tile multiple ", m[d], " is negative");
    if (__builtin_mul_overflow(d < lead ? int64_t{1} : x[d - lead], m[d], &s[d])) {
      return makeError(StatusCode::kInvalidArgument, "Tile multiple ", m[d], " of axis ", d, " overflows int64");
    }
  }
  out = {s};
  return Status::Ok();
}
Status tileKernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape;
  const size_t lead = c.out(0).shape.size() - x.size();
  gatherCopy(c.in(0), c.out(0), [&](const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
    int64_t off = 0;
    for (size_t d = 0; d < x.size(); ++d) off += (idx[d + lead] % x[d]) * st[d];
    return off;
  });
  return Status::Ok();
}

Status shapeRepeat(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<RepeatAttrs>();
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(in[0]->shape.size())));
  if (a.repeats < 0) return makeError(StatusCode::kInvalidArgument, "RepeatInterleaveInt repeats ", a.repeats, " < 0");
  Shape s = in[0]->shape;
  if (__builtin_mul_overflow(s[axis], a.repeats, &s[axis])) {
    return makeError(StatusCode::kInvalidArgument, "RepeatInterleaveInt repeats ", a.repeats, " overflow int64");
  }
  out = {s};
  return Status::Ok();
}
Status repeatKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<RepeatAttrs>();
  const int64_t axis = *normalizeAxis(a.axis, static_cast<int64_t>(c.in(0).shape.size()));
  gatherCopy(c.in(0), c.out(0), [&](const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int64_t>(d) == axis ? idx[d] / a.repeats : idx[d]) * st[d];
    return off;
  });
  return Status::Ok();
}

Status shapeFill(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  if (numElements(in[0]->shape) != 1) {
    return makeError(StatusCode::kInvalidArgument, "FillV2 value must hold one element, got ", shapeToString(in[0]->shape));
  }
  for (int64_t d : n.attrs.get<ShapeAttrs>().shape) {
    if (d < 0) return makeError(StatusCode::kInvalidArgument, "FillV2 shape has negative dim ", d);
  }
  out = {n.attrs.get<ShapeAttrs>().shape};
  return Status::Ok();
}
Status fillKernel(const KernelContext& c) {
  for (int64_t i = 0, n = c.out(0).size(); i < n; ++i) copyElement(c.out(0), i, c.in(0), 0);
  return Status::Ok();
}

}  // namespace

void registerLayoutOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Reshape")) t.push_back({"Reshape", OpClass::kReshape, 1, 1, 1, 1, AttrKind::kShape, dtypeFirst, shapeReshape, copyKernel,
               "same elements, new shape (one -1 inferred)"});
  if constexpr (opSelected("ExpandDims")) t.push_back({"ExpandDims", OpClass::kReshape, 1, 1, 1, 1, AttrKind::kAxes, dtypeFirst, shapeExpandDims, copyKernel,
               "insert size-1 axes at the output positions `axes`"});
  if constexpr (opSelected("Squeeze")) t.push_back({"Squeeze", OpClass::kReshape, 1, 1, 1, 1, AttrKind::kAxes, dtypeFirst, shapeSqueeze, copyKernel,
               "remove size-1 axes (all when `axes` is empty)"});
  if constexpr (opSelected("BroadcastTo")) t.push_back({"BroadcastTo", OpClass::kBroadcast, 1, 1, 1, 1, AttrKind::kShape, dtypeFirst, shapeBroadcastTo,
               broadcastToKernel, "numpy broadcast to `shape` (-1 keeps the input dim)"});
  if constexpr (opSelected("Transpose")) t.push_back({"Transpose", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPerm, dtypeFirst, shapeTranspose, transposeKernel,
               "out dim d = in dim perm[d] (empty perm reverses)"});
  if constexpr (opSelected("Concat")) t.push_back({"Concat", OpClass::kOpaque, 1, kVariadic, 1, 1, AttrKind::kAxis, dtypeAnySame, shapeConcat,
               concatKernel, "join inputs along axis"});
  if constexpr (opSelected("Split")) t.push_back({"Split", OpClass::kOpaque, 1, 1, 1, 1024, AttrKind::kSplit, dtypeFirst, shapeSplit, splitKernel,
               "cut along axis into `sizes` (equal parts when empty)"});
  if constexpr (opSelected("Tile")) t.push_back({"Tile", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kTile, dtypeFirst, shapeTile, tileKernel,
               "repeat the whole tensor `multiples` times per axis"});
  if constexpr (opSelected("RepeatInterleaveInt")) t.push_back({"RepeatInterleaveInt", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kRepeat, dtypeFirst, shapeRepeat,
               repeatKernel, "repeat each element `repeats` times along axis"});
  if constexpr (opSelected("FillV2")) t.push_back({"FillV2", OpClass::kBroadcast, 1, 1, 1, 1, AttrKind::kShape, dtypeFirst, shapeFill, fillKernel,
               "tensor of `shape` filled with the one-element input"});
}

}  // namespace gkrt::ops
