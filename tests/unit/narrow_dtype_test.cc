// The narrow ONNX element types (float8, float4, e8m0, int4/uint4/int2/uint2) and the
// quantization ops. Expected bit patterns are ml_dtypes' and onnx.reference's.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/ir/ops/op_helpers.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

const DType kMiniFloats[] = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ,
                             DType::kFloat4E2M1};

TEST(NarrowDType, NamesSizesAndParsing) {
  for (int i = 13; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    EXPECT_EQ(dtypeSize(t), 1u) << dtypeName(t);
    EXPECT_TRUE(isStorageOnly(t)) << dtypeName(t);
    EXPECT_FALSE(isFloat(t) || isInteger(t)) << dtypeName(t);
    auto parsed = parseDType(dtypeName(t));
    ASSERT_TRUE(parsed.ok()) << dtypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(bitWidth(DType::kInt4), 4);
  EXPECT_EQ(bitWidth(DType::kUInt2), 2);
  EXPECT_EQ(bitWidth(DType::kFloat8E5M2), 8);
}

// Every bit pattern decodes and encodes back to itself (NaNs to a NaN).
TEST(NarrowDType, EveryMiniFloatValueRoundTrips) {
  for (DType t : kMiniFloats) {
    const int patterns = t == DType::kFloat4E2M1 ? 16 : 256;
    for (int b = 0; b < patterns; ++b) {
      const float f = narrowToFloat(static_cast<uint8_t>(b), t);
      for (bool saturate : {true, false}) {
        const uint8_t back = floatToNarrow(f, t, saturate);
        if (std::isnan(f)) {
          EXPECT_TRUE(std::isnan(narrowToFloat(back, t))) << dtypeName(t) << " " << b;
        } else if (std::isinf(f) && saturate) {
          EXPECT_EQ(narrowToFloat(back, t), std::copysign(narrowFloatMax(t), f)) << dtypeName(t) << " " << b;
        } else {
          EXPECT_EQ(back, b) << dtypeName(t) << " pattern " << b << " = " << f << " saturate " << saturate;
        }
      }
    }
  }
  for (int b = 1; b < 255; ++b) {  // e8m0: 2^(b-127); code 0 (2^-127, a float32 subnormal) rounds as asked
    for (E8M0Rounding r : {E8M0Rounding::kUp, E8M0Rounding::kDown, E8M0Rounding::kNearest}) {
      EXPECT_EQ(floatToNarrow(narrowToFloat(static_cast<uint8_t>(b), DType::kFloat8E8M0), DType::kFloat8E8M0, true, r), b);
    }
  }
  EXPECT_EQ(floatToNarrow(narrowToFloat(0, DType::kFloat8E8M0), DType::kFloat8E8M0, true, E8M0Rounding::kDown), 0);
}

TEST(NarrowDType, MaxValues) {
  EXPECT_EQ(narrowToFloat(0x7e, DType::kFloat8E4M3FN), 448.0f);
  EXPECT_EQ(narrowToFloat(0x7f, DType::kFloat8E4M3FNUZ), 240.0f);
  EXPECT_EQ(narrowToFloat(0x7b, DType::kFloat8E5M2), 57344.0f);
  EXPECT_EQ(narrowToFloat(0x7f, DType::kFloat8E5M2FNUZ), 57344.0f);
  EXPECT_EQ(narrowToFloat(0x7, DType::kFloat4E2M1), 6.0f);
  EXPECT_EQ(narrowToFloat(0x01, DType::kFloat8E4M3FN), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(narrowToFloat(0xff, DType::kFloat8E8M0)));
  EXPECT_EQ(narrowToFloat(127, DType::kFloat8E8M0), 1.0f);
}

// Inputs and outputs from ml_dtypes (astype = saturate off) and onnx's saturate_cast.
TEST(NarrowDType, SaturationAndOverflowAsOnnx) {
  const float in[] = {NAN, INFINITY, -INFINITY, 1e6f, -1e6f, 464, 465, -0.0f, -1e-9f, 1e-9f, 240, 248, 250, 57344, 61440, 61441};
  struct Case { DType t; uint8_t plain[16]; uint8_t saturated[16]; };
  const Case cases[] = {
      {DType::kFloat8E4M3FN,
       {0x7f, 0x7f, 0xff, 0x7f, 0xff, 0x7e, 0x7f, 0x80, 0x80, 0x00, 0x77, 0x78, 0x78, 0x7f, 0x7f, 0x7f},
       {0x7f, 0x7e, 0xfe, 0x7e, 0xfe, 0x7e, 0x7e, 0x80, 0x80, 0x00, 0x77, 0x78, 0x78, 0x7e, 0x7e, 0x7e}},
      {DType::kFloat8E4M3FNUZ,
       {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x00, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x80},
       {0x80, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0x7f, 0x00, 0x00, 0x00, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}},
      {DType::kFloat8E5M2,
       {0x7e, 0x7c, 0xfc, 0x7c, 0xfc, 0x5f, 0x5f, 0x80, 0x80, 0x00, 0x5c, 0x5c, 0x5c, 0x7b, 0x7c, 0x7c},
       {0x7e, 0x7b, 0xfb, 0x7b, 0xfb, 0x5f, 0x5f, 0x80, 0x80, 0x00, 0x5c, 0x5c, 0x5c, 0x7b, 0x7b, 0x7b}},
      {DType::kFloat8E5M2FNUZ,
       {0x80, 0x80, 0x80, 0x80, 0x80, 0x63, 0x63, 0x00, 0x00, 0x00, 0x60, 0x60, 0x60, 0x7f, 0x80, 0x80},
       {0x80, 0x7f, 0xff, 0x7f, 0xff, 0x63, 0x63, 0x00, 0x00, 0x00, 0x60, 0x60, 0x60, 0x7f, 0x7f, 0x7f}},
  };
  for (const Case& c : cases) {
    for (int i = 0; i < 16; ++i) {
      EXPECT_EQ(floatToNarrow(in[i], c.t, false), c.plain[i]) << dtypeName(c.t) << " " << in[i];
      EXPECT_EQ(floatToNarrow(in[i], c.t, true), c.saturated[i]) << dtypeName(c.t) << " saturate " << in[i];
    }
  }
}

TEST(NarrowDType, RoundHalfToEven) {
  // e4m3fn subnormals are multiples of 2^-9: 0.5 and 1.5 units round to 0 and 2 units.
  EXPECT_EQ(floatToNarrow(std::ldexp(1.0f, -10), DType::kFloat8E4M3FN), 0x00);
  EXPECT_EQ(floatToNarrow(3 * std::ldexp(1.0f, -10), DType::kFloat8E4M3FN), 0x02);
  const float f4_in[] = {0.48f, 0.25f, 1.05f, -3.5f, -8, 9, 1e6f, 1e-7f, NAN, INFINITY, -INFINITY, -4, 0.01f, -0.0f, 5, 2.5f, 0.75f, 0.7f};
  const uint8_t f4_out[] = {1, 0, 2, 14, 15, 7, 7, 0, 8, 7, 15, 14, 0, 8, 6, 4, 2, 1};
  for (int i = 0; i < 18; ++i) EXPECT_EQ(floatToNarrow(f4_in[i], DType::kFloat4E2M1), f4_out[i]) << f4_in[i];
  // e8m0: 3 = 1.5 * 2^1; up and nearest give 2^2, down 2^1; 0 -> 2^-127; NaN/inf -> NaN.
  EXPECT_EQ(floatToNarrow(3.0f, DType::kFloat8E8M0, true, E8M0Rounding::kUp), 129);
  EXPECT_EQ(floatToNarrow(3.0f, DType::kFloat8E8M0, true, E8M0Rounding::kNearest), 129);
  EXPECT_EQ(floatToNarrow(3.0f, DType::kFloat8E8M0, true, E8M0Rounding::kDown), 128);
  EXPECT_EQ(floatToNarrow(0.0f, DType::kFloat8E8M0), 0);
  EXPECT_EQ(floatToNarrow(INFINITY, DType::kFloat8E8M0), 0xff);
  EXPECT_EQ(floatToNarrow(3.3e38f, DType::kFloat8E8M0, true), 254);   // saturates at 2^127
  EXPECT_EQ(floatToNarrow(3.3e38f, DType::kFloat8E8M0, false), 255);  // overflows to NaN
}

TEST(NarrowDType, IntegerCastsWrapAsOnnx) {
  const float in[] = {-9.7f, -8.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 6.6f, 7.5f, 8, 100, NAN};
  const int int4[] = {7, -8, -2, -1, 0, 0, 1, 2, 6, 7, -8, 4, 0};
  const int uint4[] = {7, 8, 14, 15, 0, 0, 1, 2, 6, 7, 8, 4, 0};
  const int int2[] = {-1, 0, -2, -1, 0, 0, 1, -2, -2, -1, 0, 0, 0};
  for (int i = 0; i < 13; ++i) {
    EXPECT_EQ(static_cast<int8_t>(floatToNarrow(in[i], DType::kInt4)), int4[i]) << in[i];
    EXPECT_EQ(floatToNarrow(in[i], DType::kUInt4), uint4[i]) << in[i];
    EXPECT_EQ(static_cast<int8_t>(floatToNarrow(in[i], DType::kInt2)), int2[i]) << in[i];
  }
  EXPECT_EQ(wrapToNarrowInt(-9, DType::kInt4), 7);
  EXPECT_EQ(wrapToNarrowInt(-1, DType::kUInt4), 15);
  EXPECT_EQ(wrapToNarrowInt(2, DType::kInt2), -2);
}

TEST(NarrowDType, PackingOddCounts) {
  const int8_t int4[] = {-8, -1, 0, 7, 3};
  uint8_t packed[3];
  ASSERT_EQ(packedBytes(DType::kInt4, 5), 3u);
  packSubByte(DType::kInt4, reinterpret_cast<const uint8_t*>(int4), 5, packed);
  EXPECT_EQ(packed[0], 0xf8);
  EXPECT_EQ(packed[1], 0x70);
  EXPECT_EQ(packed[2], 0x03);  // the unused high nibble is zero
  int8_t back[5];
  unpackSubByte(DType::kInt4, packed, 5, reinterpret_cast<uint8_t*>(back));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], int4[i]);

  const uint8_t uint2[] = {0, 1, 2, 3, 1};
  uint8_t packed2[2];
  ASSERT_EQ(packedBytes(DType::kUInt2, 5), 2u);
  packSubByte(DType::kUInt2, uint2, 5, packed2);
  EXPECT_EQ(packed2[0], 0xe4);
  EXPECT_EQ(packed2[1], 0x01);
  uint8_t back2[5];
  unpackSubByte(DType::kUInt2, packed2, 5, back2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back2[i], uint2[i]);
  const uint8_t int2_packed = 0x1e;  // elements 2 (-2), 3 (-1), 1, 0
  int8_t int2[4];
  unpackSubByte(DType::kInt2, &int2_packed, 4, reinterpret_cast<uint8_t*>(int2));
  EXPECT_EQ(int2[0], -2);
  EXPECT_EQ(int2[1], -1);
  EXPECT_EQ(int2[2], 1);
  EXPECT_EQ(int2[3], 0);
  EXPECT_EQ(packedBytes(DType::kFloat8E4M3FN, 5), 5u);
}

TEST(NarrowDType, ArithmeticIsRefused) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat8E4M3FN, {4});
  b.output(b.op1("Add", {x, x}), "y");
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("storage-only"), std::string::npos) << g.status().message();
}

HostTensor bytesTensor(DType t, const Shape& shape, const std::vector<int>& values) {
  HostTensor h(t, shape);
  for (size_t i = 0; i < values.size(); ++i) static_cast<uint8_t*>(h.data())[i] = static_cast<uint8_t>(values[i]);
  return h;
}
HostTensor floats(const Shape& shape, const std::vector<float>& v) { return HostTensor::fromFloats(shape, v); }

std::vector<int> intsOf(const HostTensor& t) {
  std::vector<int> out;
  for (float f : t.toFloats()) out.push_back(static_cast<int>(f));
  return out;
}

// Runs `g` on every backend this build has and checks they agree with the reference.
std::vector<HostTensor> runEverywhere(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  auto ref = testing::runGraph(g, inputs, "reference");
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  if (!ref.ok()) return {};
  for (const char* backend : {"cpu"}) {
    auto got = testing::runGraph(g, inputs, backend);
    EXPECT_TRUE(got.ok()) << backend << ": " << got.status().message();
    if (!got.ok()) continue;
    for (size_t k = 0; k < ref->size(); ++k) {
      EXPECT_EQ(std::memcmp((*got)[k].data(), (*ref)[k].data(), (*ref)[k].bytes()), 0) << backend << " output " << k;
    }
  }
  return *ref;
}

TEST(Quantization, PerTensorRoundsHalfToEvenAndSaturates) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {6});
  const float one = 1.0f;
  Value scale = b.constant("scale", DType::kFloat32, {}, &one);
  b.output(b.op1("QuantizeLinear", {x, scale}, QuantAttrs{1, 0, true, DType::kUInt8, DType::kFloat32}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto y = runEverywhere(*g, {floats({6}, {0.5f, 1.5f, 2.5f, -3.0f, 300.0f, 254.5f})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype(), DType::kUInt8);
  EXPECT_EQ(intsOf(y[0]), (std::vector<int>{0, 2, 2, 0, 255, 254}));
}

TEST(Quantization, PerAxisWithZeroPoint) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 3});
  const float scales[] = {0.5f, 2.0f};
  const int8_t zps[] = {1, -2};
  Value scale = b.constant("scale", DType::kFloat32, {2}, scales);
  Value zp = b.constant("zp", DType::kInt8, {2}, zps);
  b.output(b.op1("QuantizeLinear", {x, scale, zp}, QuantAttrs{0, 0, true, DType::kInt8, DType::kFloat32}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto y = runEverywhere(*g, {floats({2, 3}, {-1.0f, 0.5f, 2.5f, 3.5f, -128.6f, 300.0f})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(intsOf(y[0]), (std::vector<int>{-1, 2, 6, 0, -66, 127}));
}

TEST(Quantization, BlockedToInt4AndBack) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 5});
  const float scales[] = {1, 2, 4, 0.5f, 1, 3};  // 2 x ceil(5 / 2): the last block is short
  Value scale = b.constant("scale", DType::kFloat32, {2, 3}, scales);
  const QuantAttrs q{1, 2, true, DType::kInt4, DType::kFloat32};
  Value y = b.op1("QuantizeLinear", {x, scale}, q);
  b.output(y, "q");
  b.output(b.op1("DequantizeLinear", {y, scale}, QuantAttrs{1, 2, true, DType::kFloat32, DType::kFloat32}), "dq");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto out = runEverywhere(*g, {floats({2, 5}, {1, 40, 6, -7, 9, 1.25f, -9, 2, -2.5f, 6})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dtype(), DType::kInt4);
  // row 0: /1 /1 /2 /2 /4 -> 1, 7 (saturated from 40), 3, -4 (-3.5 to even), 2 (2.25)
  // row 1: /0.5 /0.5 /1 /1 /3 -> 2 (2.5 to even), -8 (saturated), 2, -2 (-2.5 to even), 2
  EXPECT_EQ(intsOf(out[0]), (std::vector<int>{1, 7, 3, -4, 2, 2, -8, 2, -2, 2}));
  const std::vector<float> dq = out[1].toFloats();
  const std::vector<float> want = {1, 7, 6, -8, 8, 1, -4, 2, -2, 6};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(dq[i], want[i]) << i;
}

TEST(Quantization, DequantizeInt4InputWithZeroPoint) {
  GraphBuilder b;
  Value x = b.input("x", DType::kInt4, {4});
  const float s = 0.5f;
  const int8_t zp = -1;
  Value scale = b.constant("scale", DType::kFloat32, {}, &s);
  Value zero = b.constant("zp", DType::kInt4, {}, &zp);
  b.output(b.op1("DequantizeLinear", {x, scale, zero}, QuantAttrs{1, 0, true, DType::kFloat16, DType::kFloat32}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto y = runEverywhere(*g, {bytesTensor(DType::kInt4, {4}, {-8, -1, 0, 7})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype(), DType::kFloat16);
  EXPECT_EQ(y[0].toFloats(), (std::vector<float>{-3.5f, 0, 0.5f, 4}));
}

TEST(Quantization, Float8OutputSaturates) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {3});
  const float two = 2.0f;
  Value scale = b.constant("scale", DType::kFloat32, {}, &two);
  b.output(b.op1("QuantizeLinear", {x, scale}, QuantAttrs{1, 0, true, DType::kFloat8E4M3FN, DType::kFloat32}), "sat");
  b.output(b.op1("QuantizeLinear", {x, scale}, QuantAttrs{1, 0, false, DType::kFloat8E4M3FN, DType::kFloat32}), "nan");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto y = runEverywhere(*g, {floats({3}, {1.0f, 2000.0f, -1e9f})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0].toFloats(), (std::vector<float>{0.5f, 448.0f, -448.0f}));
  EXPECT_TRUE(std::isnan(y[1].toFloats()[1]));
}

TEST(Quantization, BadScaleShapeIsAClearError) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 3});
  const float scales[] = {1, 2, 3};
  Value scale = b.constant("scale", DType::kFloat32, {3}, scales);
  b.output(b.op1("QuantizeLinear", {x, scale}, QuantAttrs{0, 0, true, DType::kUInt8, DType::kFloat32}), "y");
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("per-axis scale must be 1-D with x's dim 2"), std::string::npos)
      << g.status().message();
}

// ONNX's test_dynamicquantizelinear.
TEST(Quantization, DynamicQuantizeLinearAsOnnx) {
  auto g = testing::dynamicQuantizeGraph({6});
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto y = runEverywhere(*g, {floats({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(intsOf(y[0]), (std::vector<int>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(y[1].toFloats()[0], 0.0196078438f);
  EXPECT_EQ(intsOf(y[2]), (std::vector<int>{153}));
}

}  // namespace
}  // namespace gkrt
