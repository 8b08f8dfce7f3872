// Elementwise ops of two or more inputs with numpy broadcasting: arithmetic,
// comparisons, logic, Select, AddN, Addcmul, FusedMulAdd.
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/ir/ops/elementwise_nary.h"

namespace gkrt::ops {
namespace {

// Functors: `float f(float, float)` for float tensors and `T f(T, T)` for integers.
// Integer division by zero gives 0 (never a trap); INT_MIN / -1 wraps.
template <class T> T safeDiv(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(T(0) - a);
  }
  return static_cast<T>(a / b);
}
template <class T> T safeMod(T a, T b) { return b == T(0) ? T(0) : static_cast<T>(a - safeDiv(a, b) * b); }
template <class T> T floorDivInt(T a, T b) {
  T q = safeDiv(a, b);
  if (b != T(0) && (a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
template <class T> T floorModInt(T a, T b) { return b == T(0) ? T(0) : static_cast<T>(a - floorDivInt(a, b) * b); }

#define BINARY_FN(Name, float_expr, int_expr)                              \
  struct Name {                                                            \
    const Attrs& attrs;                                                    \
    float operator()(float a, float b) const { return float_expr; }        \
    template <class T> T operator()(T a, T b) const { return static_cast<T>(int_expr); } \
  }
BINARY_FN(AddFn, a + b, a + b);
BINARY_FN(SubFn, a - b, a - b);
BINARY_FN(MulFn, a * b, a * b);
BINARY_FN(DivFn, a / b, safeDiv(a, b));
BINARY_FN(MaximumFn, (std::isnan(a) || a > b) ? a : b, a > b ? a : b);
BINARY_FN(MinimumFn, (std::isnan(a) || a < b) ? a : b, a < b ? a : b);
BINARY_FN(PowFn, std::pow(a, b), std::pow(static_cast<double>(a), static_cast<double>(b)));
BINARY_FN(FloorDivFn, std::floor(a / b), floorDivInt(a, b));
// numpy's mod: fmod, moved to the divisor's sign (mod(-1, inf) = inf, mod(x, 0) = nan).
float floorModFloat(float a, float b) {
  float r = std::fmod(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
  return r;
}
BINARY_FN(FloorModFn, floorModFloat(a, b), floorModInt(a, b));
BINARY_FN(ModFn, std::fmod(a, b), safeMod(a, b));
BINARY_FN(SquaredDifferenceFn, (a - b) * (a - b), (a - b) * (a - b));
#undef BINARY_FN

struct DivModFn {
  const Attrs& attrs;
  bool floor() const { return attrs.get<RoundingAttrs>().mode == RoundingMode::kFloor; }
  float operator()(float a, float b) const { return floor() ? std::floor(a / b) : std::trunc(a / b); }
  template <class T> T operator()(T a, T b) const { return floor() ? floorDivInt(a, b) : safeDiv(a, b); }
};

#define COMPARE_FN(Name, expr)                                        \
  struct Name {                                                       \
    const Attrs& attrs;                                               \
    template <class T> bool operator()(T a, T b) const { return expr; } \
  }
COMPARE_FN(EqualFn, a == b);
COMPARE_FN(NotEqualFn, a != b);
COMPARE_FN(GreaterFn, a > b);
COMPARE_FN(GreaterEqualFn, a >= b);
COMPARE_FN(LessFn, a < b);
COMPARE_FN(LessEqualFn, a <= b);
COMPARE_FN(LogicalAndFn, a && b);
COMPARE_FN(LogicalOrFn, a || b);
COMPARE_FN(LogicalXorFn, (a != 0) != (b != 0));
#undef COMPARE_FN

struct RealDivFn { const Attrs& attrs; float operator()(const float* v) const { return v[0] / v[1]; } };
struct Atan2Fn { const Attrs& attrs; float operator()(const float* v) const { return std::atan2(v[0], v[1]); } };
struct FusedMulAddFn { const Attrs& attrs; float operator()(const float* v) const { return v[0] * v[1] + v[2]; } };
struct AddcmulFn { const Attrs& attrs; float operator()(const float* v) const { return v[0] + v[3] * v[1] * v[2]; } };

template <class F> Status binaryKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const TensorView& a = c.in(0);
  const TensorView& b = c.in(1);
  const MutableTensorView& y = c.out(0);
  const std::array<const Shape*, 2> shapes{&a.shape, &b.shape};
  if (a.dtype == DType::kFloat32 && b.dtype == DType::kFloat32 && y.dtype == DType::kFloat32) {  // no dtype switch a value
    const float* av = a.as<float>();
    const float* bv = b.as<float>();
    float* yv = y.as<float>();
    forEachBroadcast<2>(y.shape, shapes, [&](int64_t i, const std::array<int64_t, 2>& o) { yv[i] = f(av[o[0]], bv[o[1]]); });
    return Status::Ok();
  }
  if (isFloat(a.dtype)) {
    forEachBroadcast<2>(y.shape, shapes, [&](int64_t i, const std::array<int64_t, 2>& o) {
      storeF(y.data, y.dtype, i, f(loadF(a.data, a.dtype, o[0]), loadF(b.data, b.dtype, o[1])));
    });
    return Status::Ok();
  }
  withIntegerType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    forEachBroadcast<2>(y.shape, shapes, [&](int64_t i, const std::array<int64_t, 2>& o) {
      y.as<T>()[i] = f(a.as<T>()[o[0]], b.as<T>()[o[1]]);
    });
  });
  return Status::Ok();
}

template <class F> Status compareKernel(const KernelContext& c) {
  const F f{c.node.attrs};
  const TensorView& a = c.in(0);
  const TensorView& b = c.in(1);
  uint8_t* y = c.out(0).as<uint8_t>();
  const std::array<const Shape*, 2> shapes{&a.shape, &b.shape};
  if (is16BitFloat(a.dtype)) {
    forEachBroadcast<2>(c.out(0).shape, shapes, [&](int64_t i, const std::array<int64_t, 2>& o) {
      y[i] = f(loadF(a.data, a.dtype, o[0]), loadF(b.data, b.dtype, o[1]));
    });
    return Status::Ok();
  }
  withStorageType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    forEachBroadcast<2>(c.out(0).shape, shapes, [&](int64_t i, const std::array<int64_t, 2>& o) {
      y[i] = f(a.as<T>()[o[0]], b.as<T>()[o[1]]);
    });
  });
  return Status::Ok();
}

// cond ? x : y, any dtype for x/y, broadcast over all three.
Status selectKernel(const KernelContext& c) {
  const TensorView& cond = c.in(0);
  const TensorView& x = c.in(1);
  const TensorView& y = c.in(2);
  const MutableTensorView& out = c.out(0);
  const size_t es = dtypeSize(out.dtype);
  const auto* xb = static_cast<const uint8_t*>(x.data);
  const auto* yb = static_cast<const uint8_t*>(y.data);
  auto* ob = static_cast<uint8_t*>(out.data);
  forEachBroadcast<3>(out.shape, {&cond.shape, &x.shape, &y.shape}, [&](int64_t i, const std::array<int64_t, 3>& o) {
    const bool take_x = cond.as<uint8_t>()[o[0]] != 0;
    std::memcpy(ob + i * es, take_x ? xb + o[1] * es : yb + o[2] * es, es);
  });
  return Status::Ok();
}

Status dtypeSelect(const ir::Node& n, const In& in, std::vector<DType>& out) {
  if (in[0]->dtype != DType::kBool) {
    return makeError(StatusCode::kInvalidArgument, "Select condition (input 0) must be bool, got ",
                     dtypeName(in[0]->dtype), "; compare or Cast it first");
  }
  RETURN_IF_ERROR(requireSameDType(n, in, 1, 3));
  out = {in[1]->dtype};
  return Status::Ok();
}

Status addNKernel(const KernelContext& c) {
  const MutableTensorView& y = c.out(0);
  const int64_t n = y.size();
  std::vector<float> acc(n, 0.0f);
  for (const TensorView& x : c.inputs) {
    forEachBroadcast<1>(y.shape, {&x.shape}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      acc[i] += loadF(x.data, x.dtype, o[0]);
    });
  }
  if (isFloat(y.dtype)) {
    for (int64_t i = 0; i < n; ++i) storeF(y.data, y.dtype, i, acc[i]);
    return Status::Ok();
  }
  withIntegerType(y.dtype, [&](auto tag) {  // integers: exact sum in the tensor's type
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) y.as<T>()[i] = 0;
    for (const TensorView& x : c.inputs) {
      forEachBroadcast<1>(y.shape, {&x.shape}, [&](int64_t i, const std::array<int64_t, 1>& o) {
        y.as<T>()[i] = static_cast<T>(y.as<T>()[i] + x.as<T>()[o[0]]);
      });
    }
  });
  return Status::Ok();
}

OpDef binaryOp(const char* name, ReferenceKernel k, const char* summary, AttrKind a = AttrKind::kNone) {
  return {name, OpClass::kElementwise, 2, 2, 1, 1, a, dtypeNumericSame, shapeBroadcast, k, summary};
}
OpDef compareOp(const char* name, ReferenceKernel k, const char* summary) {
  return {name, OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeCompare, shapeBroadcast, k, summary};
}
OpDef logicalOp(const char* name, ReferenceKernel k, const char* summary) {
  return {name, OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeLogical, shapeBroadcast, k, summary};
}

}  // namespace

void registerElementwiseBinaryOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Add")) t.push_back(binaryOp("Add", binaryKernel<AddFn>, "x + y"));
  if constexpr (opSelected("Sub")) t.push_back(binaryOp("Sub", binaryKernel<SubFn>, "x - y"));
  if constexpr (opSelected("Mul")) t.push_back(binaryOp("Mul", binaryKernel<MulFn>, "x * y"));
  if constexpr (opSelected("Div")) t.push_back(binaryOp("Div", binaryKernel<DivFn>, "x / y (integers truncate; /0 gives 0)"));
  if constexpr (opSelected("RealDiv")) t.push_back({"RealDiv", OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeBroadcast,
               floatNaryKernel<2, RealDivFn>, "x / y, float only"});
  if constexpr (opSelected("Maximum")) t.push_back(binaryOp("Maximum", binaryKernel<MaximumFn>, "max(x, y), nan-propagating"));
  if constexpr (opSelected("Minimum")) t.push_back(binaryOp("Minimum", binaryKernel<MinimumFn>, "min(x, y), nan-propagating"));
  if constexpr (opSelected("Pow")) t.push_back(binaryOp("Pow", binaryKernel<PowFn>, "x ^ y"));
  if constexpr (opSelected("FloorDiv")) t.push_back(binaryOp("FloorDiv", binaryKernel<FloorDivFn>, "floor(x / y)"));
  if constexpr (opSelected("FloorMod")) t.push_back(binaryOp("FloorMod", binaryKernel<FloorModFn>, "x - floor(x/y)*y (sign of y)"));
  if constexpr (opSelected("Mod")) t.push_back(binaryOp("Mod", binaryKernel<ModFn>, "fmod(x, y) (sign of x)"));
  if constexpr (opSelected("SquaredDifference")) t.push_back(binaryOp("SquaredDifference", binaryKernel<SquaredDifferenceFn>, "(x - y)^2"));
  if constexpr (opSelected("DivMod")) t.push_back(binaryOp("DivMod", binaryKernel<DivModFn>, "x / y rounded by `mode` (trunc or floor)", AttrKind::kRounding));
  if constexpr (opSelected("Atan2")) t.push_back({"Atan2", OpClass::kElementwise, 2, 2, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeBroadcast,
               floatNaryKernel<2, Atan2Fn>, "atan2(y=x0, x=x1)"});
  if constexpr (opSelected("Equal")) t.push_back(compareOp("Equal", compareKernel<EqualFn>, "x == y"));
  if constexpr (opSelected("NotEqual")) t.push_back(compareOp("NotEqual", compareKernel<NotEqualFn>, "x != y"));
  if constexpr (opSelected("Greater")) t.push_back(compareOp("Greater", compareKernel<GreaterFn>, "x > y"));
  if constexpr (opSelected("GreaterEqual")) t.push_back(compareOp("GreaterEqual", compareKernel<GreaterEqualFn>, "x >= y"));
  if constexpr (opSelected("Less")) t.push_back(compareOp("Less", compareKernel<LessFn>, "x < y"));
  if constexpr (opSelected("LessEqual")) t.push_back(compareOp("LessEqual", compareKernel<LessEqualFn>, "x <= y"));
  if constexpr (opSelected("LogicalAnd")) t.push_back(logicalOp("LogicalAnd", compareKernel<LogicalAndFn>, "x && y"));
  if constexpr (opSelected("LogicalOr")) t.push_back(logicalOp("LogicalOr", compareKernel<LogicalOrFn>, "x || y"));
  if constexpr (opSelected("LogicalXor")) t.push_back(logicalOp("LogicalXor", compareKernel<LogicalXorFn>, "x != y on bools"));
  if constexpr (opSelected("Select")) t.push_back({"Select", OpClass::kElementwise, 3, 3, 1, 1, AttrKind::kNone, dtypeSelect, shapeBroadcast, selectKernel,
               "cond ? x : y"});
  if constexpr (opSelected("AddN")) t.push_back({"AddN", OpClass::kElementwise, 1, kVariadic, 1, 1, AttrKind::kNone, dtypeNumericSame, shapeBroadcast,
               addNKernel, "x0 + x1 + ... + xn"});
  if constexpr (opSelected("FusedMulAdd")) t.push_back({"FusedMulAdd", OpClass::kElementwise, 3, 3, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeBroadcast,
               floatNaryKernel<3, FusedMulAddFn>, "x * y + z"});
  if constexpr (opSelected("Addcmul")) t.push_back({"Addcmul", OpClass::kElementwise, 4, 4, 1, 1, AttrKind::kNone, dtypeFloatSame, shapeBroadcast,
               floatNaryKernel<4, AddcmulFn>, "input + value * x1 * x2 (inputs: input, x1, x2, value)"});
}

}  // namespace gkrt::ops
