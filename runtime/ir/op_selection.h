// Build-time op selection for minimal builds. A build configured with
// -DGKRT_OP_LIST=ops.txt (written by `gkrt convert --emit-op-list`) defines
// GKRT_SELECTED_OPS and generates selected_ops.inc, a list of string literals; each
// op family then registers only the listed ops, and the kernels of the others are
// never referenced, so the linker leaves them out. Other builds register every op.
#pragma once

#include <string_view>

namespace gkrt {

#ifdef GKRT_SELECTED_OPS
constexpr bool kMinimalOpSet = true;
inline constexpr std::string_view kSelectedOps[] = {
#include "selected_ops.inc"
};
constexpr bool opSelected(std::string_view name) {
  for (std::string_view s : kSelectedOps) {
    if (s == name) return true;
  }
  return false;
}
#else
constexpr bool kMinimalOpSet = false;
constexpr bool opSelected(std::string_view) { return true; }
#endif

}  // namespace gkrt
