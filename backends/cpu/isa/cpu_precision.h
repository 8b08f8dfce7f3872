// bf16 on the cpu backend (BackendOptions::precision, `--precision bf16`).
//
//   if (cpuUsesBf16(options)) ... compileOneDnn(g, node, /*bf16=*/true) ...
//
// GEMMs (MatMul, BatchMatMul, Gemm on oneDNN) take bf16 operands with float32
// accumulation and output only where the CPU computes bf16 natively (oneDNN's ISA is
// avx512_core_bf16 or avx512_core_amx): oneDNN's bf16 kernels elsewhere are emulation or
// reference code, slower than float32. Elsewhere the session runs float32 and the log
// says so once per process ("precision bf16: this CPU has no native bf16 ...; running
// float32"); `gkrt compare` then reports an accuracy cost of 0. Convolutions stay float32.
#pragma once

#include <string>

#include "backends/backend.h"

namespace gkrt::cpu {

// Whether oneDNN on this CPU computes bf16 natively: the tier includes avx512_bf16
// (cpu_tier.h; false in builds without oneDNN).
bool cpuHasNativeBf16();
// Whether a cpu backend with `options` runs its GEMMs in bf16; logs the fallback notice.
bool cpuUsesBf16(const BackendOptions& options);
// Tests: take the bf16 path even on a CPU without native bf16 (oneDNN may refuse it,
// and the GEMM then runs in float32 as on any other refusal).
void forceCpuBf16ForTesting(bool on);

}  // namespace gkrt::cpu
