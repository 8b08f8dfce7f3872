// What the x86-64 CPU running the cpu backend can do, for kernels compiled twice (with
// __attribute__((target("avx2,fma"))) and for the baseline) and picked at run time.
// GCC's target_clones("avx2,fma") is no substitute: it makes one clone per feature and
// runs the AVX2 one without FMA; target_clones("arch=haswell") picks by CPU model and
// misses AMD CPUs.
#pragma once

namespace gkrt::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
inline bool cpuHasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#else
inline bool cpuHasAvx2Fma() { return false; }
#endif

}  // namespace gkrt::cpu
