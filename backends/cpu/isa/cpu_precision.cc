#include "backends/cpu/isa/cpu_precision.h"

#include <atomic>

#include "backends/cpu/cpu_tier.h"
#include "runtime/base/log.h"

namespace gkrt::cpu {
namespace {
std::atomic<bool> forced_bf16{false};
std::atomic<bool> notice_given{false};
}  // namespace

bool cpuHasNativeBf16() {
#ifdef GKRT_HAVE_DNNL
  return cpuTier().has(CpuIsa::kAvx512Bf16);
#else
  return false;
#endif
}

bool cpuUsesBf16(const BackendOptions& options) {
  if (options.precision != Precision::kBFloat16) return false;
  if (forced_bf16 || cpuHasNativeBf16()) return true;
  if (!notice_given.exchange(true)) {
    GKRT_LOG_WARNING("precision bf16: this CPU has no native bf16 (", cpuTierSummary(), "); running float32");
  }
  return false;
}

void forceCpuBf16ForTesting(bool on) { forced_bf16 = on; }

}  // namespace gkrt::cpu
