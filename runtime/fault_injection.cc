#include "runtime/fault_injection.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "runtime/base/log.h"

namespace gkrt {

bool faultInjected(std::string_view point) {
  const char* env = std::getenv("GKRT_FAULT");
  if (env == nullptr || *env == '\0') return false;
  std::string_view list(env);
  bool hit = false;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (name == point) hit = true;
    if (name != "cache_read_only" && name != "cache_full" && name != "output_full" && !name.empty()) {
      GKRT_LOG_WARNING("GKRT_FAULT: unknown fault point '", std::string(name),
                       "' ignored; known: cache_read_only, cache_full, output_full");
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return hit;
}

size_t writeOrFault(const void* data, size_t bytes, std::FILE* f, std::string_view full_point) {
  if (!faultInjected(full_point)) return std::fwrite(data, 1, bytes, f);
  const size_t written = std::fwrite(data, 1, bytes / 2, f);
  errno = ENOSPC;
  return written;
}

}  // namespace gkrt
