#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace gkrt {
namespace {

size_t alignUp(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// The request whose block holds request i, and i's byte offset in that block.
int rootOf(const std::vector<BufferRequest>& r, int i, size_t* at = nullptr) {
  size_t off = 0;
  for (;;) {
    const BufferRequest& q = r[static_cast<size_t>(i)];
    if (q.share_with >= 0) {
      i = q.share_with;
    } else if (q.inside >= 0) {
      off += q.at;
      i = q.inside;
    } else {
      break;
    }
  }
  if (at) *at = off;
  return i;
}

}  // namespace

MemoryPlan planMemory(const std::vector<BufferRequest>& requests) {
  const int n = static_cast<int>(requests.size());
  // In-place chains and tensors inside others become one block: the root's bytes (and
  // its members' extents), the union of the lifetimes.
  struct Block { size_t bytes = 0; int first = 0, last = -1; bool used = false; };
  std::vector<Block> blocks(static_cast<size_t>(n));
  std::vector<size_t> at(static_cast<size_t>(n), 0);
  std::vector<int> root(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    root[size_t(i)] = rootOf(requests, i, &at[size_t(i)]);
    Block& b = blocks[static_cast<size_t>(root[size_t(i)])];
    const BufferRequest& r = requests[static_cast<size_t>(i)];
    b.first = b.used ? std::min(b.first, r.first) : r.first;
    b.last = b.used ? std::max(b.last, r.last) : r.last;
    b.bytes = std::max(b.bytes, alignUp(at[size_t(i)] + r.bytes));
    b.used = true;
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i) if (root[size_t(i)] == i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return blocks[size_t(a)].bytes > blocks[size_t(b)].bytes; });

  MemoryPlan plan;
  plan.offsets.assign(static_cast<size_t>(n), 0);
  std::vector<int> placed;
  for (int i : order) {
    const Block& b = blocks[static_cast<size_t>(i)];
    // Occupied ranges of lifetime-overlapping placed blocks, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (int j : placed) {
      const Block& o = blocks[static_cast<size_t>(j)];
      if (o.first <= b.last && b.first <= o.last) busy.push_back({plan.offsets[size_t(j)], plan.offsets[size_t(j)] + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;  // lowest gap that fits
    for (const auto& [lo, hi] : busy) {
      if (lo >= offset + b.bytes) break;
      offset = std::max(offset, hi);
    }
    plan.offsets[static_cast<size_t>(i)] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    placed.push_back(i);
  }
  for (int i = 0; i < n; ++i) plan.offsets[static_cast<size_t>(i)] = plan.offsets[size_t(root[size_t(i)])] + at[size_t(i)];
  return plan;
}

}  // namespace gkrt
