#include "backends/program_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/fault_injection.h"
#include "runtime/base/log.h"

namespace gkrt {
namespace {

constexpr char kMagic[8] = {'G', 'K', 'C', 'L', 'B', 'I', 'N', '1'};

struct Header {
  char magic[8];
  uint64_t key_hash;
  uint64_t bytes;
  uint64_t checksum;
};

}  // namespace

uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed) {
  uint64_t h = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

std::string ProgramCache::keyFor(const std::string& source, const std::string& options, const std::string& device) {
  uint64_t h = fnv1a64(source.data(), source.size());
  h = fnv1a64("\0", 1, h);
  h = fnv1a64(options.data(), options.size(), h);
  h = fnv1a64("\0", 1, h);
  h = fnv1a64(device.data(), device.size(), h);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string ProgramCache::pathFor(const std::string& key) const { return dir_ + "/" + key + extension_; }

std::optional<std::vector<unsigned char>> ProgramCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(pathFor(key), std::ios::binary);
  if (!in) return std::nullopt;
  Header h{};
  std::vector<unsigned char> bin;
  bool ok = static_cast<bool>(in.read(reinterpret_cast<char*>(&h), sizeof h)) &&
            std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && h.key_hash == fnv1a64(key.data(), key.size()) &&
            h.bytes > 0 && h.bytes < (uint64_t(1) << 32);
  if (ok) {
    bin.resize(h.bytes);
    ok = static_cast<bool>(in.read(reinterpret_cast<char*>(bin.data()), static_cast<std::streamsize>(h.bytes))) &&
         in.peek() == std::char_traits<char>::eof() && fnv1a64(bin.data(), bin.size()) == h.checksum;
  }
  if (!ok) {
    GKRT_LOG_WARNING(backend_, ": program cache entry ", pathFor(key), " is corrupt; rebuilding it");
    remove(key);
    return std::nullopt;
  }
  return bin;
}

namespace {

// Writes header + binary to `path`; "" or the reason it failed (errno's text).
std::string writeEntry(const std::string& path, const Header& h, const std::vector<unsigned char>& binary) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return std::strerror(errno);
  bool ok = std::fwrite(&h, sizeof h, 1, f) == 1 &&
            writeOrFault(binary.data(), binary.size(), f, "cache_full") == binary.size();
  std::string why = ok ? "" : std::strerror(errno);
  if (std::fclose(f) != 0 && why.empty()) why = std::strerror(errno);  // a full disk shows here, at the flush
  return why;
}

}  // namespace

void ProgramCache::store(const std::string& key, const std::vector<unsigned char>& binary) const {
  if (!enabled() || binary.empty()) return;
  static std::atomic<unsigned> counter{0};
  const std::string tmp = pathFor(key) + ".tmp" + std::to_string(static_cast<long>(::getpid())) + "_" +
                          std::to_string(counter.fetch_add(1));
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_hash = fnv1a64(key.data(), key.size());
  h.bytes = binary.size();
  h.checksum = fnv1a64(binary.data(), binary.size());
  std::error_code ec;
  std::string why;
  if (faultInjected("cache_read_only")) {
    why = std::strerror(EROFS);
  } else {
    std::filesystem::create_directories(dir_, ec);
    if (ec) why = "cannot create the directory: " + ec.message();
  }
  if (why.empty()) why = writeEntry(tmp, h, binary);
  if (why.empty()) {
    std::filesystem::rename(tmp, pathFor(key), ec);
    if (ec) why = ec.message();
  }
  if (!why.empty()) {  // the program is built and runs; only the next start compiles it again
    std::filesystem::remove(tmp, ec);
    GKRT_LOG_WARNING(backend_, ": cannot write the program cache in ", dir_, " (", why,
                     "); the program runs, but is compiled again at the next start (pass another --cache-dir, or \"\" for none)");
  }
}

void ProgramCache::remove(const std::string& key) const {
  std::error_code ec;
  std::filesystem::remove(pathFor(key), ec);
}

std::string defaultProgramCacheDir(const std::string& backend) {
  if (const char* d = std::getenv("GKRT_CACHE_DIR"); d && *d) return std::string(d) + "/" + backend;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/gkrt/" + backend;
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/gkrt/" + backend;
  return "";
}

}  // namespace gkrt
