// Float32 activations times constant weights that are whole numbers in [-127, 127] times
// one scale per column (weight-only int8 models: their Cast + Mul is folded into float32
// weights at compile, and the folded values are recognised here) as three exact int8
// products on the CPU's int8 matrix units, with float32 accuracy:
//
//   each row of A, scaled so its largest magnitude is 127, is written as three base-256
//   digits, x = d1 + d2 / 256 + d3 / 65536 (d1 in [-128, 127], d2 and d3 in [0, 255]),
//   to within 2^-24 of the row's largest value; A W = the sum of the three digit
//   products (int32 sums, exact), each scaled per column and summed into the output by
//   oneDNN (output scales, a sum post-op), then scaled back per row.
//
// So the kernel's copy of the weights is 8 bits (in oneDNN's layout) instead of 32, and
// the products run on AMX's int8 tiles: the corpus's int8 MiniLM 21.3 -> 8.8 ms at one
// thread on an AMX Xeon, with results as close to the exact product as the float32
// GEMM's (docs/quantization.md). Rows holding an Inf or a NaN are computed in float32
// from the model's weights (IEEE's results). The chain after the product may be a bias
// row, ReLU, a residual of the product's shape and a closing erf GeLU; other chains,
// transposed activations, batched weights and small products keep the float32 kernel
// (makeInt8DigitMatMul returns null).
#pragma once

#ifdef GKRT_HAVE_DNNL
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/onednn/onednn_matmul_plan.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// The int8-digit kernel for `plan`, or null where it does not apply: the weights are not
// integers times column scales, the product is small (under 16 rows or 2^21
// multiply-adds), or oneDNN has no AMX int8 matmul here (the tier, GKRT_CPU_ISA caps it).
std::unique_ptr<Kernel> makeInt8DigitMatMul(const MatMulPlan& plan, ThreadPool* pool);

}  // namespace gkrt::cpu
#endif
