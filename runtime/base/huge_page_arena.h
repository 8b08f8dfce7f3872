// Memory for weights kernels stream as they are (a GGUF file's converted blocks, a
// session's block-quantized weights): a few large mappings handed out in 64-byte-aligned
// pieces, 2 MiB-aligned and marked for transparent huge pages before they are first
// touched (Linux madvise), so writing ~100 MB faults in 2 MiB pages, not 4 KiB ones, and
// a decode step streaming the weights walks 512x fewer pages (SmolLM2 int4 at 2 threads:
// 215 -> 281 tokens/s). Pieces are not freed one by one: the mappings go when the arena
// does (the constants in it hold it). Elsewhere (no mmap) plain aligned allocations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace gkrt {

class HugePageArena {
 public:
  explicit HugePageArena(size_t chunk_bytes = size_t(64) << 20) : chunk_bytes_(chunk_bytes) {}
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;
  ~HugePageArena();

  // `bytes` of uninitialised memory, 64-byte aligned; nullptr when out of memory.
  uint8_t* allocate(size_t bytes);

 private:
  struct Chunk {
    uint8_t* base = nullptr;
    size_t size = 0, used = 0;
    bool mapped = false;
  };
  size_t chunk_bytes_;
  std::mutex mu_;
  std::vector<Chunk> chunks_;
};

// `bytes` of uninitialised memory in a mapping of its own (Linux: given back to the system
// when the last owner lets go, where a freed malloc block may stay with the process;
// huge pages advised from 2 MiB); elsewhere an aligned allocation. Null when out of memory.
std::shared_ptr<uint8_t> mapPrivateBytes(size_t bytes);

// Whether the kernel hands out transparent huge pages to a madvise'd mapping (Linux,
// /sys/kernel/mm/transparent_hugepage/enabled not "never").
bool transparentHugePages();

}  // namespace gkrt
