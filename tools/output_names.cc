#include "tools/output_names.h"

namespace gkrt::tools {

std::string outputFileName(const std::string& tensor_name, const std::set<std::string>& taken) {
  std::string base;
  for (char ch : tensor_name.substr(0, 200)) {
    const bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                      ch == '_' || ch == '.';
    base += safe ? ch : '_';
  }
  if (base.empty() || base[0] == '.') base = "_" + base;
  std::string name = base + ".npy";
  for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k) + ".npy";
  return name;
}

}  // namespace gkrt::tools
