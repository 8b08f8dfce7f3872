#include "backends/reduce_layout.h"

#include <utility>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {

ReduceLayout::ReduceLayout(Shape shape, std::vector<char> reduced) : shape_(std::move(shape)), reduced_(std::move(reduced)) {
  total_ = numElements(shape_);
  rows_ = 1;
  int block = 0;  // where the walk is: 0 before the reduced dims, 1 inside them, 2 after
  for (size_t d = 0; d < shape_.size(); ++d) {
    (reduced_[d] ? extent_ : rows_) *= shape_[d];
    if (shape_[d] == 1) continue;
    if (reduced_[d]) {
      if (block == 2) contiguous_ = false;
      block = 1;
    } else {
      if (block == 1) block = 2;
      (block == 0 ? outer_ : inner_) *= shape_[d];
    }
  }
}

bool ReduceLayout::isRowShaped(const Shape& u) const {
  if (numElements(u) != rows_) return false;
  Shape kept;
  for (size_t d = 0; d < shape_.size(); ++d) if (!reduced_[d]) kept.push_back(shape_[d]);
  return dropOnes(u) == dropOnes(kept);
}

bool ReduceLayout::broadcastsAsRow(const Shape& u) const {
  if (u.size() > shape_.size() || !broadcastsTo(u, shape_)) return false;
  const std::vector<int64_t> st = ops::broadcastStrides(u, shape_);
  int64_t expected = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] == 1) continue;
    if (reduced_[d] ? st[d] != 0 : st[d] != expected) return false;
    if (!reduced_[d]) expected *= shape_[d];
  }
  return true;
}

}  // namespace gkrt
