// A scratch path private to the running test: ctest runs every test case as its own process, in
// parallel, so two cases writing the same name under TempDir() would race (one removes the other's
// files). The path holds the suite, the test and the process id.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace gkrt::testing {

inline std::string testTempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string prefix = "gkrt";
  if (info != nullptr) prefix += std::string("_") + info->test_suite_name() + "." + info->name();
  prefix += "_" + std::to_string(static_cast<long>(::getpid()));
  for (char& c : prefix) {
    if (c == '/') c = '_';  // parameterised test names contain '/'
  }
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + prefix + "_" + name;
}

}  // namespace gkrt::testing
