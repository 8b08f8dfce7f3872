#include "runtime/base/huge_page_arena.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gkrt {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kAlign = 64;

HugePageArena::~HugePageArena() {
  for (const Chunk& c : chunks_) {
#if defined(__linux__)
    if (c.mapped) {
      ::munmap(c.base, c.size);
      continue;
    }
#endif
    std::free(c.base);
  }
}

uint8_t* HugePageArena::allocate(size_t bytes) {
  bytes = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(mu_);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < bytes) {
    Chunk c;
    c.size = (std::max(bytes, chunk_bytes_) + kHugePage - 1) / kHugePage * kHugePage;
#if defined(__linux__)
    // Mapped one huge page over, the unaligned head and tail given back: address space
    // only, touched (and zeroed by the kernel) page by page as conversion writes it.
    void* m = ::mmap(nullptr, c.size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    uint8_t* raw = static_cast<uint8_t*>(m);
    uint8_t* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) / kHugePage * kHugePage);
    if (aligned > raw) ::munmap(raw, size_t(aligned - raw));
    const size_t tail = size_t(raw + c.size + kHugePage - (aligned + c.size));
    if (tail) ::munmap(aligned + c.size, tail);
#if defined(MADV_HUGEPAGE)
    ::madvise(aligned, c.size, MADV_HUGEPAGE);  // advice only: no error where THP is off
#endif
    c.base = aligned;
    c.mapped = true;
#else
    c.base = static_cast<uint8_t*>(std::aligned_alloc(kAlign, c.size));
    if (!c.base) return nullptr;
#endif
    chunks_.push_back(c);
  }
  Chunk& c = chunks_.back();
  uint8_t* p = c.base + c.used;
  c.used += bytes;
  return p;
}

std::shared_ptr<uint8_t> mapPrivateBytes(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
#if defined(__linux__)
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
#if defined(MADV_HUGEPAGE)
  if (bytes >= kHugePage) ::madvise(m, bytes, MADV_HUGEPAGE);
#endif
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(m), [bytes](uint8_t* p) { ::munmap(p, bytes); });
#else
  uint8_t* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
  if (!p) return nullptr;
  return std::shared_ptr<uint8_t>(p, [](uint8_t* q) { std::free(q); });
#endif
}

bool transparentHugePages() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  static const bool on = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(f, modes);
    return !modes.empty() && modes.find("[never]") == std::string::npos;
  }();
  return on;
#else
  return false;
#endif
}

}  // namespace gkrt
