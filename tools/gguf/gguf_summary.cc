#include "tools/gguf/gguf_summary.h"

#include <fstream>
#include <map>
#include <sstream>

namespace gkrt::gguf {
namespace {

std::string show(const Value& v) {
  switch (v.type) {
    case ValueType::kFloat32: case ValueType::kFloat64: {
      std::ostringstream s;
      s << v.f;
      return s.str();
    }
    case ValueType::kUInt64: return std::to_string(v.u);
    case ValueType::kBool: return v.i ? "true" : "false";
    case ValueType::kString: {
      std::string s = v.s.size() > 100 ? v.s.substr(0, 100) + "... (" + std::to_string(v.s.size()) + " characters)" : v.s;
      for (char& c : s) if (c == '\n') c = ' ';
      return "\"" + s + "\"";
    }
    case ValueType::kArray: return std::string("[") + valueTypeName(v.array_type) + " x " + std::to_string(v.arraySize()) + "]";
    default: return std::to_string(v.i);
  }
}

}  // namespace

bool looksLikeGguf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

void printSummary(const GgufFile& f, const std::string& path, bool tensors, std::ostream& out) {
  uint64_t bytes = 0;
  std::map<std::string, int> by_type;
  for (const Tensor& t : f.tensors()) {
    bytes += t.bytes;
    ++by_type[tensorTypeName(t.type)];
  }
  out << "gguf: " << path << " (" << f.fileSize() << " bytes, version " << f.version() << ", alignment " << f.alignment() << ")\n";
  out << "metadata (" << f.metadata().size() << "):\n";
  for (const auto& [key, v] : f.metadata()) out << "  " << key << ": " << show(v) << "\n";
  out << "tensors: " << f.tensors().size() << ", " << bytes << " bytes (";
  bool first = true;
  for (const auto& [type, n] : by_type) {
    out << (first ? "" : ", ") << type << " " << n;
    first = false;
  }
  out << ")\n";
  if (!tensors) return;
  for (const Tensor& t : f.tensors()) {
    out << "  " << t.name << " " << tensorTypeName(t.type) << " [";
    for (size_t d = 0; d < t.dims.size(); ++d) out << (d ? ", " : "") << t.dims[d];
    out << "] " << t.bytes << " bytes at " << t.offset << "\n";
  }
}

}  // namespace gkrt::gguf
