#include "tools/array_print.h"

#include "runtime/ir/ops/op_helpers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

namespace gkrt {
namespace {

constexpr int kPrecision = 8;  // numpy's default print precision

// Shortest round-trip digits of a float32, as numpy's dragon4 with unique=True.
std::string shortestFixed(float v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

// numpy's float formatting in 'maxprec' mode: unique digits, at most 8 after the point,
// trailing zeros dropped, a bare "." for integral values.
std::string formatFloat(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = shortestFixed(v);
  size_t dot = s.find('.');
  if (dot == std::string::npos) return s + ".";
  if (s.size() - dot - 1 > kPrecision) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", kPrecision, static_cast<double>(v));
    s = buf;
    while (!s.empty() && s.back() == '0') s.pop_back();
  }
  return s;
}

std::string formatScientific(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  std::string mant = s.substr(0, e), exp = s.substr(e + 1);
  if (mant.find('.') == std::string::npos) mant += ".";
  const bool neg = exp[0] == '-';
  std::string digits = exp.substr(exp[0] == '-' || exp[0] == '+' ? 1 : 0);
  while (digits.size() < 2) digits = "0" + digits;
  return mant + "e" + (neg ? "-" : "+") + digits;
}

}  // namespace

std::string formatArray(const HostTensor& t) {
  const int64_t n = t.size();
  const std::vector<float> values = t.toFloats();
  std::vector<std::string> items(n);
  const bool is_float = isFloat(t.dtype()) || isNarrowFloat(t.dtype());
  bool scientific = false;
  if (is_float) {
    float max_abs = 0, min_abs = INFINITY;
    for (float v : values) {
      if (!std::isfinite(v)) continue;
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != 0) min_abs = std::min(min_abs, std::fabs(v));
    }
    scientific = max_abs >= 1e8f || (min_abs < 1e-4f) || (min_abs != INFINITY && max_abs / min_abs > 1e3f);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype() == DType::kBool) items[i] = values[i] != 0 ? "True" : "False";
    else if (!is_float) ops::withIntegerType(t.dtype(), [&](auto tag) { items[i] = std::to_string(t.as<decltype(tag)>()[i]); });
    else items[i] = scientific ? formatScientific(values[i]) : formatFloat(values[i]);
  }
  if (is_float && !scientific) {  // pad the fraction so the points line up, as numpy does
    size_t frac = 0;
    for (const std::string& s : items) {
      const size_t dot = s.find('.');
      if (dot != std::string::npos) frac = std::max(frac, s.size() - dot - 1);
    }
    for (std::string& s : items) {
      const size_t dot = s.find('.');
      if (dot != std::string::npos) s.append(frac - (s.size() - dot - 1), ' ');
    }
  }
  size_t width = 0;
  for (const std::string& s : items) width = std::max(width, s.size());
  for (std::string& s : items) s.insert(0, width - s.size(), ' ');
  const Shape& shape = t.shape();
  if (shape.empty()) return n ? items[0] : "[]";
  std::string out;
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t base) {
    out += "[";
    const int64_t stride = numElements(Shape(shape.begin() + dim + 1, shape.end()));
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i > 0) {
        if (dim + 1 == shape.size()) {
          out += " ";
        } else {
          out += std::string(shape.size() - dim - 1, '\n');
          out += std::string(dim + 1, ' ');
        }
      }
      if (dim + 1 == shape.size()) out += items[base + i];
      else rec(dim + 1, base + i * stride);
    }
    out += "]";
  };
  rec(0, 0);
  return out;
}

}  // namespace gkrt
