// The CPU's instruction-set tier: detected once, capped by GKRT_CPU_ISA, and read by every
// kernel of the cpu backend that has more than one build (AVX-512, AVX2+FMA, NEON, the
// portable one) and by oneDNN (the cap becomes dnnl::set_max_cpu_isa).
//
//   const CpuTier& t = cpuTier();
//   if (t.has(CpuIsa::kAvx512)) ...avx512 kernel... else if (t.has(CpuIsa::kAvx2)) ... else ...portable...
//   t.vectorFloats()   // 16, 8 or 4: the channel block, GEMM panel and vector width
//
// Tiers, each including the ones before it in its family:
//   x86-64: scalar (SSE2 baseline) < avx2 (AVX2+FMA+F16C) < avx512 (F, BW, VL, DQ)
//           < avx512_vnni < avx512_bf16 < avx512_amx (AMX tiles, int8 and bf16)
//   Arm:    scalar < neon < dotprod (SDOT/UDOT) < i8mm (SMMLA) < sve
// GKRT_CPU_ISA=<tier> runs this machine at that tier or below (a cap above what the CPU
// has changes nothing); a value that is not a tier is an error the cpu backend reports.
// `gkrt info --cpu` prints the detected and the effective tier.
#pragma once

#include <string>
#include <vector>

// Builds of one loop per x86-64 tier, picked at run time with cpuTier().has(...) (so
// GKRT_CPU_ISA caps them; a target_clones resolver would ignore the cap, and its
// "arch=haswell" clone never runs on AMD CPUs):
//   GKRT_TARGET_AVX2 void loopAvx2(...) { loopBody<1>(...); }   // body: always_inline template
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GKRT_X86_TIERS 1
#define GKRT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define GKRT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#endif

namespace gkrt::cpu {

enum class CpuIsa { kScalar, kAvx2, kAvx512, kAvx512Vnni, kAvx512Bf16, kAvx512Amx, kNeon, kDotProd, kI8mm, kSve };

struct CpuTier {
  CpuIsa detected = CpuIsa::kScalar;   // what the CPU (and the OS) can run
  CpuIsa effective = CpuIsa::kScalar;  // what gkrt and oneDNN use: detected, capped
  std::string cap;                     // GKRT_CPU_ISA as given ("" when unset)
  std::string cap_error;               // GKRT_CPU_ISA names no tier: why, and the choices
  bool avx_vnni = false;               // AVX-VNNI (256-bit, Alder Lake and later), x86 only
  bool avx512_vbmi = false;            // AVX512_VBMI byte permutes (Ice Lake, Zen 4 and later), with an avx512 tier only
  // 512-bit FMAs at full width (Intel's AVX-512 cores, AMD from Zen 5), not split into two
  // 256-bit halves as on Zen 4; with an avx512 tier only. Kernel choices that depend on the
  // core rather than the instruction set read it (docs/backends.md, Winograd).
  bool full_width_512 = false;
  std::string onednn_isa;              // oneDNN's effective ISA ("avx2", ...; "none")

  // Whether the effective tier includes `isa` (same family, at or above it).
  bool has(CpuIsa isa) const;
  // Floats in one vector register of the effective tier (16 AVX-512, 8 AVX2, 4 otherwise).
  int vectorFloats() const;
  // The tiers this machine can run, lowest first (GKRT_CPU_ISA accepts each).
  std::vector<CpuIsa> runnable() const;
};

// The tier of this process: detected and capped on the first call (GKRT_CPU_ISA read then).
const CpuTier& cpuTier();

// "avx2", "avx512_vnni", ...: the names GKRT_CPU_ISA takes.
const char* cpuIsaName(CpuIsa isa);

// One line: "detected avx512_vnni, effective avx2 (GKRT_CPU_ISA=avx2); oneDNN avx2".
std::string cpuTierSummary();

}  // namespace gkrt::cpu
