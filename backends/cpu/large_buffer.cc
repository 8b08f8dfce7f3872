#include "backends/cpu/large_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gkrt::cpu {

constexpr size_t kHugePage = size_t(2) << 20;

LargeBuffer::LargeBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) {  // out of memory: as a std::vector would be (bad_alloc, or abort in builds without exceptions)
#if defined(__cpp_exceptions)
    throw std::bad_alloc();
#else
    std::abort();
#endif
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: no error if THP is off
#endif
  std::memset(p, 0, rounded);
  data_.reset(p);
}

void LargeBuffer::Free::operator()(void* p) const { std::free(p); }

}  // namespace gkrt::cpu
