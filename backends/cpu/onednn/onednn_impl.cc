#include "backends/cpu/onednn/onednn_impl.h"

namespace gkrt::cpu {

bool isReferenceImpl(const std::string& impl) {
  return impl.rfind("ref", 0) == 0 || impl.rfind("simple_", 0) == 0 || impl.find("gemm:ref") != std::string::npos ||
         impl.find(":ref") != std::string::npos;
}

#ifdef GKRT_HAVE_DNNL
bool sameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  if (a == b) return true;
  const dnnl::memory::dims da = a.dims(), db = b.dims();
  if (da != db || a.data_type() != b.data_type() || a.get_size() != b.get_size() || da.empty()) return false;
  // Every dim but one is 1 and neither pads: any dense layout orders that dim's elements
  // one after another from offset 0.
  int64_t elements = 1, larger = 0;
  for (int64_t d : da) {
    elements *= d;
    larger += d > 1;
  }
  return larger <= 1 && a.get_size() == static_cast<size_t>(elements) * dnnl::memory::data_type_size(a.data_type());
}
#endif

}  // namespace gkrt::cpu
