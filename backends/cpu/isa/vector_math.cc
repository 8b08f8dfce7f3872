#include "backends/cpu/isa/vector_math.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/row_math.h"

#if defined(GKRT_HAVE_SLEEF) && defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// sleef.h declares each ISA's functions only when the whole file is compiled for that
// ISA; these are the ones used here (libsleef's C ABI), called only from functions
// compiled for their ISA.
#define GKRT_SLEEF_DECLARE(name)                                  \
  __m512 Sleef_##name##f16_u10avx512f(__m512);                     \
  __m256 Sleef_##name##f8_u10avx2(__m256);
extern "C" {
GKRT_SLEEF_DECLARE(exp)
GKRT_SLEEF_DECLARE(log)
GKRT_SLEEF_DECLARE(sin)
GKRT_SLEEF_DECLARE(cos)
__m512 Sleef_powf16_u10avx512f(__m512, __m512);
__m256 Sleef_powf8_u10avx2(__m256, __m256);
}
#define GKRT_SLEEF_X86 1
#endif

namespace gkrt::cpu {
namespace {

float scalar(VecFn fn, float x) {
  switch (fn) {
    case VecFn::kExp: return std::exp(x);
    case VecFn::kLog: return std::log(x);
    case VecFn::kTanh: return std::tanh(x);
    case VecFn::kErf: return std::erf(x);
    case VecFn::kSin: return std::sin(x);
    case VecFn::kCos: return std::cos(x);
  }
  return x;
}

void libmMath(VecFn fn, float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = scalar(fn, x[i]);
}

void libmPow(float* y, const float* x, const float* e, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::pow(x[i], e[i]);
}

// erf as the odd/even rational approximation on [-4, 4] (+-1 beyond, in float), max
// error 4.5e-7 against double-precision erf; NaN passes through. A branch-free loop the
// compiler vectorises, built for AVX-512/AVX2 on x86-64 (picked by cpuTier()): several
// times SLEEF's 1-ulp erf, which dominated GeLU.
inline __attribute__((always_inline)) float erfOf(float a) {
  const float v = a < -4.0f ? -4.0f : (a > 4.0f ? 4.0f : a);
  const float v2 = v * v;
  float p = v2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = v2 * p - 2.10102402082508e-06f;
  p = v2 * p - 5.69250639462346e-05f;
  p = v2 * p - 7.34990630326855e-04f;
  p = v2 * p - 2.95459980854025e-03f;
  p = v2 * p - 1.60960333262415e-02f;
  float q = v2 * -1.45660718464996e-05f - 2.13374055278905e-04f;
  q = v2 * q - 1.68282697438203e-03f;
  q = v2 * q - 7.37332916720468e-03f;
  q = v2 * q - 1.42647390514189e-02f;
  return v * p / q;  // NaN fails both clamps and stays NaN
}

GKRT_INLINE_BODY void rationalErfBody(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = erfOf(x[i]);
}
GKRT_TIERED(void, rationalErf, (float* y, const float* x, int64_t n), (y, x, n), "avx512f", "avx2,fma")

GKRT_INLINE_BODY void tanhLoopBody(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = tanhOf(x[i]);
}
GKRT_TIERED(void, tanhLoop, (float* y, const float* x, int64_t n), (y, x, n), "avx512f", "avx2,fma")

GKRT_INLINE_BODY void geluErfLoopBody(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.0f + erfOf(y[i] * 0.7071067811865476f));
}
GKRT_TIERED(void, geluErfLoop, (float* y, int64_t n), (y, n), "avx512f", "avx2,fma")

#ifdef GKRT_SLEEF_X86
// One loop per width: full vectors, then the tail through a zero-padded stack vector.
#define GKRT_VEC_LOOP(W, LOAD, STORE, CALL)                      \
  int64_t i = 0;                                                     \
  for (; i + W <= n; i += W) STORE(y + i, CALL(LOAD(x + i)));        \
  if (i < n) {                                                       \
    alignas(64) float t[W] = {};                                     \
    std::memcpy(t, x + i, (n - i) * sizeof(float));                  \
    STORE(t, CALL(LOAD(t)));                                         \
    std::memcpy(y + i, t, (n - i) * sizeof(float));                  \
  }

#define GKRT_SLEEF_ARM(fn, name, W, ISA)                             \
  case VecFn::fn: {                                                  \
    GKRT_VEC_LOOP(W, LOAD, STORE, Sleef_##name##f##W##_u10##ISA)   \
    return;                                                          \
  }

#define GKRT_SLEEF_SWITCH(W, ISA)                                    \
  switch (fn) {                                                      \
    GKRT_SLEEF_ARM(kExp, exp, W, ISA)                                \
    GKRT_SLEEF_ARM(kLog, log, W, ISA)                                \
    GKRT_SLEEF_ARM(kSin, sin, W, ISA)                                \
    GKRT_SLEEF_ARM(kCos, cos, W, ISA)                                \
    case VecFn::kErf:                                                \
    case VecFn::kTanh:                                               \
      return; /* gkrt's own loops (vecMath) */                       \
  }

// Both entry points of one ISA: the functions, and pow (two operands, libm tail).
#define GKRT_SLEEF_ISA(W, ISA, TARGET, MATH, POW)                                        \
  __attribute__((target(TARGET))) void MATH(VecFn fn, float* y, const float* x, int64_t n) { \
    GKRT_SLEEF_SWITCH(W, ISA)                                                             \
  }                                                                                       \
  __attribute__((target(TARGET))) void POW(float* y, const float* x, const float* e, int64_t n) { \
    int64_t i = 0;                                                                        \
    for (; i + W <= n; i += W) STORE(y + i, Sleef_powf##W##_u10##ISA(LOAD(x + i), LOAD(e + i))); \
    libmPow(y + i, x + i, e + i, n - i);                                                  \
  }

#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
GKRT_SLEEF_ISA(16, avx512f, "avx512f", avx512Math, avx512Pow)
#undef LOAD
#undef STORE
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
GKRT_SLEEF_ISA(8, avx2, "avx2,fma", avx2Math, avx2Pow)
#undef LOAD
#undef STORE

enum class Isa { kLibm, kAvx2, kAvx512 };
Isa detectIsa() {
  if (cpuTier().has(CpuIsa::kAvx512)) return Isa::kAvx512;
  if (cpuTier().has(CpuIsa::kAvx2)) return Isa::kAvx2;
  return Isa::kLibm;
}
Isa isa() {
  static const Isa detected = detectIsa();
  return detected;
}
#endif

}  // namespace

void vecMath(VecFn fn, float* y, const float* x, int64_t n) {
  if (fn == VecFn::kErf) return rationalErf(y, x, n);
  if (fn == VecFn::kTanh) return tanhLoop(y, x, n);
#ifdef GKRT_SLEEF_X86
  if (isa() == Isa::kAvx512) return avx512Math(fn, y, x, n);
  if (isa() == Isa::kAvx2) return avx2Math(fn, y, x, n);
#endif
  libmMath(fn, y, x, n);
}

void geluErfInPlace(float* y, int64_t n) { geluErfLoop(y, n); }

void vecPow(float* y, const float* x, const float* e, int64_t n) {
#ifdef GKRT_SLEEF_X86
  if (isa() == Isa::kAvx512) return avx512Pow(y, x, e, n);
  if (isa() == Isa::kAvx2) return avx2Pow(y, x, e, n);
#endif
  libmPow(y, x, e, n);
}

const char* vecMathImplementation() {
#ifdef GKRT_SLEEF_X86
  if (isa() == Isa::kAvx512) return "sleef-avx512f";
  if (isa() == Isa::kAvx2) return "sleef-avx2";
#endif
  return "libm";
}

}  // namespace gkrt::cpu
