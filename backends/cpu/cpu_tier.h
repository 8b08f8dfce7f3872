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

// A loop whose body the compiler vectorises, built once per x86-64 tier and picked by
// cpuTier() (read once, on the function's first call):
//   GKRT_INLINE_BODY float addRowBody(float* s, const float* a, int64_t n) { ...loop... }
//   GKRT_TIERED(float, addRow, (float* s, const float* a, int64_t n), (s, a, n), "avx512f", "fma")
// defines addRow: the body in a function with target("avx512f") for the AVX-512 tiers,
// target("fma") for AVX2, and a baseline build. GKRT_TIERED_AVX2 has no AVX-512 build (the
// AVX-512 tiers run the AVX2 one). Each loop keeps the instruction subset it was measured
// with ("fma" contracts a * b + c, plain "avx2" does not). A body written with GCC vector
// types takes the tier's vector type instead (GKRT_TIERED_LANES: nameBody<V16>, <V8> or
// <V4> in GKRT_TARGET_AVX512 / GKRT_TARGET_AVX2 / baseline functions; a 16-float vector in
// an AVX2 function goes through the stack). Without x86 tiers (Arm) each is the baseline body.
#define GKRT_INLINE_BODY __attribute__((always_inline)) inline
#ifdef GKRT_X86_TIERS
#define GKRT_TIERED(ret, name, params, args, t512, t256)                                              \
  __attribute__((target(t512), flatten)) static ret name##OnAvx512 params { return name##Body args; } \
  __attribute__((target(t256), flatten)) static ret name##OnAvx2 params { return name##Body args; }   \
  __attribute__((flatten)) static ret name##OnBaseline params { return name##Body args; }             \
  ret name params {                                                                                   \
    static const int tier_ = ::gkrt::cpu::vectorTierIndex();                                          \
    if (tier_ == 2) return name##OnAvx512 args;                                                       \
    if (tier_ == 1) return name##OnAvx2 args;                                                         \
    return name##OnBaseline args;                                                                     \
  }
#define GKRT_TIERED_LANES(name, params, args)                                                 \
  GKRT_TARGET_AVX512 static void name##OnAvx512 params { name##Body<::gkrt::cpu::V16> args; } \
  GKRT_TARGET_AVX2 static void name##OnAvx2 params { name##Body<::gkrt::cpu::V8> args; }      \
  static void name##OnBaseline params { name##Body<::gkrt::cpu::V4> args; }                   \
  void name params {                                                                          \
    static const int tier_ = ::gkrt::cpu::vectorTierIndex();                                  \
    if (tier_ == 2) return name##OnAvx512 args;                                               \
    if (tier_ == 1) return name##OnAvx2 args;                                                 \
    name##OnBaseline args;                                                                    \
  }
#define GKRT_TIERED_AVX2(ret, name, params, args, t256)                                             \
  __attribute__((target(t256), flatten)) static ret name##OnAvx2 params { return name##Body args; } \
  __attribute__((flatten)) static ret name##OnBaseline params { return name##Body args; }           \
  ret name params {                                                                                 \
    static const bool avx2_ = ::gkrt::cpu::cpuTier().has(::gkrt::cpu::CpuIsa::kAvx2);               \
    if (avx2_) return name##OnAvx2 args;                                                            \
    return name##OnBaseline args;                                                                   \
  }
#else
#define GKRT_TIERED(ret, name, params, args, t512, t256) \
  ret name params { return name##Body args; }
#define GKRT_TIERED_AVX2(ret, name, params, args, t256) \
  ret name params { return name##Body args; }
#define GKRT_TIERED_LANES(name, params, args) \
  void name params { name##Body<::gkrt::cpu::V4> args; }
#endif

namespace gkrt::cpu {

// GCC vectors of 4, 8 and 16 floats (GKRT_TIERED_LANES).
typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

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
// Which build of a GKRT_TIERED / GKRT_TIERED_LANES site runs: 2 AVX-512, 1 AVX2, 0 baseline.
inline int vectorTierIndex() {
  return cpuTier().has(CpuIsa::kAvx512) ? 2 : cpuTier().has(CpuIsa::kAvx2) ? 1 : 0;
}

// "avx2", "avx512_vnni", ...: the names GKRT_CPU_ISA takes.
const char* cpuIsaName(CpuIsa isa);

// One line: "detected avx512_vnni, effective avx2 (GKRT_CPU_ISA=avx2); oneDNN avx2".
std::string cpuTierSummary();

}  // namespace gkrt::cpu
