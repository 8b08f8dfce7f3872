#include "backends/cpu/fused/elementwise_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/vector_math.h"

namespace gkrt::cpu {

// The op loops below vectorise; on x86-64 an AVX2 build (8 floats a step instead of
// SSE2's 4) is picked by cpuTier() (GKRT_TIERED_AVX2, cpu_tier.h; `flatten` inlines the
// loops into each build). No FMA: each build must round as the baseline does.

bool ewOpFor(const char* name, int num_inputs, EwOp* op) {
  static const struct { const char* name; int inputs; EwOp op; } kOps[] = {
      {"Add", 2, EwOp::kAdd}, {"Sub", 2, EwOp::kSub}, {"Mul", 2, EwOp::kMul}, {"Div", 2, EwOp::kDiv},
      {"RealDiv", 2, EwOp::kDiv}, {"Maximum", 2, EwOp::kMaximum}, {"Minimum", 2, EwOp::kMinimum},
      {"Pow", 2, EwOp::kPow}, {"SquaredDifference", 2, EwOp::kSquaredDifference}, {"Neg", 1, EwOp::kNeg},
      {"Abs", 1, EwOp::kAbs}, {"Exp", 1, EwOp::kExp}, {"Log", 1, EwOp::kLog}, {"Sqrt", 1, EwOp::kSqrt},
      {"Rsqrt", 1, EwOp::kRsqrt}, {"Reciprocal", 1, EwOp::kReciprocal}, {"Tanh", 1, EwOp::kTanh},
      {"Sigmoid", 1, EwOp::kSigmoid}, {"ReLU", 1, EwOp::kReLU}, {"Erf", 1, EwOp::kErf},
      {"Square", 1, EwOp::kSquare}, {"Sin", 1, EwOp::kSin}, {"Cos", 1, EwOp::kCos}, {"Floor", 1, EwOp::kFloor},
      {"Ceil", 1, EwOp::kCeil}, {"SiLU", 1, EwOp::kSiLU}, {"IdentityMath", 1, EwOp::kCopy},
      {"Clip", 1, EwOp::kClip}, {"LeakyReLU", 1, EwOp::kLeakyReLU}, {"HSwish", 1, EwOp::kHSwish},
      {"HSigmoid", 1, EwOp::kHSigmoid},
  };
  for (const auto& e : kOps) {
    if (e.inputs == num_inputs && std::string(e.name) == name) {
      *op = e.op;
      return true;
    }
  }
  return false;
}

bool ewCompareFor(const char* name, EwOp* op) {
  static const struct { const char* name; EwOp op; } kOps[] = {
      {"Equal", EwOp::kEqual}, {"NotEqual", EwOp::kNotEqual}, {"Greater", EwOp::kGreater},
      {"GreaterEqual", EwOp::kGreaterEqual}, {"Less", EwOp::kLess}, {"LessEqual", EwOp::kLessEqual},
  };
  for (const auto& e : kOps) {
    if (std::string(e.name) == name) {
      *op = e.op;
      return true;
    }
  }
  return false;
}

bool ewInt32For(const char* name, EwOp* op) {
  const std::string n = name;
  if (n == "Add") *op = EwOp::kAddInt32;
  else if (n == "Sub") *op = EwOp::kSubInt32;
  else if (n == "Mul") *op = EwOp::kMulInt32;
  else return false;
  return true;
}

namespace {

template <class F> inline void int32Binary(float* y, const float* a, const float* b, int64_t n, F f) {
  const int32_t* ia = reinterpret_cast<const int32_t*>(a);
  const int32_t* ib = reinterpret_cast<const int32_t*>(b);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(static_cast<int32_t>(f(static_cast<uint32_t>(ia[i]), static_cast<uint32_t>(ib[i]))));
  }
}

template <class F> inline void unary(float* y, const float* a, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(a[i]);
}
template <class F> inline void binary(float* y, const float* a, const float* b, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
}

void powConst(float* y, const float* a, int64_t n, float c) {
  if (c == 1.0f) { if (y != a) std::memmove(y, a, n * sizeof(float)); return; }
  if (c == 2.0f) return unary(y, a, n, [](float x) { return x * x; });
  if (c == 3.0f) return unary(y, a, n, [](float x) { return x * x * x; });
  if (c == 4.0f) return unary(y, a, n, [](float x) { float s = x * x; return s * s; });
  if (c == 0.5f) return unary(y, a, n, [](float x) { return std::sqrt(x); });
  if (c == -1.0f) return unary(y, a, n, [](float x) { return 1.0f / x; });
  if (c == 0.0f) return unary(y, a, n, [](float) { return 1.0f; });
  // Quarter powers through square roots (each correctly rounded; NaN below 0 as pow's):
  // LRN's beta of 0.75 (AlexNet, GoogLeNet, ZFNet) in 3 operations instead of a pow.
  if (c == 0.25f) return unary(y, a, n, [](float x) { return std::sqrt(std::sqrt(x)); });
  if (c == 0.75f) return unary(y, a, n, [](float x) { const float s = std::sqrt(x); return s * std::sqrt(s); });
  if (c == 1.5f) return unary(y, a, n, [](float x) { return x * std::sqrt(x); });
  if (c == -0.5f) return unary(y, a, n, [](float x) { return 1.0f / std::sqrt(x); });
  // Any other exponent (LRN's 0.75): the vector pow with the exponent broadcast, a chunk
  // at a time (std::pow one value at a time took zfnet512's Pow 2.6 ms for 1.6M values).
  constexpr int64_t kChunk = 256;
  float e[kChunk];
  std::fill_n(e, kChunk, c);
  for (int64_t i = 0; i < n; i += kChunk) vecPow(y + i, a + i, e, std::min(kChunk, n - i));
}

// x * f(exp(-x)) family through a stack chunk, so `y` may alias `a`.
template <class F> void viaExpNeg(float* y, const float* a, int64_t n, F f) {
  constexpr int64_t kChunk = 256;
  float t[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    for (int64_t j = 0; j < m; ++j) t[j] = -a[i + j];
    vecMath(VecFn::kExp, t, t, m);
    for (int64_t j = 0; j < m; ++j) y[i + j] = f(a[i + j], t[j]);
  }
}

}  // namespace

GKRT_INLINE_BODY void runEwOpBody(EwOp op, float* y, const float* a, const float* b, int64_t n, float c, float c2) {
  switch (op) {
    case EwOp::kAdd: return binary(y, a, b, n, [](float p, float q) { return p + q; });
    case EwOp::kSub: return binary(y, a, b, n, [](float p, float q) { return p - q; });
    case EwOp::kMul: return binary(y, a, b, n, [](float p, float q) { return p * q; });
    case EwOp::kDiv: return binary(y, a, b, n, [](float p, float q) { return p / q; });
    case EwOp::kMaximum: return binary(y, a, b, n, [](float p, float q) { return (p != p || p > q) ? p : q; });
    case EwOp::kMinimum: return binary(y, a, b, n, [](float p, float q) { return (p != p || p < q) ? p : q; });
    case EwOp::kPow: return vecPow(y, a, b, n);
    case EwOp::kSquaredDifference: return binary(y, a, b, n, [](float p, float q) { return (p - q) * (p - q); });
    case EwOp::kNeg: return unary(y, a, n, [](float x) { return -x; });
    case EwOp::kAbs: return unary(y, a, n, [](float x) { return std::fabs(x); });
    case EwOp::kExp: return vecMath(VecFn::kExp, y, a, n);
    case EwOp::kLog: return vecMath(VecFn::kLog, y, a, n);
    case EwOp::kSqrt: return unary(y, a, n, [](float x) { return std::sqrt(x); });
    case EwOp::kRsqrt: return unary(y, a, n, [](float x) { return 1.0f / std::sqrt(x); });
    case EwOp::kReciprocal: return unary(y, a, n, [](float x) { return 1.0f / x; });
    case EwOp::kTanh: return vecMath(VecFn::kTanh, y, a, n);
    case EwOp::kSigmoid: return viaExpNeg(y, a, n, [](float, float e) { return 1.0f / (1.0f + e); });
    case EwOp::kReLU: return unary(y, a, n, [](float x) { return !(x <= 0.0f) ? x : 0.0f; });
    case EwOp::kErf: return vecMath(VecFn::kErf, y, a, n);
    case EwOp::kSquare: return unary(y, a, n, [](float x) { return x * x; });
    case EwOp::kSin: return vecMath(VecFn::kSin, y, a, n);
    case EwOp::kCos: return vecMath(VecFn::kCos, y, a, n);
    case EwOp::kFloor: return unary(y, a, n, [](float x) { return std::floor(x); });
    case EwOp::kCeil: return unary(y, a, n, [](float x) { return std::ceil(x); });
    case EwOp::kSiLU: return viaExpNeg(y, a, n, [](float x, float e) { return x / (1.0f + e); });
    case EwOp::kCopy: if (y != a) std::memmove(y, a, n * sizeof(float)); return;
    case EwOp::kPowConst: return powConst(y, a, n, c);
    // NaN passes through as in the reference kernels (std::min(std::max(x, lo), hi)).
    case EwOp::kClip: return unary(y, a, n, [c, c2](float x) { return std::min(std::max(x, c), c2); });
    case EwOp::kLeakyReLU: return unary(y, a, n, [c](float x) { return x < 0.0f ? c * x : x; });
    case EwOp::kHSwish:
      return unary(y, a, n, [](float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; });
    case EwOp::kHSigmoid:
      return unary(y, a, n, [](float x) { return std::min(std::max(x / 6.0f + 0.5f, 0.0f), 1.0f); });
    case EwOp::kEqual: return binary(y, a, b, n, [](float p, float q) { return p == q ? 1.0f : 0.0f; });
    case EwOp::kNotEqual: return binary(y, a, b, n, [](float p, float q) { return p != q ? 1.0f : 0.0f; });
    case EwOp::kGreater: return binary(y, a, b, n, [](float p, float q) { return p > q ? 1.0f : 0.0f; });
    case EwOp::kGreaterEqual: return binary(y, a, b, n, [](float p, float q) { return p >= q ? 1.0f : 0.0f; });
    case EwOp::kLess: return binary(y, a, b, n, [](float p, float q) { return p < q ? 1.0f : 0.0f; });
    case EwOp::kLessEqual: return binary(y, a, b, n, [](float p, float q) { return p <= q ? 1.0f : 0.0f; });
    case EwOp::kAddInt32: return int32Binary(y, a, b, n, [](uint32_t p, uint32_t q) { return p + q; });
    case EwOp::kSubInt32: return int32Binary(y, a, b, n, [](uint32_t p, uint32_t q) { return p - q; });
    case EwOp::kMulInt32: return int32Binary(y, a, b, n, [](uint32_t p, uint32_t q) { return p * q; });
    case EwOp::kIsNan: return unary(y, a, n, [](float x) { return x != x ? 1.0f : 0.0f; });
    case EwOp::kSelect: return;  // runSelect
  }
}
GKRT_TIERED_AVX2(void, runEwOp, (EwOp op, float* y, const float* a, const float* b, int64_t n, float c, float c2),
                 (op, y, a, b, n, c, c2), "avx2")

GKRT_INLINE_BODY void runSelectBody(float* y, const float* cond, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = cond[i] != 0.0f ? a[i] : b[i];
}
GKRT_TIERED_AVX2(void, runSelect, (float* y, const float* cond, const float* a, const float* b, int64_t n),
                 (y, cond, a, b, n), "avx2")

namespace {

template <class F> inline void withScalar(float* y, const float* v, float s, bool scalar_first, int64_t n, F f) {
  if (scalar_first) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(s, v[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = f(v[i], s);
  }
}

}  // namespace

GKRT_INLINE_BODY bool runEwOpScalarBody(EwOp op, float* y, const float* v, float s, bool scalar_first, int64_t n) {
  switch (op) {
    case EwOp::kAdd: withScalar(y, v, s, scalar_first, n, [](float p, float q) { return p + q; }); return true;
    case EwOp::kSub: withScalar(y, v, s, scalar_first, n, [](float p, float q) { return p - q; }); return true;
    case EwOp::kMul: withScalar(y, v, s, scalar_first, n, [](float p, float q) { return p * q; }); return true;
    case EwOp::kDiv: withScalar(y, v, s, scalar_first, n, [](float p, float q) { return p / q; }); return true;
    case EwOp::kMaximum:
      withScalar(y, v, s, scalar_first, n, [](float p, float q) { return (p != p || p > q) ? p : q; });
      return true;
    case EwOp::kMinimum:
      withScalar(y, v, s, scalar_first, n, [](float p, float q) { return (p != p || p < q) ? p : q; });
      return true;
    case EwOp::kSquaredDifference:
      withScalar(y, v, s, scalar_first, n, [](float p, float q) { return (p - q) * (p - q); });
      return true;
    default: return false;
  }
}
bool ewOpHasScalarLoop(EwOp op) {
  switch (op) {
    case EwOp::kAdd: case EwOp::kSub: case EwOp::kMul: case EwOp::kDiv: case EwOp::kMaximum: case EwOp::kMinimum:
    case EwOp::kSquaredDifference: return true;
    default: return false;
  }
}
GKRT_TIERED_AVX2(bool, runEwOpScalar, (EwOp op, float* y, const float* v, float s, bool scalar_first, int64_t n),
                 (op, y, v, s, scalar_first, n), "avx2")

}  // namespace gkrt::cpu
