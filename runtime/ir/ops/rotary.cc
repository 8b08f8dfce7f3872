// Rotary (runtime/ir/ops/rotary.h): rules and the reference kernel.
#include "runtime/ir/ops/rotary.h"

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

StatusOr<RotaryRows> rotaryRows(const Shape& x, const Shape& cos, const Shape& sin) {
  if (x.empty() || x.back() % 2 != 0 || x.back() <= 0) {
    return makeError(StatusCode::kInvalidArgument, "Rotary x ", shapeToString(x), " needs an even last dim");
  }
  if (cos != sin) return makeError(StatusCode::kInvalidArgument, "Rotary cos ", shapeToString(cos), " and sin ", shapeToString(sin), " differ");
  RotaryRows r;
  r.dim = x.back();
  r.angles = cos.empty() ? 0 : cos.back();
  if (cos.size() > x.size() || (r.angles != r.dim && r.angles != r.dim / 2)) {
    return makeError(StatusCode::kInvalidArgument, "Rotary cos/sin ", shapeToString(cos), " must broadcast to x ", shapeToString(x),
                     " with a last dim of ", r.dim, " or ", r.dim / 2);
  }
  Shape lead_x(x.begin(), x.end() - 1), lead_c(cos.begin(), cos.end() - 1);
  auto b = broadcastShapes(lead_c, lead_x);
  if (!b.ok() || *b != lead_x) {
    return makeError(StatusCode::kInvalidArgument, "Rotary cos/sin ", shapeToString(cos), " do not broadcast to x ", shapeToString(x));
  }
  r.rows = numElements(lead_x);
  const std::vector<int64_t> strides = broadcastStrides(lead_c, lead_x);  // cos rows per x index
  r.angle_row.resize(size_t(r.rows));
  for (int64_t row = 0; row < r.rows; ++row) {
    int64_t rem = row, off = 0;
    for (size_t d = lead_x.size(); d-- > 0;) {
      off += (rem % lead_x[d]) * strides[d];
      rem /= lead_x[d];
    }
    r.angle_row[size_t(row)] = off * r.angles;
  }
  return r;
}

namespace {

Status dtypeRotary(const ir::Node& n, const In& in, std::vector<DType>& out) {
  for (size_t k = 0; k < 3; ++k) {
    RETURN_IF_ERROR(requireFloat(n, in[k], k));
    if (in[k]->dtype != in[0]->dtype) {
      return makeError(StatusCode::kInvalidArgument, "Rotary input ", k, " is ", dtypeName(in[k]->dtype), ", x is ", dtypeName(in[0]->dtype));
    }
  }
  out = {in[0]->dtype};
  return Status::Ok();
}

Status shapeRotary(const ir::Node&, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(rotaryRows(in[0]->shape, in[1]->shape, in[2]->shape).status());
  out = {in[0]->shape};
  return Status::Ok();
}

Status rotaryKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(RotaryRows r, rotaryRows(c.in(0).shape, c.in(1).shape, c.in(2).shape));
  const DType t = c.in(0).dtype;
  const int64_t h = r.dim / 2;
  for (int64_t row = 0; row < r.rows; ++row) {
    const int64_t xo = row * r.dim, co = r.angle_row[size_t(row)];
    for (int64_t j = 0; j < r.dim; ++j) {
      const int64_t a = co + (r.angles == h ? j % h : j);
      const double x = loadF(c.in(0).data, t, xo + j);
      const double rot = j < h ? -double(loadF(c.in(0).data, t, xo + j + h)) : double(loadF(c.in(0).data, t, xo + j - h));
      storeF(c.out(0).data, t, xo + j, static_cast<float>(x * loadF(c.in(1).data, t, a) + rot * loadF(c.in(2).data, t, a)));
    }
  }
  return Status::Ok();
}

}  // namespace

void registerRotaryOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Rotary")) t.push_back({"Rotary", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kNone, dtypeRotary, shapeRotary,
               rotaryKernel, "(x, cos, sin) -> x * cos + rotate_half(x) * sin, cos/sin of D or D/2 angles (gkrt's own)"});
}

}  // namespace gkrt::ops
