#include "runtime/ir/shape.h"

#include <algorithm>
#include <cstddef>

namespace gkrt {

bool isStatic(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

std::string shapeToString(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += "x";
    out += s[i] < 0 ? "?" : std::to_string(s[i]);
  }
  return out;
}

StatusOr<int64_t> checkedNumElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return makeError(StatusCode::kInvalidArgument, "shape ", shapeToString(s), " is not static");
    if (d != 0 && n > kMaxElements / d) {
      return makeError(StatusCode::kInvalidArgument, "shape ", shapeToString(s), " has more than 2^40 elements");
    }
    n *= d;
  }
  return n;
}

int64_t numElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> contiguousStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

bool broadcastsTo(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t d = in[in.size() - 1 - k], o = out[out.size() - 1 - k];
    if (d != o && d != 1) return false;
  }
  return true;
}

Shape stripLeadingOnes(const Shape& s) {
  size_t k = 0;
  while (k + 1 < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

bool sameModLeadingOnes(const Shape& a, const Shape& b) { return stripLeadingOnes(a) == stripLeadingOnes(b); }

Shape dropOnes(const Shape& s) {
  Shape out;
  for (int64_t d : s) if (d != 1) out.push_back(d);
  return out;
}

StatusOr<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (da < 0 || db < 0) {
      out[i] = kUnknownDim;
    } else {
      return makeError(StatusCode::kInvalidArgument, "shapes ", shapeToString(a), " and ", shapeToString(b),
                       " cannot be broadcast (dim ", i, ": ", da, " vs ", db, ")");
    }
  }
  return out;
}

StatusOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return makeError(StatusCode::kInvalidArgument, "axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace gkrt
