// Reductions: ReduceSum/Mean/Max/Min/Prod, ArgMax/ArgMin (+WithValue), CumSum,
// SquareSumAll, EqualCount, BiasAddGrad, MaximumGrad/MinimumGrad.
// Float sums accumulate in double.
#include <cmath>
#include <limits>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

Status shapeReduce(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<AxesAttrs>();
  ASSIGN_OR_RETURN(auto axes, reduceAxes(a.axes, static_cast<int64_t>(in[0]->shape.size())));
  out = {reducedShape(in[0]->shape, axes, a.keep_dims)};
  return Status::Ok();
}

// Reduces `x` over `axes` into `out` (dtype of out), visiting input elements in order.
void reduceInto(const TensorView& x, const std::vector<int64_t>& axes, ReduceKind kind, const MutableTensorView& y) {
  const Shape kept = reducedShape(x.shape, axes, /*keep_dims=*/true);
  const int64_t n_out = numElements(kept);
  const bool is_max = kind == ReduceKind::kMax, is_min = kind == ReduceKind::kMin;
  std::vector<double> acc(n_out, kind == ReduceKind::kProd ? 1.0
                                  : is_max ? -std::numeric_limits<double>::infinity()
                                  : is_min ? std::numeric_limits<double>::infinity() : 0.0);
  std::vector<int64_t> acc_i(n_out, kind == ReduceKind::kProd ? 1 : 0);
  const bool exact_int = isInteger(x.dtype) && isInteger(y.dtype);
  std::vector<char> seen(n_out, 0);
  forEachBroadcast<1>(x.shape, {&kept}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    const int64_t j = o[0];
    if (exact_int) {
      const int64_t v = loadIndex(x, i);
      switch (kind) {
        case ReduceKind::kSum: case ReduceKind::kMean: acc_i[j] += v; break;
        case ReduceKind::kProd: acc_i[j] *= v; break;
        case ReduceKind::kMax: acc_i[j] = seen[j] ? std::max(acc_i[j], v) : v; break;
        case ReduceKind::kMin: acc_i[j] = seen[j] ? std::min(acc_i[j], v) : v; break;
      }
      seen[j] = 1;
      return;
    }
    const double v = x.dtype == DType::kFloat64 ? x.as<double>()[i] : loadF(x.data, x.dtype, i);
    switch (kind) {
      case ReduceKind::kSum: case ReduceKind::kMean: acc[j] += v; break;
      case ReduceKind::kProd: acc[j] *= v; break;
      case ReduceKind::kMax: acc[j] = (std::isnan(v) || v > acc[j]) ? v : acc[j]; break;
      case ReduceKind::kMin: acc[j] = (std::isnan(v) || v < acc[j]) ? v : acc[j]; break;
    }
  });
  int64_t count = 1;
  for (int64_t a : axes) count *= x.shape[a];
  for (int64_t j = 0; j < n_out; ++j) {
    if (exact_int) {
      int64_t v = kind == ReduceKind::kMean ? (count ? acc_i[j] / count : 0) : acc_i[j];
      if (count == 0 && (is_max || is_min)) {  // empty set: the type's lowest / highest
        withIntegerType(y.dtype, [&](auto tag) {
          using T = decltype(tag);
          y.as<T>()[j] = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        });
        continue;
      }
      withIntegerType(y.dtype, [&](auto tag) { y.as<decltype(tag)>()[j] = static_cast<decltype(tag)>(v); });
      continue;
    }
    double v = kind == ReduceKind::kMean ? acc[j] / static_cast<double>(count) : acc[j];
    if (count == 0 && (is_max || is_min) && y.dtype == DType::kBool) v = is_min ? 1 : 0;
    if (y.dtype == DType::kFloat64) {
      y.as<double>()[j] = v;
      continue;
    }
    storeF(y.data, y.dtype, j, static_cast<float>(v));
  }
}

template <ReduceKind K> Status reduceKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<AxesAttrs>();
  ASSIGN_OR_RETURN(auto axes, reduceAxes(a.axes, static_cast<int64_t>(c.in(0).shape.size())));
  reduceInto(c.in(0), axes, K, c.out(0));
  return Status::Ok();
}

// ---- ArgMax / ArgMin -----------------------------------------------------------
Status shapeArg(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const auto& a = n.attrs.get<AxisAttrs>();
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(in[0]->shape.size())));
  if (!in[0]->shape.empty() && in[0]->shape[axis] == 0) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " over an empty axis ", axis);
  }
  Shape s = in[0]->shape.empty() ? Shape{} : reducedShape(in[0]->shape, {axis}, a.keep_dims);
  out = {s, s};
  return Status::Ok();
}
Status dtypeArg(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (in[0]->dtype == DType::kBool) return makeError(StatusCode::kInvalidArgument, n.op->name, " does not take bool");
  out = {DType::kInt64, in[0]->dtype};
  return Status::Ok();
}
template <bool kMax> Status argKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  int64_t axis = 0;
  if (!x.shape.empty()) axis = *normalizeAxis(c.node.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(x.shape.size()));
  const AxisSplit s = x.shape.empty() ? AxisSplit{1, 1, 1} : splitAtAxis(x.shape, axis);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t best = 0;
      float best_v = loadF(x.data, x.dtype, o * s.extent * s.inner + in);
      for (int64_t e = 1; e < s.extent; ++e) {
        const float v = loadF(x.data, x.dtype, (o * s.extent + e) * s.inner + in);
        if (kMax ? v > best_v : v < best_v) { best = e; best_v = v; }
      }
      c.out(0).as<int64_t>()[o * s.inner + in] = best;
      if (c.outputs.size() > 1) storeF(c.out(1).data, c.out(1).dtype, o * s.inner + in, best_v);
    }
  }
  return Status::Ok();
}

// ---- CumSum --------------------------------------------------------------------
Status cumSumKernel(const KernelContext& c) {
  const auto& a = c.node.attrs.get<CumSumAttrs>();
  const TensorView& x = c.in(0);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a.axis, static_cast<int64_t>(x.shape.size())));
  const AxisSplit s = splitAtAxis(x.shape, axis);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t in = 0; in < s.inner; ++in) {
      double acc = 0.0;
      for (int64_t k = 0; k < s.extent; ++k) {
        const int64_t e = a.reverse ? s.extent - 1 - k : k;
        const int64_t idx = (o * s.extent + e) * s.inner + in;
        const double v = loadF(x.data, x.dtype, idx);
        if (!a.exclusive) acc += v;
        storeF(c.out(0).data, c.out(0).dtype, idx, static_cast<float>(acc));
        if (a.exclusive) acc += v;
      }
    }
  }
  return Status::Ok();
}
Status shapeCumSum(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  RETURN_IF_ERROR(normalizeAxis(n.attrs.get<CumSumAttrs>().axis, static_cast<int64_t>(in[0]->shape.size())).status());
  out = {in[0]->shape};
  return Status::Ok();
}

// ---- SquareSumAll, EqualCount ---------------------------------------------------
Status squareSumAllKernel(const KernelContext& c) {
  for (size_t k = 0; k < 2; ++k) {
    double acc = 0.0;
    for (int64_t i = 0, n = c.in(k).size(); i < n; ++i) {
      const double v = loadF(c.in(k).data, c.in(k).dtype, i);
      acc += v * v;
    }
    storeF(c.out(k).data, c.out(k).dtype, 0, static_cast<float>(acc));
  }
  return Status::Ok();
}
Status equalCountKernel(const KernelContext& c) {
  int64_t count = 0;
  const size_t es = dtypeSize(c.in(0).dtype);
  for (int64_t i = 0, n = c.in(0).size(); i < n; ++i) {
    count += std::memcmp(static_cast<const uint8_t*>(c.in(0).data) + i * es,
                         static_cast<const uint8_t*>(c.in(1).data) + i * es, es) == 0;
  }
  storeF(c.out(0).data, c.out(0).dtype, 0, static_cast<float>(count));
  return Status::Ok();
}
Status shapeEqualCount(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  if (in[0]->shape != in[1]->shape) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs equal shapes, got ",
                     shapeToString(in[0]->shape), " and ", shapeToString(in[1]->shape));
  }
  out = {Shape{1}};
  return Status::Ok();
}

// ---- BiasAddGrad: sum over every axis but the channel ----------------------------
int64_t channelAxis(const Attrs& attrs, size_t rank) {
  return attrs.get<FormatAttrs>().format == DataFormat::kNHWC ? static_cast<int64_t>(rank) - 1 : (rank >= 2 ? 1 : 0);
}
Status shapeBiasAddGrad(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  if (in[0]->shape.size() < 2) {
    return makeError(StatusCode::kInvalidArgument, "BiasAddGrad needs rank >= 2, got ", shapeToString(in[0]->shape));
  }
  out = {Shape{in[0]->shape[channelAxis(n.attrs, in[0]->shape.size())]}};
  return Status::Ok();
}
Status biasAddGradKernel(const KernelContext& c) {
  const size_t rank = c.in(0).shape.size();
  const int64_t ch = channelAxis(c.node.attrs, rank);
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) if (d != ch) axes.push_back(d);
  MutableTensorView y = c.out(0);
  reduceInto(c.in(0), axes, ReduceKind::kSum, y);
  return Status::Ok();
}

// ---- MaximumGrad / MinimumGrad: (x, y, dout) -> (dx, dy) -------------------------
Status shapeMinMaxGrad(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(Shape b, broadcastShapes(in[0]->shape, in[1]->shape));
  if (b != in[2]->shape) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " dout is ", shapeToString(in[2]->shape),
                     ", broadcast of x and y is ", shapeToString(b));
  }
  out = {in[0]->shape, in[1]->shape};
  return Status::Ok();
}
// Sums `full` (shape `from`) down to `to` by adding over broadcast axes.
void sumToShape(const std::vector<double>& full, const Shape& from, const MutableTensorView& y) {
  std::vector<double> acc(y.size(), 0.0);
  forEachBroadcast<1>(from, {&y.shape}, [&](int64_t i, const std::array<int64_t, 1>& o) { acc[o[0]] += full[i]; });
  for (size_t j = 0; j < acc.size(); ++j) storeF(y.data, y.dtype, static_cast<int64_t>(j), static_cast<float>(acc[j]));
}
template <bool kMax> Status minMaxGradKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &y = c.in(1), &dout = c.in(2);
  const int64_t n = dout.size();
  std::vector<double> dx(n), dy(n);
  forEachBroadcast<2>(dout.shape, {&x.shape, &y.shape}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    const float a = loadF(x.data, x.dtype, o[0]), b = loadF(y.data, y.dtype, o[1]);
    const double g = loadF(dout.data, dout.dtype, i);
    const bool to_x = kMax ? a >= b : a <= b;
    dx[i] = to_x ? g : 0.0;
    dy[i] = g - dx[i];
  });
  sumToShape(dx, dout.shape, c.out(0));
  sumToShape(dy, dout.shape, c.out(1));
  return Status::Ok();
}

OpDef reduceOp(const char* name, ReferenceKernel k, const char* summary, DTypeRule dt = dtypeNumericSame) {
  return {name, OpClass::kReduce, 1, 1, 1, 1, AttrKind::kAxes, dt, shapeReduce, k, summary};
}

}  // namespace

void registerReduceOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("ReduceSum")) t.push_back(reduceOp("ReduceSum", reduceKernel<ReduceKind::kSum>, "sum over axes (empty = all)"));
  if constexpr (opSelected("ReduceMean")) t.push_back(reduceOp("ReduceMean", reduceKernel<ReduceKind::kMean>, "mean over axes (empty = all)"));
  if constexpr (opSelected("ReduceMax")) t.push_back(reduceOp("ReduceMax", reduceKernel<ReduceKind::kMax>, "max over axes (empty = all; bool = any)", dtypeComputeSame));
  if constexpr (opSelected("ReduceMin")) t.push_back(reduceOp("ReduceMin", reduceKernel<ReduceKind::kMin>, "min over axes (empty = all; bool = all)", dtypeComputeSame));
  if constexpr (opSelected("ReduceProd")) t.push_back(reduceOp("ReduceProd", reduceKernel<ReduceKind::kProd>, "product over axes (empty = all)"));
  if constexpr (opSelected("ArgMax")) t.push_back({"ArgMax", OpClass::kReduce, 1, 1, 1, 1, AttrKind::kAxis, dtypeArg, shapeArg, argKernel<true>,
               "index (int64) of the first max along axis"});
  if constexpr (opSelected("ArgMin")) t.push_back({"ArgMin", OpClass::kReduce, 1, 1, 1, 1, AttrKind::kAxis, dtypeArg, shapeArg, argKernel<false>,
               "index (int64) of the first min along axis"});
  if constexpr (opSelected("ArgMaxWithValue")) t.push_back({"ArgMaxWithValue", OpClass::kReduce, 1, 1, 1, 2, AttrKind::kAxis, dtypeArg, shapeArg, argKernel<true>,
               "(index, value) of the max along axis"});
  if constexpr (opSelected("ArgMinWithValue")) t.push_back({"ArgMinWithValue", OpClass::kReduce, 1, 1, 1, 2, AttrKind::kAxis, dtypeArg, shapeArg, argKernel<false>,
               "(index, value) of the min along axis"});
  if constexpr (opSelected("CumSum")) t.push_back({"CumSum", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kCumSum, dtypeNumericSame, shapeCumSum, cumSumKernel,
               "running sum along axis (exclusive/reverse)"});
  if constexpr (opSelected("SquareSumAll")) t.push_back({"SquareSumAll", OpClass::kReduce, 2, 2, 2, 2, AttrKind::kNone, dtypeFloatSame, shapeScalar,
               squareSumAllKernel, "(sum x^2, sum y^2)"});
  if constexpr (opSelected("EqualCount")) t.push_back({"EqualCount", OpClass::kReduce, 2, 2, 1, 1, AttrKind::kNone, dtypeComputeSame, shapeEqualCount,
               equalCountKernel, "[number of equal elements] in x's dtype"});
  if constexpr (opSelected("BiasAddGrad")) t.push_back({"BiasAddGrad", OpClass::kReduce, 1, 1, 1, 1, AttrKind::kFormat, dtypeFloatSame, shapeBiasAddGrad,
               biasAddGradKernel, "dy summed over all axes but the channel"});
  if constexpr (opSelected("MaximumGrad")) t.push_back({"MaximumGrad", OpClass::kReduce, 3, 3, 2, 2, AttrKind::kNone, dtypeFloatSame, shapeMinMaxGrad,
               minMaxGradKernel<true>, "(x,y,dout) -> dout routed to the larger input, summed to its shape"});
  if constexpr (opSelected("MinimumGrad")) t.push_back({"MinimumGrad", OpClass::kReduce, 3, 3, 2, 2, AttrKind::kNone, dtypeFloatSame, shapeMinMaxGrad,
               minMaxGradKernel<false>, "(x,y,dout) -> dout routed to the smaller input, summed to its shape"});
}

}  // namespace gkrt::ops
