// Cache and output faults (docs/errors.md): a truncated, corrupted,
// foreign or empty program-cache entry is refused and removed; a cache directory that
// cannot be written (read-only, full, a file in the way) costs a warning and nothing
// else; an output write that fails (full disk, no directory) is an error naming the file
// and leaves no truncated file behind. Faults are real where a root-proof way exists
// (a regular file where a directory should be, /dev/full where it exists) and injected with $GKRT_FAULT
// otherwise (runtime/fault_injection.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends/program_cache.h"
#include "runtime/fault_injection.h"
#include "runtime/base/log.h"
#include "tests/unit/test_temp_path.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

namespace fs = std::filesystem;

struct ScopedFault {  // also makes warnings visible whatever $GKRT_LOG says
  explicit ScopedFault(const char* points) {
    ::setenv("GKRT_FAULT", points, 1);
    setLogLevel(LogLevel::kWarning);
  }
  ~ScopedFault() { ::unsetenv("GKRT_FAULT"); }
};

struct ProgramCacheFaults : ::testing::Test {
  void SetUp() override {
    setLogLevel(LogLevel::kWarning);
    dir = testing::testTempPath("cache");
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  size_t entries() const {
    if (!fs::is_directory(dir)) return 0;
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
  }
  // Stores a binary, then lets `damage` edit the entry file; the next load must refuse it,
  // warn and remove it.
  template <typename Damage> void expectRefused(Damage damage) {
    ProgramCache cache(dir, "opencl", ".clbin");
    const std::string key = ProgramCache::keyFor("kernel source", "-cl-fast", "device");
    cache.store(key, binary);
    ASSERT_TRUE(cache.load(key).has_value());
    damage(cache.pathFor(key));
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(cache.load(key).has_value());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("is corrupt; rebuilding it"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(cache.pathFor(key)));
    cache.store(key, binary);  // rebuilt: stored again and loads
    EXPECT_EQ(cache.load(key), binary);
  }
  std::string dir;
  std::vector<unsigned char> binary = std::vector<unsigned char>(1000, 7);
};

TEST_F(ProgramCacheFaults, TruncatedEntriesAreRefusedAndRebuilt) {
  expectRefused([](const std::string& p) { fs::resize_file(p, fs::file_size(p) / 2); });
  expectRefused([](const std::string& p) { fs::resize_file(p, 10); });  // inside the header
  expectRefused([](const std::string& p) { fs::resize_file(p, 0); });
}

TEST_F(ProgramCacheFaults, CorruptedOrForeignEntriesAreRefusedAndRebuilt) {
  expectRefused([](const std::string& p) {  // one byte of the binary flipped: the checksum fails
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(p) - 1));
    f.put('\x55');
  });
  expectRefused([](const std::string& p) { std::ofstream(p, std::ios::binary) << "not a cache entry at all"; });
  expectRefused([](const std::string& p) {  // bytes appended after a valid entry
    std::ofstream(p, std::ios::binary | std::ios::app) << "tail";
  });
  expectRefused([this](const std::string& p) {  // a valid entry of another key copied over this one
    ProgramCache other(dir + "/other", "opencl", ".clbin");
    const std::string key = ProgramCache::keyFor("another source", "", "device");
    other.store(key, binary);
    fs::copy_file(other.pathFor(key), p, fs::copy_options::overwrite_existing);
  });
}

TEST_F(ProgramCacheFaults, ReadOnlyOrFullDirectoriesOnlyWarn) {
  for (const char* fault : {"cache_read_only", "cache_full"}) {
    ScopedFault f(fault);
    ProgramCache cache(dir, "opencl", ".clbin");
    const std::string key = ProgramCache::keyFor("src", "", fault);
    ::testing::internal::CaptureStderr();
    cache.store(key, binary);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cannot write the program cache in " + dir), std::string::npos) << err;
    EXPECT_NE(err.find(std::string(fault) == "cache_full" ? "No space left on device" : "Read-only file system"),
              std::string::npos) << err;
    EXPECT_NE(err.find("compiled again at the next start"), std::string::npos) << err;
    EXPECT_FALSE(cache.load(key).has_value());
    EXPECT_EQ(entries(), 0u) << "no entry and no temporary file left";
  }
}

TEST_F(ProgramCacheFaults, AFileWhereTheDirectoryShouldBeOnlyWarns) {
  std::ofstream(dir) << "a regular file";
  ProgramCache cache(dir + "/opencl", "opencl", ".clbin");
  ::testing::internal::CaptureStderr();
  cache.store("0123456789abcdef", binary);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot create the directory"), std::string::npos) << err;
  EXPECT_FALSE(cache.load("0123456789abcdef").has_value());
  fs::remove(dir);
}

TEST(FaultInjection, UnknownPointsWarnAndAreIgnored) {
  ScopedFault f("cache_ful,output_full");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(faultInjected("output_full"));
  EXPECT_FALSE(faultInjected("cache_full"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unknown fault point 'cache_ful'"), std::string::npos) << err;
}

TEST(OutputFaults, AFullDiskIsAnErrorAndLeavesNoTruncatedFile) {
  HostTensor t(DType::kFloat32, {1024});
  if (fs::is_character_file("/dev/full")) {  // the real device, where the machine has it: every write fails
    auto r = writeNpy("/dev/full", t);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("writing '/dev/full' failed: No space left on device"), std::string::npos)
        << r.message();
  }
  const std::string path = testing::testTempPath("out.npy");
  ScopedFault f("output_full");
  auto r = writeNpy(path, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("writing '" + path + "' failed: No space left on device"), std::string::npos)
      << r.message();
  EXPECT_FALSE(fs::exists(path));
}

TEST(OutputFaults, AMissingDirectoryIsAnErrorNamingTheFile) {
  const std::string blocker = testing::testTempPath("blocker");
  std::ofstream(blocker) << "a regular file";
  HostTensor t(DType::kFloat32, {4});
  auto r = writeNpy(blocker + "/y.npy", t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("cannot write '" + blocker + "/y.npy': Not a directory"), std::string::npos)
      << r.message();
  fs::remove(blocker);
}

}  // namespace
}  // namespace gkrt
