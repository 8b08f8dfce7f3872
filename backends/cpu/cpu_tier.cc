#include "backends/cpu/cpu_tier.h"

#include <cstdlib>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#include <sys/auxv.h>
#endif
#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace gkrt::cpu {
namespace {

struct IsaName {
  CpuIsa isa;
  const char* name;
};
constexpr IsaName kNames[] = {
    {CpuIsa::kScalar, "scalar"},           {CpuIsa::kAvx2, "avx2"},           {CpuIsa::kAvx512, "avx512"},
    {CpuIsa::kAvx512Vnni, "avx512_vnni"}, {CpuIsa::kAvx512Bf16, "avx512_bf16"}, {CpuIsa::kAvx512Amx, "avx512_amx"},
    {CpuIsa::kNeon, "neon"},               {CpuIsa::kDotProd, "dotprod"},     {CpuIsa::kI8mm, "i8mm"},
    {CpuIsa::kSve, "sve"},
};

bool isX86(CpuIsa i) { return i >= CpuIsa::kAvx2 && i <= CpuIsa::kAvx512Amx; }
bool isArm(CpuIsa i) { return i >= CpuIsa::kNeon; }

#if defined(__x86_64__) && defined(__GNUC__)
// Intel's AVX-512 cores and AMD's from Zen 5 (family 0x1A) run 512-bit FMAs at full width;
// Zen 4 (family 0x19) splits them in two.
bool fullWidth512() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "GenuineIntel"
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;    // "AuthenticAMD"
  if (intel) return true;
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned family = ((a >> 8) & 0xf) + ((a >> 20) & 0xff);
  return family >= 0x1A;
}

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuIsa detectX86(bool* avx_vnni, bool* vbmi) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return CpuIsa::kScalar;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!osxsave || !avx) return CpuIsa::kScalar;
  const uint64_t xcr0 = xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return CpuIsa::kScalar;  // the OS saves no AVX state
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0, tmp = 0;
  if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) return CpuIsa::kScalar;
  __get_cpuid_count(7, 1, &a71, &tmp, &tmp, &tmp);
  *avx_vnni = a71 & (1u << 4);
  *vbmi = c7 & (1u << 1);
  const bool avx2 = b7 & (1u << 5);
  if (!avx2 || !fma || !f16c) return CpuIsa::kScalar;
  const bool zmm_state = (xcr0 & 0xe0) == 0xe0;
  const bool avx512 = zmm_state && (b7 & (1u << 16)) && (b7 & (1u << 17)) && (b7 & (1u << 30)) && (b7 & (1u << 31));
  if (!avx512) return CpuIsa::kAvx2;
  if (!(c7 & (1u << 11))) return CpuIsa::kAvx512;  // AVX512_VNNI
  if (!(a71 & (1u << 5))) return CpuIsa::kAvx512Vnni;  // AVX512_BF16
  const bool amx = (d7 & (1u << 22)) && (d7 & (1u << 24)) && (d7 & (1u << 25)) && (xcr0 & (3ull << 17)) == (3ull << 17);
  return amx ? CpuIsa::kAvx512Amx : CpuIsa::kAvx512Bf16;
}
#endif

#if defined(__linux__) && defined(__aarch64__)
CpuIsa detectArm() {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (!(hw & (1ul << 1))) return CpuIsa::kScalar;   // HWCAP_ASIMD
  if (!(hw & (1ul << 20))) return CpuIsa::kNeon;    // HWCAP_ASIMDDP
  if (!(hw2 & (1ul << 13))) return CpuIsa::kDotProd;  // HWCAP2_I8MM
  return (hw & (1ul << 22)) ? CpuIsa::kSve : CpuIsa::kI8mm;  // HWCAP_SVE
}
#elif defined(__linux__) && defined(__arm__)
CpuIsa detectArm() { return (getauxval(AT_HWCAP) & (1ul << 12)) ? CpuIsa::kNeon : CpuIsa::kScalar; }  // HWCAP_NEON
#endif

CpuIsa detect(bool* avx_vnni, bool* vbmi) {
#if defined(__x86_64__) && defined(__GNUC__)
  return detectX86(avx_vnni, vbmi);
#elif defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
  (void)avx_vnni;
  (void)vbmi;
  return detectArm();
#else
  (void)avx_vnni;
  (void)vbmi;
  return CpuIsa::kScalar;
#endif
}

#ifdef GKRT_HAVE_DNNL
dnnl::cpu_isa oneDnnCap(CpuIsa isa, bool avx_vnni) {
  switch (isa) {
    case CpuIsa::kScalar: return dnnl::cpu_isa::sse41;
    case CpuIsa::kAvx2: return avx_vnni ? dnnl::cpu_isa::avx2_vnni : dnnl::cpu_isa::avx2;
    case CpuIsa::kAvx512: return dnnl::cpu_isa::avx512_core;
    case CpuIsa::kAvx512Vnni: return dnnl::cpu_isa::avx512_core_vnni;
    case CpuIsa::kAvx512Bf16: return dnnl::cpu_isa::avx512_core_bf16;
    default: return dnnl::cpu_isa::all;
  }
}

std::string oneDnnIsaName() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}
#endif

CpuTier makeTier() {
  CpuTier t;
  t.detected = detect(&t.avx_vnni, &t.avx512_vbmi);
  t.effective = t.detected;
  const char* env = std::getenv("GKRT_CPU_ISA");
  t.cap = env ? env : "";
  if (!t.cap.empty() && t.cap != "native") {
    bool known = false;
    for (const IsaName& n : kNames) {
      if (t.cap != n.name) continue;
      known = true;
      // A cap lowers within the machine's family; scalar caps every family.
      if (n.isa == CpuIsa::kScalar) t.effective = CpuIsa::kScalar;
      else if (isX86(n.isa) == isX86(t.detected) && isArm(n.isa) == isArm(t.detected) && n.isa < t.detected) t.effective = n.isa;
    }
    if (!known) {
      t.cap_error = "GKRT_CPU_ISA='" + t.cap + "' is not a CPU tier; use native or one of";
      for (const IsaName& n : kNames) t.cap_error += std::string(n.isa == CpuIsa::kScalar ? " " : ", ") + n.name;
      t.cap_error += std::string(" (this CPU runs up to ") + cpuIsaName(t.detected) + ")";
      t.effective = t.detected;
    }
  }
  if (!t.has(CpuIsa::kAvx2)) t.avx_vnni = false;  // capped below it
  if (!t.has(CpuIsa::kAvx512)) t.avx512_vbmi = false;
#if defined(__x86_64__) && defined(__GNUC__)
  t.full_width_512 = t.has(CpuIsa::kAvx512) && fullWidth512();
#endif
#ifdef GKRT_HAVE_DNNL
  if (t.effective != t.detected) dnnl::set_max_cpu_isa(oneDnnCap(t.effective, t.avx_vnni));
  t.onednn_isa = oneDnnIsaName();
#else
  t.onednn_isa = "none (no oneDNN in this build)";
#endif
  return t;
}

}  // namespace

bool CpuTier::has(CpuIsa isa) const {
  if (isa == CpuIsa::kScalar) return true;
  if (isX86(isa)) return isX86(effective) && effective >= isa;
  return isArm(effective) && effective >= isa;
}

int CpuTier::vectorFloats() const {
  if (has(CpuIsa::kAvx512)) return 16;
  if (has(CpuIsa::kAvx2)) return 8;
  return 4;
}

std::vector<CpuIsa> CpuTier::runnable() const {
  std::vector<CpuIsa> out{CpuIsa::kScalar};
  for (const IsaName& n : kNames) {
    if (n.isa == CpuIsa::kScalar) continue;
    const bool same_family = isX86(n.isa) == isX86(detected) && isArm(n.isa) == isArm(detected);
    if (same_family && n.isa <= detected) out.push_back(n.isa);
  }
  return out;
}

const CpuTier& cpuTier() {
  static const CpuTier tier = makeTier();
  return tier;
}

const char* cpuIsaName(CpuIsa isa) {
  for (const IsaName& n : kNames) if (n.isa == isa) return n.name;
  return "unknown";
}

std::string cpuTierSummary() {
  const CpuTier& t = cpuTier();
  std::string s = std::string("detected ") + cpuIsaName(t.detected) + ", effective " + cpuIsaName(t.effective);
  if (!t.cap.empty()) s += " (GKRT_CPU_ISA=" + t.cap + ")";
  if (t.avx_vnni) s += ", AVX-VNNI";
  if (t.full_width_512) s += ", full-width 512-bit FMAs";
  return s + "; oneDNN " + t.onednn_isa;
}

}  // namespace gkrt::cpu
