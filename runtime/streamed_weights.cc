#include "runtime/streamed_weights.h"

#include <cstring>
#include <map>
#include <memory>

#include "runtime/base/huge_page_arena.h"

namespace gkrt {

size_t placeStreamedWeights(ir::Graph& g, const Backend& backend) {
  if (!transparentHugePages()) return 0;
  constexpr size_t kSmallest = 4096;  // a page: smaller constants gain nothing
  std::shared_ptr<HugePageArena> arena;
  std::map<const ir::ConstData*, std::shared_ptr<const ir::ConstData>> copies;  // one copy a constant
  size_t copied = 0;
  for (const ir::Node& n : g.nodes) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] < 0 || !backend.streamsConstantInput(n, k)) continue;
      ir::Tensor& t = g.tensors[size_t(n.inputs[k])];
      if (!t.constant || t.constant->huge_pages || t.constant->size < kSmallest) continue;
      auto it = copies.find(t.constant.get());
      if (it == copies.end()) {
        if (!arena) arena = std::make_shared<HugePageArena>();
        uint8_t* p = arena->allocate(t.constant->size);
        if (!p) return copied;  // out of memory: the rest stay where they are
        std::memcpy(p, t.constant->data, t.constant->size);
        auto c = std::make_shared<ir::ConstData>();
        c->data = p;
        c->size = t.constant->size;
        c->owner = arena;
        c->huge_pages = true;
        copied += c->size;
        it = copies.emplace(t.constant.get(), std::move(c)).first;
      }
      t.constant = it->second;
    }
  }
  return copied;
}

}  // namespace gkrt
