// ConvTranspose (ONNX): the gradient of a convolution with respect to its input, over
// 1 to 3 spatial axes. Each input element scatters x * w into the output window it
// reaches: out[i * stride + k * dilation - pad_begin] += x[i] * w[k].
#include <algorithm>
#include <cstdint>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status checkList(const Ints& v, size_t n, const char* what, int64_t min) {
  if (v.size() != n) {
    return makeError(StatusCode::kInvalidArgument, "ConvTranspose ", what, " needs ", n, " values, got ", v.size());
  }
  for (int64_t x : v) {
    if (x < min) return makeError(StatusCode::kInvalidArgument, "ConvTranspose ", what, " value ", x, " is below ", min);
    // |value| <= 2^31 with dims of at most 2^40 elements keeps the output length in int64
    if (x > (int64_t{1} << 31) || x < -(int64_t{1} << 31)) {
      return makeError(StatusCode::kInvalidArgument, "ConvTranspose ", what, " value ", x, " is beyond 2^31");
    }
  }
  return Status::Ok();
}

Status dtypeConvTranspose(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k]) RETURN_IF_ERROR(requireFloat(n, in[k], k));
  }
  out = {in[0]->dtype};
  return Status::Ok();
}

Status shapeConvTranspose(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<ConvTransposeAttrs>();
  const Shape &x = in[0]->shape, &w = in[1]->shape;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
    return makeError(StatusCode::kInvalidArgument, "ConvTranspose needs an input N, C, spatial... with 1 to 3 spatial "
                     "axes and weights of the same rank, got ", shapeToString(x), " and ", shapeToString(w));
  }
  const size_t sp = x.size() - 2;
  RETURN_IF_ERROR(checkList(a.strides, sp, "strides", 1));
  RETURN_IF_ERROR(checkList(a.dilations, sp, "dilations", 1));
  RETURN_IF_ERROR(checkList(a.pads, 2 * sp, "pads", INT64_MIN));  // negative: output beyond the input's reach
  RETURN_IF_ERROR(checkList(a.output_padding, sp, "output_padding", 0));
  if (a.groups < 1 || a.groups > (int64_t{1} << 31) || x[1] % a.groups != 0 || w[0] != x[1]) {
    return makeError(StatusCode::kInvalidArgument, "ConvTranspose groups=", a.groups, " and weights ", shapeToString(w),
                     " do not fit ", x[1], " input channels (weights are {C, M/groups, k...})");
  }
  const int64_t m = w[1] * a.groups;
  if (in.size() > 2 && in[2] && numElements(in[2]->shape) != m) {
    return makeError(StatusCode::kInvalidArgument, "ConvTranspose bias has ", numElements(in[2]->shape), " elements, needs ", m);
  }
  Shape y{x[0], m};
  for (size_t d = 0; d < sp; ++d) {
    int64_t reach = 0, span = 0, len = 0;
    if (__builtin_mul_overflow(a.strides[d], x[2 + d] - 1, &reach) ||
        __builtin_mul_overflow(a.dilations[d], w[2 + d] - 1, &span) ||
        __builtin_add_overflow(reach, span, &len)) {
      return makeError(StatusCode::kInvalidArgument, "ConvTranspose output axis ", d, " overflows int64");
    }
    len += a.output_padding[d] + 1 - a.pads[d] - a.pads[d + sp];
    if (len <= 0) {
      return makeError(StatusCode::kInvalidArgument, "ConvTranspose output axis ", d, " would have length ", len,
                       "; the pads are larger than the output");
    }
    y.push_back(len);
  }
  out = {y};
  return Status::Ok();
}

// The spatial axes as three (leading ones for 1-D and 2-D).
struct Dims3 { int64_t v[3] = {1, 1, 1}; };
Dims3 spatial3(const Shape& s) {
  Dims3 d;
  const size_t sp = s.size() - 2;
  for (size_t k = 0; k < sp; ++k) d.v[3 - sp + k] = s[2 + k];
  return d;
}
Dims3 list3(const Ints& v, size_t offset, size_t sp, int64_t fill) {
  Dims3 d;
  for (int k = 0; k < 3; ++k) d.v[k] = fill;
  for (size_t k = 0; k < sp; ++k) d.v[3 - sp + k] = v[offset + k];
  return d;
}

Status convTransposeKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<ConvTransposeAttrs>();
  const TensorView &x = c.in(0), &w = c.in(1);
  const TensorView* b = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const MutableTensorView& y = c.out(0);
  const size_t sp = x.shape.size() - 2;
  const Dims3 in = spatial3(x.shape), k = spatial3(w.shape), o = spatial3(y.shape);
  const Dims3 st = list3(a.strides, 0, sp, 1), dil = list3(a.dilations, 0, sp, 1), pad = list3(a.pads, 0, sp, 0);
  const int64_t N = x.shape[0], C = x.shape[1], MG = w.shape[1], G = a.groups, CG = C / G, M = MG * G;
  const int64_t in_plane = in.v[0] * in.v[1] * in.v[2], k_plane = k.v[0] * k.v[1] * k.v[2];
  const int64_t out_plane = o.v[0] * o.v[1] * o.v[2];
  std::vector<double> acc(static_cast<size_t>(out_plane));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t m = 0; m < MG; ++m) {
        const int64_t oc = g * MG + m;
        std::fill(acc.begin(), acc.end(), b ? loadF(b->data, b->dtype, oc) : 0.0);
        for (int64_t ci = 0; ci < CG; ++ci) {
          const int64_t ic = g * CG + ci;
          const int64_t x_base = (n * C + ic) * in_plane, w_base = (ic * MG + m) * k_plane;
          for (int64_t i0 = 0; i0 < in.v[0]; ++i0)
            for (int64_t i1 = 0; i1 < in.v[1]; ++i1)
              for (int64_t i2 = 0; i2 < in.v[2]; ++i2) {
                const double xv = loadF(x.data, x.dtype, x_base + (i0 * in.v[1] + i1) * in.v[2] + i2);
                for (int64_t k0 = 0; k0 < k.v[0]; ++k0) {
                  const int64_t o0 = i0 * st.v[0] + k0 * dil.v[0] - pad.v[0];
                  if (o0 < 0 || o0 >= o.v[0]) continue;
                  for (int64_t k1 = 0; k1 < k.v[1]; ++k1) {
                    const int64_t o1 = i1 * st.v[1] + k1 * dil.v[1] - pad.v[1];
                    if (o1 < 0 || o1 >= o.v[1]) continue;
                    for (int64_t k2 = 0; k2 < k.v[2]; ++k2) {
                      const int64_t o2 = i2 * st.v[2] + k2 * dil.v[2] - pad.v[2];
                      if (o2 < 0 || o2 >= o.v[2]) continue;
                      acc[(o0 * o.v[1] + o1) * o.v[2] + o2] +=
                          xv * loadF(w.data, w.dtype, w_base + (k0 * k.v[1] + k1) * k.v[2] + k2);
                    }
                  }
                }
              }
        }
        const int64_t y_base = (n * M + oc) * out_plane;
        for (int64_t i = 0; i < out_plane; ++i) storeF(y.data, y.dtype, y_base + i, static_cast<float>(acc[i]));
      }
  return Status::Ok();
}

}  // namespace

void registerConvTransposeOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("ConvTranspose")) {
    t.push_back({"ConvTranspose", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kConvTranspose,
               dtypeConvTranspose, shapeConvTranspose, convTransposeKernel,
               "transposed convolution over 1-3 spatial axes; weights {C, M/groups, k...}, optional bias {M}"});
    t.back().product_inputs = 0b110;
  }
}

}  // namespace gkrt::ops
