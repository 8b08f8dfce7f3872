// Paths derived from model content stay inside their directory (runtime/safe_path.h):
// absolute paths, `..`, NUL bytes and symlinks out are refused with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/safe_path.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

namespace fs = std::filesystem;

struct SafePathTest : ::testing::Test {
  void SetUp() override {
    root = fs::path(gkrt::testing::testTempPath("gkrt_safe_path"));
    fs::remove_all(root);
    fs::create_directories(root / "model" / "sub");
    std::ofstream(root / "model" / "w.bin") << "weights";
    std::ofstream(root / "model" / "sub" / "w2.bin") << "weights";
    std::ofstream(root / "secret.txt") << "secret";
    fs::create_symlink(root / "secret.txt", root / "model" / "link_out.bin");
    fs::create_symlink(root, root / "model" / "dir_out");
    fs::create_symlink(root / "model" / "w.bin", root / "model" / "link_in.bin");
  }
  void TearDown() override { fs::remove_all(root); }
  std::string dir() const { return (root / "model").string(); }
  fs::path root;
};

void expectRefused(const StatusOr<std::string>& r, const char* why) {
  ASSERT_FALSE(r.ok()) << "accepted: " << *r;
  EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("external data location"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("must name a file inside"), std::string::npos) << r.status().message();
}

TEST_F(SafePathTest, FilesInsideTheDirectoryResolve) {
  auto a = resolveInsideDir(dir(), "w.bin", "external data location");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(fs::path(*a), fs::canonical(root / "model" / "w.bin"));
  EXPECT_TRUE(resolveInsideDir(dir(), "sub/w2.bin", "external data location").ok());
  EXPECT_TRUE(resolveInsideDir(dir() + "/", "./sub/w2.bin", "external data location").ok());
  EXPECT_TRUE(resolveInsideDir(dir(), "link_in.bin", "external data location").ok());  // a symlink that stays inside
  EXPECT_TRUE(resolveInsideDir(dir(), "not_there_yet.bin", "external data location").ok());
}

TEST_F(SafePathTest, EscapesAreRefused) {
  expectRefused(resolveInsideDir(dir(), "", "external data location"), "is empty");
  expectRefused(resolveInsideDir(dir(), (root / "secret.txt").string(), "external data location"), "absolute path");
  expectRefused(resolveInsideDir(dir(), "../secret.txt", "external data location"), "'..'");
  expectRefused(resolveInsideDir(dir(), "sub/../../secret.txt", "external data location"), "'..'");
  expectRefused(resolveInsideDir(dir(), std::string("w.bin\0/../../secret.txt", 24), "external data location"), "NUL byte");
  expectRefused(resolveInsideDir(dir(), "link_out.bin", "external data location"), "leads outside");
  expectRefused(resolveInsideDir(dir(), "dir_out/secret.txt", "external data location"), "leads outside");
  expectRefused(resolveInsideDir(dir(), ".", "external data location"), "names the directory itself");
}

}  // namespace
}  // namespace gkrt
