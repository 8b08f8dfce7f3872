// 3-D pooling (ONNX MaxPool/AveragePool/LpPool on NCDHW inputs): MaxPool3D, AvgPool3D.
// PoolAttrs with three kernel/stride/dilation values and six pads {begin..., end...}.
// Reference kernels only: every backend runs them through its fallback.
#include <limits>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

struct Window3D {
  int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
};

Window3D window(const PoolAttrs& a) {
  Window3D w;
  for (int d = 0; d < 3; ++d) {
    w.kernel[d] = a.kernel[size_t(d)];
    w.stride[d] = a.strides[size_t(d)];
    w.dilation[d] = a.dilations.empty() ? 1 : a.dilations[size_t(d)];
    w.pad_begin[d] = a.pads[size_t(d)];
    w.pad_end[d] = a.pads[size_t(d) + 3];
  }
  return w;
}

Status checkList(const ir::Node& n, const Ints& v, size_t count, const char* what, int64_t min, bool may_be_empty) {
  if (v.empty() && may_be_empty) return Status::Ok();
  if (v.size() != count) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " '", n.name, "': ", what, " needs ", count,
                     " values, got ", v.size());
  }
  for (int64_t x : v) {
    if (x < min) return makeError(StatusCode::kInvalidArgument, n.op->name, " '", n.name, "': ", what, " value ", x, " is below ", min);
    // at most 2^31: with dims of at most 2^40 elements the window arithmetic stays in int64
    if (x > (int64_t{1} << 31)) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " '", n.name, "': ", what, " value ", x, " is above 2^31");
    }
  }
  return Status::Ok();
}

Status shapePool3D(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<PoolAttrs>();
  const Shape& x = in[0]->shape;
  RETURN_IF_ERROR(checkList(n, a.kernel, 3, "kernel", 1, false));
  RETURN_IF_ERROR(checkList(n, a.strides, 3, "strides", 1, false));
  RETURN_IF_ERROR(checkList(n, a.dilations, 3, "dilations", 1, true));
  RETURN_IF_ERROR(checkList(n, a.pads, 6, "pads", 0, false));
  if (x.size() != 5) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " '", n.name, "' needs an NCDHW input, got ", shapeToString(x));
  }
  const Window3D w = window(a);
  Shape y{x[0], x[1], 0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    const int64_t reach = w.dilation[d] * (w.kernel[d] - 1) + 1;  // the dilated window's extent
    const int64_t span = x[size_t(2 + d)] + w.pad_begin[d] + w.pad_end[d] - reach;
    if (span < 0) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " '", n.name, "': window ", reach, " exceeds padded input ",
                       x[size_t(2 + d)] + w.pad_begin[d] + w.pad_end[d], " on spatial axis ", d);
    }
    int64_t len = (a.ceil_mode ? (span + w.stride[d] - 1) / w.stride[d] : span / w.stride[d]) + 1;
    if (a.ceil_mode && (len - 1) * w.stride[d] >= x[size_t(2 + d)] + w.pad_begin[d]) --len;  // starts inside
    y[size_t(2 + d)] = len;
  }
  out = {y};
  return Status::Ok();
}

// Max over the taps inside the input; average over them (count_include_pad: over the
// taps inside the padded input).
template <bool kMax> Status pool3DKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<PoolAttrs>();
  const Window3D w = window(a);
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t in[3] = {x.shape[2], x.shape[3], x.shape[4]}, out[3] = {y.shape[2], y.shape[3], y.shape[4]};
  int64_t dst = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o0 = 0; o0 < out[0]; ++o0) {
      for (int64_t o1 = 0; o1 < out[1]; ++o1) {
        for (int64_t o2 = 0; o2 < out[2]; ++o2, ++dst) {
          const int64_t o[3] = {o0, o1, o2};
          int64_t start[3];
          for (int d = 0; d < 3; ++d) start[d] = o[d] * w.stride[d] - w.pad_begin[d];
          double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t inside = 0, padded = 0;
          for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
            const int64_t i0 = start[0] + k0 * w.dilation[0];
            if (i0 >= in[0] + w.pad_end[0]) break;
            for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
              const int64_t i1 = start[1] + k1 * w.dilation[1];
              if (i1 >= in[1] + w.pad_end[1]) break;
              for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                const int64_t i2 = start[2] + k2 * w.dilation[2];
                if (i2 >= in[2] + w.pad_end[2]) break;
                ++padded;
                if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= in[0] || i1 >= in[1] || i2 >= in[2]) continue;
                const double v = loadF(x.data, x.dtype, ((p * in[0] + i0) * in[1] + i1) * in[2] + i2);
                acc = kMax ? std::max(acc, v) : acc + v;
                ++inside;
              }
            }
          }
          if (!kMax) acc /= static_cast<double>(std::max<int64_t>(a.count_include_pad ? padded : inside, 1));
          storeF(y.data, y.dtype, dst, static_cast<float>(acc));
        }
      }
    }
  }
  return Status::Ok();
}

Status dtypePool3D(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (std::string(n.op->name) == "AvgPool3D") RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  return dtypeNumericSame(n, in, out);
}

}  // namespace

void registerPool3DOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("MaxPool3D")) t.push_back({"MaxPool3D", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPool, dtypePool3D,
      shapePool3D, pool3DKernel<true>, "NCDHW max pooling (kernel, strides, dilations, pads, ceil_mode)"});
  if constexpr (opSelected("AvgPool3D")) t.push_back({"AvgPool3D", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kPool, dtypePool3D,
      shapePool3D, pool3DKernel<false>, "NCDHW average pooling; count_include_pad counts the pads"});
}

}  // namespace gkrt::ops
