// "Did you mean" hints: the choice closest to a misspelt name (case-insensitive
// edit distance; ties go to the alphabetically first).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gkrt {

std::string closestName(std::string_view name, const std::vector<std::string>& choices);

}  // namespace gkrt
