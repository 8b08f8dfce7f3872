// Where the values of a reduction live, for backends that fuse reductions with their
// elementwise neighbours (the cpu reduce-cluster executor, the cluster renderer).
// A reduction over `reduced` dims of `shape` leaves one value per row; rows are
// numbered flat over the kept dims, in order.
//
//   ReduceLayout l({8, 128, 64}, {0, 1, 0});  // rows() == 8 * 64, extent() == 128
//   l.broadcastsAsRow({8, 1, 64})  -> true: one value per row, in row order
#pragma once

#include <vector>

#include "runtime/ir/shape.h"

namespace gkrt {

class ReduceLayout {
 public:
  ReduceLayout() = default;
  ReduceLayout(Shape shape, std::vector<char> reduced);

  const Shape& shape() const { return shape_; }
  const std::vector<char>& reduced() const { return reduced_; }
  int64_t total() const { return total_; }
  int64_t extent() const { return extent_; }  // elements reduced into each row's value
  int64_t rows() const { return rows_; }

  // True when the reduced dims (size-1 dims ignored) are one block, so that the element
  // at flat index (o * extent() + r) * inner() + i is position r of row o * inner() + i.
  bool contiguous() const { return contiguous_; }
  int64_t outer() const { return outer_; }
  int64_t inner() const { return inner_; }

  bool isFullShaped(const Shape& u) const { return sameModLeadingOnes(u, shape_); }
  // One value per row, in row order (any keep_dims spelling).
  bool isRowShaped(const Shape& u) const;
  // Broadcast to shape(), `u` varies exactly along the kept dims, in row order.
  bool broadcastsAsRow(const Shape& u) const;

 private:
  Shape shape_;
  std::vector<char> reduced_;
  int64_t total_ = 0, extent_ = 1, rows_ = 0, outer_ = 1, inner_ = 1;
  bool contiguous_ = true;
};

}  // namespace gkrt
