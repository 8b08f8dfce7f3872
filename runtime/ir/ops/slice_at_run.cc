// SliceAtRun: ONNX Slice whose starts and ends are tensors computed at run, such as a
// Loop body slicing with its iteration counter (x[i : i + 1]). A plan's shapes are
// fixed when it is compiled, so the number of elements kept on each sliced axis
// (`sizes`) is an attribute, set when the model is made (the converter proves ends -
// starts is a constant, runtime/ir/value_offsets.h). The kernel reads starts and ends,
// clamps them as ONNX does, and fails, naming the axis and the values, when they select
// another count (a slice running off the tensor's edge): never a recompile per value.
#include <cstring>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

// The kernel indexes with fixed arrays (no allocation at run).
constexpr size_t kMaxRank = 8;

struct SlicedAxis {
  int64_t axis, step, size;
};

// The attributes checked against x's rank: one entry per sliced axis.
StatusOr<std::vector<SlicedAxis>> slicedAxes(const ir::Node& n, size_t rank) {
  const auto& a = n.attrs.get<SliceAtRunAttrs>();
  const size_t k = a.sizes.size();
  if ((!a.axes.empty() && a.axes.size() != k) || (!a.steps.empty() && a.steps.size() != k)) {
    return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': axes (", a.axes.size(), ") and steps (",
                     a.steps.size(), ") must be empty or list one value per size (", k, ")");
  }
  if (rank > kMaxRank) {
    return makeError(StatusCode::kUnsupported, "SliceAtRun '", n.name, "': input rank ", rank, " exceeds ", kMaxRank);
  }
  std::vector<SlicedAxis> out;
  std::vector<char> seen(rank, 0);
  for (size_t j = 0; j < k; ++j) {
    ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axes.empty() ? static_cast<int64_t>(j) : a.axes[j],
                                                 static_cast<int64_t>(rank)));
    if (seen[size_t(axis)]) return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': axis ", axis, " given twice");
    seen[size_t(axis)] = 1;
    const int64_t step = a.steps.empty() ? 1 : a.steps[j];
    if (step == 0) return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': step is 0 on axis ", axis);
    if (a.sizes[j] < 0) {
      return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': size ", a.sizes[j], " on axis ", axis);
    }
    out.push_back({axis, step, a.sizes[j]});
  }
  return out;
}

Status dtypeSliceAtRun(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 1; k < 3; ++k) {
    if (in[k]->dtype != DType::kInt64 && in[k]->dtype != DType::kInt32) {
      return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': ", k == 1 ? "starts" : "ends",
                       " must be int64 or int32, got ", dtypeName(in[k]->dtype));
    }
  }
  out = {in[0]->dtype};
  return Status::Ok();
}

Status shapeSliceAtRun(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Shape& x = in[0]->shape;
  ASSIGN_OR_RETURN(auto axes, slicedAxes(n, x.size()));
  for (size_t k = 1; k < 3; ++k) {
    if (in[k]->shape.size() > 1 || numElements(in[k]->shape) != static_cast<int64_t>(axes.size())) {
      return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': ", k == 1 ? "starts" : "ends",
                       " has shape ", shapeToString(in[k]->shape), "; it must list one value per sliced axis (",
                       axes.size(), ")");
    }
  }
  Shape s = x;
  for (const SlicedAxis& a : axes) {
    const int64_t dim = x[size_t(a.axis)], step = a.step < 0 ? -a.step : a.step;
    if (dim >= 0 && a.size > (dim + step - 1) / step) {
      return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", n.name, "': keeps ", a.size, " elements of axis ",
                       a.axis, " (step ", a.step, "), which has only ", dim, ": no starts can select them");
    }
    s[size_t(a.axis)] = a.size;
  }
  out = {s};
  return Status::Ok();
}

Status sliceAtRunKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const size_t rank = x.shape.size(), es = dtypeSize(x.dtype);
  const auto& attrs = c.node.attrs.get<SliceAtRunAttrs>();
  int64_t start[kMaxRank], step[kMaxRank], count[kMaxRank], stride[kMaxRank];
  for (size_t d = 0; d < rank; ++d) {
    start[d] = 0;
    step[d] = 1;
    count[d] = x.shape[d];
  }
  for (size_t j = 0; j < attrs.sizes.size(); ++j) {
    const int64_t axis = attrs.axes.empty() ? static_cast<int64_t>(j)
                                            : (attrs.axes[j] < 0 ? attrs.axes[j] + static_cast<int64_t>(rank) : attrs.axes[j]);
    const int64_t dim = x.shape[size_t(axis)], st = attrs.steps.empty() ? 1 : attrs.steps[j];
    const int64_t b0 = loadIndex(c.in(1), static_cast<int64_t>(j)), e0 = loadIndex(c.in(2), static_cast<int64_t>(j));
    int64_t b = b0 < 0 ? b0 + dim : b0, e = e0 < 0 ? e0 + dim : e0, n;
    if (st > 0) {  // ONNX clamping, as StridedSlice
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = b > e ? (b - e - st - 1) / (-st) : 0;
    }
    if (n != attrs.sizes[j]) {
      return makeError(StatusCode::kInvalidArgument, "SliceAtRun '", c.node.name, "': starts ", b0, " and ends ", e0,
                       " select ", n, " elements of axis ", axis, " (size ", dim, ", step ", st, "), but its output "
                       "was sized for ", attrs.sizes[j], " when the model was made (ends - starts fixed there); the "
                       "slice runs off the tensor's edge");
    }
    start[size_t(axis)] = b;
    step[size_t(axis)] = st;
    count[size_t(axis)] = n;
  }
  int64_t s = static_cast<int64_t>(es);
  for (size_t d = rank; d-- > 0;) {
    stride[d] = s;
    s *= x.shape[d];
  }
  const int64_t total = c.out(0).size();
  if (total == 0) return Status::Ok();
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(c.out(0).data);
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return Status::Ok();
  }
  // Rows along the last axis; an odometer over the others.
  const size_t last = rank - 1;
  const int64_t row = count[last];
  int64_t idx[kMaxRank] = {};
  for (int64_t done = 0; done < total; done += row) {
    int64_t off = 0;
    for (size_t d = 0; d < last; ++d) off += (start[d] + idx[d] * step[d]) * stride[d];
    const uint8_t* from = src + off + start[last] * stride[last];
    if (step[last] == 1) {
      std::memcpy(dst, from, static_cast<size_t>(row) * es);
      dst += row * static_cast<int64_t>(es);
    } else {
      for (int64_t i = 0; i < row; ++i, dst += es) std::memcpy(dst, from + i * step[last] * stride[last], es);
    }
    for (size_t d = last; d-- > 0;) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

void registerSliceAtRunOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("SliceAtRun")) t.push_back({"SliceAtRun", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kSliceAtRun,
      dtypeSliceAtRun, shapeSliceAtRun, sliceAtRunKernel,
      "ONNX Slice(x, starts, ends) with starts/ends read at run; sizes[j] elements kept on axes[j] (fixed "
      "when the model is made), an error if the clamped bounds select another count"});
}

}  // namespace gkrt::ops
