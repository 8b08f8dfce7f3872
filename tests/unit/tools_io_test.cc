// .npy reading/writing and numpy-style printing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "tools/array_print.h"
#include "tools/npy.h"
#include "tests/unit/test_temp_path.h"

namespace gkrt {
namespace {

TEST(Npy, RoundTripEveryDType) {
  for (int d = 0; d < kNumDTypes; ++d) {
    HostTensor t(static_cast<DType>(d), {2, 3});
    for (size_t i = 0; i < t.bytes(); ++i) static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(i % 2);
    const std::string path = gkrt::testing::testTempPath("t.npy");
    ASSERT_TRUE(writeNpy(path, t).ok());
    auto back = readNpy(path);
    ASSERT_TRUE(back.ok()) << back.status().toString();
    EXPECT_EQ(back->shape(), t.shape());
    if (t.dtype() == DType::kBFloat16) {  // numpy has no bfloat16: written as float32, exactly
      EXPECT_EQ(back->dtype(), DType::kFloat32);
      EXPECT_EQ(back->toFloats(), t.toFloats());
      continue;
    }
    if (isStorageOnly(t.dtype())) {  // float8/float4 as float32, int4/int2 as int8, uint4/uint2 as uint8
      EXPECT_EQ(back->dtype(), isNarrowFloat(t.dtype()) ? DType::kFloat32
                               : t.dtype() == DType::kInt4 || t.dtype() == DType::kInt2 ? DType::kInt8 : DType::kUInt8)
          << dtypeName(t.dtype());
      auto typed = npyToModelType(*back, t.dtype(), "t");
      ASSERT_TRUE(typed.ok()) << typed.status().toString();
      EXPECT_EQ(typed->dtype(), t.dtype());
      EXPECT_EQ(std::memcmp(typed->data(), t.data(), t.bytes()), 0) << dtypeName(t.dtype());
      continue;
    }
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(std::memcmp(back->data(), t.data(), t.bytes()), 0);
  }
  HostTensor v(DType::kFloat32, {5});
  HostTensor s(DType::kFloat32, {});
  for (const HostTensor& t : {v, s}) {
    const std::string path = gkrt::testing::testTempPath("v.npy");
    ASSERT_TRUE(writeNpy(path, t).ok());
    auto back = readNpy(path);
    ASSERT_TRUE(back.ok()) << back.status().toString();
    EXPECT_EQ(back->shape(), t.shape());
  }
}

TEST(Npy, BadFiles) {
  const std::string path = gkrt::testing::testTempPath("bad.npy");
  std::ofstream(path) << "hello";
  auto r = readNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a valid .npy file"), std::string::npos);
  EXPECT_FALSE(readNpy("/nonexistent.npy").ok());
}

TEST(ArrayPrint, MatchesNumpy) {
  EXPECT_EQ(formatArray(HostTensor::fromFloats({3}, {0.5f, 2.0f, -1.25f})), "[ 0.5   2.   -1.25]");
  EXPECT_EQ(formatArray(HostTensor::fromFloats({2}, {1e-5f, 1.0f})), "[1.e-05 1.e+00]");
  EXPECT_EQ(formatArray(HostTensor::fromFloats({}, {3.0f})), "3.");
  HostTensor b(DType::kBool, {2});
  b.as<uint8_t>()[0] = 1;
  EXPECT_EQ(formatArray(b), "[ True False]");
  HostTensor i(DType::kInt64, {2, 2});
  for (int k = 0; k < 4; ++k) i.as<int64_t>()[k] = k * 5;
  EXPECT_EQ(formatArray(i), "[[ 0  5]\n [10 15]]");
  EXPECT_EQ(formatArray(HostTensor::fromFloats({2, 1, 2}, {1, 2, 3, 4})), "[[[1. 2.]]\n\n [[3. 4.]]]");
}

}  // namespace
}  // namespace gkrt
