// Shapes: dims are int64; -1 marks a dimension not known until inputs are set
// (a symbolic dim keeps its name in Tensor::dim_symbols).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt {

using Shape = std::vector<int64_t>;
constexpr int64_t kUnknownDim = -1;
// Element counts above this are rejected: no tensor on an embedded board gets near it,
// and it keeps every byte count far from int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;

bool isStatic(const Shape& s);
std::string shapeToString(const Shape& s);  // "4x4", "scalar" for rank 0
// Element count, or an error when a dim is negative/unknown or the product is too large.
StatusOr<int64_t> checkedNumElements(const Shape& s);
// Element count of a shape already known valid (static, in range).
int64_t numElements(const Shape& s);
// Row-major strides in elements.
std::vector<int64_t> contiguousStrides(const Shape& s);
// Whether `in` broadcasts to `out` unchanged (numpy rules, `in` of no higher rank).
bool broadcastsTo(const Shape& in, const Shape& out);
// Leading 1s removed (a rank-0 result keeps one dim); shapes equal but for leading 1s;
// every 1 removed.
Shape stripLeadingOnes(const Shape& s);
bool sameModLeadingOnes(const Shape& a, const Shape& b);
Shape dropOnes(const Shape& s);
// Numpy-style broadcast of two shapes; error names both shapes.
StatusOr<Shape> broadcastShapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against rank; error when out of [-rank, rank).
StatusOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

}  // namespace gkrt
