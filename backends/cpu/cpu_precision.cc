#include "backends/cpu/cpu_precision.h"

#include <atomic>

#include "runtime/log.h"

#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace gkrt::cpu {
namespace {
std::atomic<bool> forced_bf16{false};
std::atomic<bool> notice_given{false};
}  // namespace

bool cpuHasNativeBf16() {
#ifdef GKRT_HAVE_DNNL
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
#else
  return false;
#endif
}

std::string cpuIsaName() {
#ifdef GKRT_HAVE_DNNL
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
#else
  return "none (no oneDNN in this build)";
#endif
}

bool cpuUsesBf16(const BackendOptions& options) {
  if (options.precision != Precision::kBFloat16) return false;
  if (forced_bf16 || cpuHasNativeBf16()) return true;
  if (!notice_given.exchange(true)) {
    GKRT_LOG_WARNING("precision bf16: this CPU has no native bf16 (oneDNN ISA ", cpuIsaName(), "); running float32");
  }
  return false;
}

void forceCpuBf16ForTesting(bool on) { forced_bf16 = on; }

}  // namespace gkrt::cpu
