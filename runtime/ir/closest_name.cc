#include "runtime/ir/closest_name.h"

#include <algorithm>
#include <cctype>

namespace gkrt {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Levenshtein distance, giving up (returning `limit`) once every entry of a row reaches it.
size_t editDistance(const std::string& a, const std::string& b, size_t limit) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    size_t row_min = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = row[j];
      row[j] = std::min(std::min(row[j], row[j - 1]) + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1));
      row_min = std::min(row_min, row[j]);
      prev = cur;
    }
    if (row_min >= limit) return limit;
  }
  return row[b.size()];
}

}  // namespace

std::string closestName(std::string_view name, const std::vector<std::string>& choices) {
  // A hint for a name of hundreds of characters means nothing, and the distance costs
  // length x length: only its start is compared (hostile flag strings stay cheap).
  const std::string a = lower(name.substr(0, 40));
  std::string best;
  size_t best_d = ~size_t{0};
  for (const std::string& c : choices) {
    const size_t len_diff = a.size() > c.size() ? a.size() - c.size() : c.size() - a.size();
    if (len_diff > best_d) continue;  // the distance is at least the length difference
    // Rows that all exceed the best so far cannot win; ties still compare (alphabetical order).
    const size_t d = editDistance(a, lower(c), best_d == ~size_t{0} ? best_d : best_d + 1);
    if (d < best_d || (d == best_d && c < best)) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace gkrt
