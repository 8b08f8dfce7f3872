#include "runtime/ir/ops/op_helpers.h"

#include <algorithm>
#include <cmath>

namespace gkrt::ops {

Status requireSameDType(const ir::Node& n, const In& in, size_t first, size_t last) {
  const TensorType* ref = nullptr;
  for (size_t k = first; k < last && k < in.size(); ++k) {
    if (!in[k]) continue;
    if (!ref) { ref = in[k]; continue; }
    if (in[k]->dtype != ref->dtype) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " is ", dtypeName(in[k]->dtype),
                       " but input ", first, " is ", dtypeName(ref->dtype), "; insert a Cast");
    }
  }
  return Status::Ok();
}

Status requireFloat(const ir::Node& n, const TensorType* t, size_t index) {
  if (t && !isFloat(t->dtype)) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", index, " must be float32 or float16, got ",
                     dtypeName(t->dtype));
  }
  return Status::Ok();
}

static std::vector<DType> repeat(DType t, const ir::Node& n) { return std::vector<DType>(n.op->max_outputs, t); }

Status dtypeFloatSame(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireSameDType(n, in, 0, in.size()));
  RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  out = repeat(in[0]->dtype, n);
  return Status::Ok();
}

Status rejectStorageOnly(const ir::Node& n, const In& in) {
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] && isStorageOnly(in[k]->dtype)) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " is ", dtypeName(in[k]->dtype),
                       ", a storage-only type (ONNX defines no arithmetic or comparison on it); Cast it to a ",
                       "float or integer type first");
    }
  }
  return Status::Ok();
}

Status dtypeComputeSame(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(rejectStorageOnly(n, in));
  return dtypeAnySame(n, in, out);
}

Status dtypeNumericSame(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(rejectStorageOnly(n, in));
  RETURN_IF_ERROR(requireSameDType(n, in, 0, in.size()));
  if (in[0]->dtype == DType::kBool) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " does not take bool inputs; Cast them first");
  }
  out = repeat(in[0]->dtype, n);
  return Status::Ok();
}

Status dtypeAnySame(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireSameDType(n, in, 0, in.size()));
  out = repeat(in[0]->dtype, n);
  return Status::Ok();
}

Status dtypeCompare(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(rejectStorageOnly(n, in));
  RETURN_IF_ERROR(requireSameDType(n, in, 0, in.size()));
  out = repeat(DType::kBool, n);
  return Status::Ok();
}

Status dtypeLogical(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] && in[k]->dtype != DType::kBool) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " must be bool, got ",
                       dtypeName(in[k]->dtype));
    }
  }
  out = repeat(DType::kBool, n);
  return Status::Ok();
}

Status dtypeFloatToBool(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  out = repeat(DType::kBool, n);
  return Status::Ok();
}

Status dtypeFirst(const ir::Node& n, const In& in, std::vector<DType>& out) {
  out = repeat(in[0]->dtype, n);
  return Status::Ok();
}

Status shapeSame(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  out.assign(n.op->max_outputs, in[0]->shape);
  return Status::Ok();
}

Status shapeBroadcast(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  Shape s = in[0]->shape;
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k]) continue;
    auto b = broadcastShapes(s, in[k]->shape);
    if (!b.ok()) return b.status().withContext(std::string(n.op->name) + " input " + std::to_string(k));
    s = *b;
  }
  out.assign(n.op->max_outputs, s);
  return Status::Ok();
}

Status shapeScalar(const ir::Node& n, const In&, std::vector<Shape>& out) {
  out.assign(n.op->max_outputs, Shape{});
  return Status::Ok();
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = contiguousStrides(in);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[lead + d] = in[d] == 1 ? 0 : own[d];
  return st;
}

StatusOr<std::vector<int64_t>> reduceAxes(const Ints& axes, int64_t rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, normalizeAxis(a, rank));
    out.push_back(ax);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Shape reducedShape(const Shape& in, const std::vector<int64_t>& axes, bool keep_dims) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(in[d]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

void batchNormAffine(const std::vector<float>& gamma, const std::vector<float>& beta, const std::vector<float>& mean,
                     const std::vector<float>& var, float eps, std::vector<float>* scale, std::vector<float>* shift) {
  scale->resize(gamma.size());
  shift->resize(gamma.size());
  for (size_t c = 0; c < gamma.size(); ++c) {
    const double s = gamma[c] / std::sqrt(static_cast<double>(var[c]) + eps);
    (*scale)[c] = static_cast<float>(s);
    (*shift)[c] = static_cast<float>(beta[c] - mean[c] * s);
  }
}

AxisSplit splitAtAxis(const Shape& shape, int64_t axis) {
  AxisSplit s{1, 1, 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.extent = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

StatusOr<NormRows> normRowsOf(const ir::Node& n, const Shape& shape) {
  auto axis = normalizeAxis(n.attrs.get<NormAttrs>().axis, static_cast<int64_t>(shape.size()));
  if (!axis.ok()) return axis.status().withContext(n.op ? n.op->name : "norm");
  NormRows r{1, 1, *axis};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) (d < *axis ? r.rows : r.cols) *= shape[d];
  return r;
}

}  // namespace gkrt::ops
