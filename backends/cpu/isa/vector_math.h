// Vectorised elementary functions over float arrays for the cpu kernels. On x86-64
// builds with SLEEF (Debian `libsleef-dev`) they run SLEEF's 1-ulp AVX-512 or AVX2
// versions, picked once by the CPU's features; elsewhere (boards, builds without
// SLEEF) the C library's, one element at a time. erf is a rational approximation
// everywhere (max error 4.5e-7, vectorised). `y` may alias `x`.
#pragma once

#include <cstdint>

namespace gkrt::cpu {

enum class VecFn : uint8_t { kExp, kLog, kTanh, kErf, kSin, kCos };

void vecMath(VecFn fn, float* y, const float* x, int64_t n);
void vecPow(float* y, const float* x, const float* e, int64_t n);
// y = 0.5 x (1 + erf(x / sqrt(2))) in place, with the rational erf above: one pass, about
// three times faster than oneDNN 2.6's gelu_erf post-op on a GEMM's output (measured on
// AVX-512: 0.045 against 0.1 ms for 128x1024), so the matmul kernels apply it themselves.
void geluErfInPlace(float* y, int64_t n);

// Which implementation runs here: "sleef-avx512f", "sleef-avx2" or "libm".
const char* vecMathImplementation();

}  // namespace gkrt::cpu
