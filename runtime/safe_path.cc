#include "runtime/safe_path.h"

#include <filesystem>
#include <system_error>

namespace gkrt {

StatusOr<std::string> resolveInsideDir(const std::string& dir, const std::string& relative, const std::string& what) {
  namespace fs = std::filesystem;
  auto refuse = [&](const char* why) {
    std::string shown;
    for (char c : relative) shown += (c >= 32 && c < 127) ? std::string(1, c) : std::string("\\x??");
    return makeError(StatusCode::kInvalidModel, what, " '", shown, "' ", why,
                     "; it must name a file inside '", dir.empty() ? "." : dir, "'");
  };
  if (relative.empty()) return refuse("is empty");
  if (relative.find('\0') != std::string::npos) return refuse("holds a NUL byte");
  if (relative.front() == '/' || relative.front() == '\\') return refuse("is an absolute path");
  for (const fs::path& part : fs::path(relative)) {
    if (part == "..") return refuse("climbs out with '..'");
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(dir.empty() ? "." : dir), ec);
  if (!ec && base.filename().empty()) base = base.parent_path();  // "dir/" -> "dir"
  if (ec) return makeError(StatusCode::kNotFound, what, ": cannot resolve the directory '", dir, "': ", ec.message());
  const fs::path full = fs::weakly_canonical(base / relative, ec);  // follows every symlink that exists
  if (ec) return makeError(StatusCode::kNotFound, what, " '", relative, "': cannot resolve it: ", ec.message());
  auto b = base.begin();
  auto f = full.begin();
  for (; b != base.end(); ++b, ++f) {
    if (f == full.end() || *f != *b) return refuse("leads outside the directory (through a symlink)");
  }
  if (f == full.end()) return refuse("names the directory itself");
  return full.string();
}

}  // namespace gkrt
