// The session's memory planner: every activation lives in one arena, at an offset
// chosen from its lifetime (the steps that write and read it) so that tensors whose
// lifetimes do not overlap share bytes. A kernel that reads each element before it
// writes it may give its output its dying input's bytes (in place); a tensor may also
// live inside another one's bytes, at a fixed offset (a concat's piece in its output).
//
//   std::vector<BufferRequest> req = ...;   // one per tensor to place
//   MemoryPlan plan = planMemory(req);
//   arena = allocate(plan.arena_bytes);  tensor t lives at arena + plan.offsets[t]
#pragma once

#include <cstddef>
#include <vector>

namespace gkrt {

struct BufferRequest {
  size_t bytes = 0;
  int first = 0, last = 0;  // steps (inclusive) where the tensor is written first and read last
  int share_with = -1;      // index of a request whose bytes this one takes over in place
  int inside = -1;          // index of a request whose bytes hold this one, from byte `at` on
  size_t at = 0;            // (a multiple of kArenaAlignment; at + bytes within that request)
};

struct MemoryPlan {
  size_t arena_bytes = 0;
  std::vector<size_t> offsets;  // per request
};

constexpr size_t kArenaAlignment = 64;

// Greedy by size: requests (in-place chains and tensors inside others merged first, each
// group one block living from its first member's first step to its last one's last)
// are placed largest first at the lowest aligned offset that no placed,
// lifetime-overlapping block occupies.
MemoryPlan planMemory(const std::vector<BufferRequest>& requests);

}  // namespace gkrt
