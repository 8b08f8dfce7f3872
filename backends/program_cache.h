// Built device programs on disk (OpenCL binaries, CUDA cubins), so that a second
// session start loads a binary instead of compiling. An entry is keyed by a hash of the source, build options and the
// device/driver identity; it carries its own key and a checksum of the binary, and an
// entry that does not check out is deleted and rebuilt, never trusted.
//
//   ProgramCache cache(defaultProgramCacheDir("opencl"), "opencl", ".clbin");
//   const std::string key = ProgramCache::keyFor(source, options, device.identity());
//   if (auto bin = cache.load(key)) { ... clCreateProgramWithBinary ... }
//   cache.store(key, binary);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gkrt {

class ProgramCache {
 public:
  // `dir` "" = no cache; `backend` names the cache in log lines; `extension` ends its files.
  ProgramCache(std::string dir, std::string backend, std::string extension)
      : dir_(std::move(dir)), backend_(std::move(backend)), extension_(std::move(extension)) {}
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  static std::string keyFor(const std::string& source, const std::string& options, const std::string& device);
  std::string pathFor(const std::string& key) const;
  // The binary stored under `key`; nullopt when absent or corrupt (a corrupt entry is removed).
  std::optional<std::vector<unsigned char>> load(const std::string& key) const;
  // Written to a temporary file and renamed, so readers never see half an entry.
  void store(const std::string& key, const std::vector<unsigned char>& binary) const;
  void remove(const std::string& key) const;

 private:
  std::string dir_, backend_, extension_;
};

// $GKRT_CACHE_DIR/<backend>, else $XDG_CACHE_HOME/gkrt/<backend>, else
// ~/.cache/gkrt/<backend>; "" when none of them is set.
std::string defaultProgramCacheDir(const std::string& backend);

uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed = 1469598103934665603ULL);

}  // namespace gkrt
