// The integer / QLinear ops (runtime/ir/ops/quant_linear.cc), the QDQ fusion pass
// (fusion/passes/quant_dq_op_q_fusion.cc), the cpu int8 kernels (backends/cpu/quantization/onednn_int8.cc)
// and the bf16 precision choice (backends/cpu/isa/cpu_precision.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/cpu_precision.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "runtime/builder.h"
#include "runtime/session.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

std::vector<int> valuesOf(const HostTensor& t) {
  std::vector<int> out;
  for (float f : t.toFloats()) out.push_back(static_cast<int>(f));
  return out;
}

HostTensor bytes(DType t, const Shape& shape, const std::vector<int>& v) {
  HostTensor h(t, shape);
  for (size_t i = 0; i < v.size(); ++i) static_cast<uint8_t*>(h.data())[i] = static_cast<uint8_t>(v[i]);
  return h;
}

// Every element of got within `steps` of want.
void expectWithinSteps(const HostTensor& got, const HostTensor& want, int steps, const char* what) {
  const auto g = valuesOf(got), w = valuesOf(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  int worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]));
  EXPECT_LE(worst, steps) << what;
}

TEST(QLinearOps, MatMulPerColumnScaleRoundsHalfToEvenAndSaturates) {
  GraphBuilder b;
  Value a = b.input("a", DType::kUInt8, {2, 2});
  const float as = 0.5f, ys = 1.0f, bs[] = {1.0f, 0.25f, 2.0f};
  const uint8_t azp = 128, yzp = 200;
  const int8_t w[] = {1, 2, -3, 4, 5, 6}, bzp[] = {0, 0, 0};
  Value y = b.op1("QLinearMatMul", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("azp", DType::kUInt8, {}, &azp),
                                    b.constant("b", DType::kInt8, {2, 3}, w), b.constant("bs", DType::kFloat32, {3}, bs),
                                    b.constant("bzp", DType::kInt8, {3}, bzp), b.constant("ys", DType::kFloat32, {}, &ys),
                                    b.constant("yzp", DType::kUInt8, {}, &yzp)});
  b.output(y, "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  // (a - 128) = [[2, -28], [127, -128]]; sums [[-110, -136, -174], [-385, -386, -1149]];
  // times {0.5, 0.125, 1}: -192.5 rounds to -192 (even); -949 + 200 saturates to 0.
  const std::vector<int> want = {145, 183, 26, 8, 152, 0};
  for (const char* backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(*g, {bytes(DType::kUInt8, {2, 2}, {130, 100, 255, 0})}, backend);
    ASSERT_TRUE(out.ok()) << backend << ": " << out.status().message();
    EXPECT_EQ((*out)[0].dtype(), DType::kUInt8);
    EXPECT_EQ(valuesOf((*out)[0]), want) << backend;
  }
}

TEST(QLinearOps, ConvIntegerZeroPointsAndPadding) {
  GraphBuilder b;
  Value x = b.input("x", DType::kUInt8, {1, 1, 2, 2});
  const uint8_t xzp = 10;
  const int8_t w[] = {1, 1, 1, 1, 2, 0, 0, 2}, wzp[] = {0, 1};
  Conv2DAttrs a;
  a.pads = {1, 1, 0, 0};
  Value y = b.op1("ConvInteger", {x, b.constant("w", DType::kInt8, {2, 1, 2, 2}, w),
                                  b.constant("xzp", DType::kUInt8, {}, &xzp), b.constant("wzp", DType::kInt8, {2}, wzp)}, a);
  b.output(y, "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  // x - 10 = [[1, 2], [3, 4]]; a padded row or column adds (10 - 10) * w = 0.
  // channel 0 (w - 0 = ones): windows at (-1,-1) (-1,0) (0,-1) (0,0): 1, 3, 4, 10.
  // channel 1 (w - 1 = [[1, -1], [-1, 1]]): 1, -1 + 2 = 1, -1 + 3 = 2, 1 - 2 - 3 + 4 = 0.
  const std::vector<int> want = {1, 3, 4, 10, 1, 1, 2, 0};
  for (const char* backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(*g, {bytes(DType::kUInt8, {1, 1, 2, 2}, {11, 12, 13, 14})}, backend);
    ASSERT_TRUE(out.ok()) << backend << ": " << out.status().message();
    EXPECT_EQ((*out)[0].dtype(), DType::kInt32);
    EXPECT_EQ(valuesOf((*out)[0]), want) << backend;
  }
}

TEST(QLinearOps, MismatchedZeroPointTypeIsAClearError) {
  GraphBuilder b;
  Value a = b.input("a", DType::kUInt8, {2, 2});
  const int8_t zp = 0;
  b.output(b.op1("MatMulInteger", {a, a, b.constant("zp", DType::kInt8, {}, &zp)}), "y");
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("zero point"), std::string::npos) << g.status().message();
}

// DQ(x) and DQ(w) (per channel) into a Conv2D with a float bias, then Q: the form
// onnxruntime's quantize_static writes.
StatusOr<ir::Graph> qdqConvGraph(std::mt19937& rng) {
  GraphBuilder b;
  Value x = b.input("x", DType::kUInt8, {1, 4, 6, 6});
  std::uniform_int_distribution<int> w8(-127, 127);
  std::vector<int8_t> w(8 * 4 * 3 * 3);
  for (auto& v : w) v = static_cast<int8_t>(w8(rng));
  const float xs = 0.02f, ys = 0.05f, ws[] = {0.01f, 0.02f, 0.005f, 0.01f, 0.03f, 0.01f, 0.02f, 0.01f};
  const float bias[] = {0.1f, -0.2f, 0.3f, 0.0f, 0.05f, -0.05f, 0.2f, -0.1f};
  const uint8_t xzp = 120, yzp = 128;
  const int8_t wzp[8] = {};
  QuantAttrs per_tensor{1, 0, true, DType::kFloat32, DType::kFloat32};
  QuantAttrs per_channel{0, 0, true, DType::kFloat32, DType::kFloat32};
  Value xf = b.op1("DequantizeLinear", {x, b.constant("xs", DType::kFloat32, {}, &xs), b.constant("xzp", DType::kUInt8, {}, &xzp)},
                   per_tensor);
  Value wf = b.op1("DequantizeLinear", {b.constant("w", DType::kInt8, {8, 4, 3, 3}, w.data()),
                                        b.constant("ws", DType::kFloat32, {8}, ws), b.constant("wzp", DType::kInt8, {8}, wzp)},
                   per_channel);
  Conv2DAttrs c;
  c.pads = {1, 1, 1, 1};
  Value yf = b.op1("Conv2D", {xf, wf, b.constant("bias", DType::kFloat32, {8}, bias)}, c);
  QuantAttrs q{1, 0, true, DType::kUInt8, DType::kFloat32};
  b.output(b.op1("QuantizeLinear", {yf, b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yzp", DType::kUInt8, {}, &yzp)}, q),
           "y");
  return b.finish();
}

bool hasOp(const ir::Graph& g, const char* op) {
  for (const auto& n : g.nodes) if (n.op && std::string(n.op->name) == op) return true;
  return false;
}

TEST(QuantDqOpQFusion, ConvBecomesQLinearConvAndDisablePassKeepsTheFloatPath) {
  std::mt19937 rng(7);
  auto g = qdqConvGraph(rng);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ir::Graph fused = *g, kept = *g;
  ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
  ASSERT_TRUE(runFusionPipeline(kept, *parseFusionFlags("--disable_pass=quant_dq_op_q_fusion"), FusionColumn::kCpu).ok());
  EXPECT_TRUE(hasOp(fused, "QLinearConv"));
  EXPECT_FALSE(hasOp(fused, "Conv2D"));
  EXPECT_EQ(fused.nodes.size(), 1u);  // the DQs and the Q are gone
  EXPECT_FALSE(hasOp(kept, "QLinearConv"));
  EXPECT_TRUE(hasOp(kept, "Conv2D"));
  HostTensor x(DType::kUInt8, {1, 4, 6, 6});
  std::uniform_int_distribution<int> u8(0, 255);
  for (int64_t i = 0; i < x.size(); ++i) static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(u8(rng));
  auto float_path = testing::runGraph(*g, {x}, "reference", testing::optLevel(0));
  ASSERT_TRUE(float_path.ok()) << float_path.status().message();
  for (const char* backend : {"reference", "cpu"}) {
    auto int_path = testing::runGraph(*g, {x}, backend, testing::optLevel(2));
    ASSERT_TRUE(int_path.ok()) << backend << ": " << int_path.status().message();
    // int32 sums against float sums (and the bias rounded to int32 at xs*ws): one step.
    expectWithinSteps((*int_path)[0], (*float_path)[0], 1, backend);
  }
}

// Gemm(DQ(x), DQ(w), bias) as onnxruntime's QGemm and its QDQ Gemm write it (transB, w
// per output column): one MatMulIntegerToFloat, the Q after it a QuantizeLinear; the
// results within a step of the float path on reference and cpu; with transB false and w
// per tensor too. Switched off, the float Gemm stays.
TEST(QuantDqOpQFusion, GemmOfDequantizedOperandsBecomesAnInt8MatMul) {
  for (bool trans_b : {true, false}) {
    std::mt19937 rng(trans_b ? 11 : 12);
    const int64_t M = 5, K = 40, N = 24;
    GraphBuilder b;
    Value x = b.input("x", DType::kUInt8, {M, K});
    std::uniform_int_distribution<int> w8(-127, 127);
    std::vector<int8_t> w(static_cast<size_t>(K * N), 0);
    for (auto& v : w) v = static_cast<int8_t>(w8(rng));
    std::vector<float> ws(static_cast<size_t>(N), 0.0f), bias(static_cast<size_t>(N), 0.0f);
    for (int64_t n = 0; n < N; ++n) ws[size_t(n)] = 0.004f + 0.001f * float(n % 5), bias[size_t(n)] = 0.05f * float(n % 7) - 0.15f;
    const float xs = 0.02f, ys = 0.06f, one_scale = 0.01f;
    const uint8_t xzp = 117, yzp = 125;
    const int8_t wzp0 = 0;
    std::vector<int8_t> wzp(static_cast<size_t>(N), 0);
    QuantAttrs per_tensor{1, 0, true, DType::kFloat32, DType::kFloat32};
    QuantAttrs per_column{trans_b ? 0 : 1, 0, true, DType::kFloat32, DType::kFloat32};
    Value xf = b.op1("DequantizeLinear", {x, b.constant("xs", DType::kFloat32, {}, &xs), b.constant("xzp", DType::kUInt8, {}, &xzp)},
                     per_tensor);
    const Shape wshape = trans_b ? Shape{N, K} : Shape{K, N};
    Value wf = trans_b ? b.op1("DequantizeLinear", {b.constant("w", DType::kInt8, wshape, w.data()),
                                                    b.constant("ws", DType::kFloat32, {N}, ws.data()),
                                                    b.constant("wzp", DType::kInt8, {N}, wzp.data())},
                               per_column)
                       : b.op1("DequantizeLinear", {b.constant("w", DType::kInt8, wshape, w.data()),
                                                    b.constant("ws", DType::kFloat32, {}, &one_scale),
                                                    b.constant("wzp", DType::kInt8, {}, &wzp0)},
                               per_tensor);
    GemmAttrs ga;
    ga.transpose_b = trans_b;
    Value yf = b.op1("Gemm", {xf, wf, b.constant("bias", DType::kFloat32, {N}, bias.data())}, ga);
    QuantAttrs q{1, 0, true, DType::kUInt8, DType::kFloat32};
    b.output(b.op1("QuantizeLinear", {yf, b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yzp", DType::kUInt8, {}, &yzp)}, q),
             "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    ir::Graph fused = *g, kept = *g;
    ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
    ASSERT_TRUE(runFusionPipeline(kept, *parseFusionFlags("--disable_pass=quant_dq_op_q_fusion"), FusionColumn::kCpu).ok());
    EXPECT_TRUE(hasOp(fused, "MatMulIntegerToFloat")) << trans_b;
    EXPECT_FALSE(hasOp(fused, "Gemm")) << trans_b;
    EXPECT_TRUE(hasOp(kept, "Gemm")) << trans_b;
    HostTensor in(DType::kUInt8, {M, K});
    std::uniform_int_distribution<int> u8(0, 255);
    for (int64_t i = 0; i < in.size(); ++i) static_cast<uint8_t*>(in.data())[i] = static_cast<uint8_t>(u8(rng));
    auto float_path = testing::runGraph(*g, {in}, "reference", testing::optLevel(0));
    ASSERT_TRUE(float_path.ok()) << float_path.status().message();
    for (const char* backend : {"reference", "cpu"}) {
      auto int_path = testing::runGraph(*g, {in}, backend, testing::optLevel(2));
      ASSERT_TRUE(int_path.ok()) << backend << ": " << int_path.status().message();
      expectWithinSteps((*int_path)[0], (*float_path)[0], 1, backend);
    }
  }
}

// DQ -> Reshape -> Transpose -> Q with the same scale and zero point (onnxruntime's
// QOperator files write it around attention's head split): the movement runs on the
// integers and the round trip goes; with another output scale the movement runs on the
// integers too, after one 256-entry lookup that requantizes them.
ir::Graph dqMoveQGraph(float q_scale) {
  GraphBuilder b;
  Value x = b.input("x", DType::kUInt8, {1, 6, 8});
  const float s = 0.05f;
  const uint8_t z = 131;
  QuantAttrs qa{1, 0, true, DType::kUInt8, DType::kFloat32};
  QuantAttrs dqa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value f = b.op1("DequantizeLinear", {x, b.constant("s", DType::kFloat32, {}, &s), b.constant("z", DType::kUInt8, {}, &z)}, dqa);
  Value r = b.op1("Reshape", {f}, ShapeAttrs{{1, 6, 2, 4}});
  Value t = b.op1("Transpose", {r}, PermAttrs{{0, 2, 1, 3}});
  b.output(b.op1("QuantizeLinear", {t, b.constant("qs", DType::kFloat32, {}, &q_scale), b.constant("qz", DType::kUInt8, {}, &z)}, qa), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(QuantDqOpQFusion, DataMovementBetweenEqualDqAndQRunsOnTheIntegers) {
  HostTensor x(DType::kUInt8, {1, 6, 8});
  for (int64_t i = 0; i < x.size(); ++i) static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>((i * 37) % 256);
  for (float q_scale : {0.05f, 0.07f}) {
    const ir::Graph g = dqMoveQGraph(q_scale);
    ir::Graph fused = g;
    ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
    const bool same = q_scale == 0.05f;
    EXPECT_FALSE(hasOp(fused, "QuantizeLinear")) << q_scale;
    EXPECT_FALSE(hasOp(fused, "DequantizeLinear")) << q_scale;
    EXPECT_EQ(hasOp(fused, "Gather"), !same) << q_scale;
    EXPECT_TRUE(hasOp(fused, "Transpose")) << q_scale;
    auto want = testing::runGraph(g, {x}, "reference", testing::optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().message();
    for (const char* backend : {"reference", "cpu"}) {
      auto got = testing::runGraph(g, {x}, backend, testing::optLevel(2));
      ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
      EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 0.0, 0.0), "") << backend << " " << q_scale;
    }
  }
}

// Q(f(DQ(x))) with f elementwise (GeLU's erf form reads its input twice; HardSwish as
// one op): one 256-entry table lookup, equal to the unfused ops exactly; a value inside f
// that is also a graph output keeps the ops.
ir::Graph lookupGraph(DType xt, bool gelu, bool leak_inner) {
  GraphBuilder b;
  Value x = b.input("x", xt, {2, 3, 40});
  const float s = 0.04f, ys = 0.03f;
  const uint8_t zu = 120, yzu = 15;
  const int8_t zs = -5, yzs = -100;
  const void* z = xt == DType::kUInt8 ? static_cast<const void*>(&zu) : &zs;
  const void* yz = xt == DType::kUInt8 ? static_cast<const void*>(&yzu) : &yzs;
  QuantAttrs qa{1, 0, true, xt, DType::kFloat32};
  QuantAttrs dqa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value f = b.op1("DequantizeLinear", {x, b.constant("s", DType::kFloat32, {}, &s), b.constant("z", xt, {}, z)}, dqa);
  Value y;
  if (gelu) {
    Value e = b.op1("Erf", {b.mul(f, 0.70710678f)});
    if (leak_inner) b.output(e, "erf");
    y = b.mul(b.mul(f, b.add(e, 1.0f)), 0.5f);
  } else {
    y = b.op1("HSwish", {f});
  }
  b.output(b.op1("QuantizeLinear", {y, b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yz", xt, {}, yz)}, qa), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(QuantDqOpQFusion, ElementwiseChainBetweenDqAndQIsOneTableLookup) {
  for (DType xt : {DType::kUInt8, DType::kInt8}) {
    for (bool gelu : {true, false}) {
      for (bool leak : {false, true}) {
        if (leak && !gelu) continue;
        const ir::Graph g = lookupGraph(xt, gelu, leak);
        ir::Graph fused = g;
        ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
        EXPECT_EQ(hasOp(fused, "Gather"), !leak) << dtypeName(xt) << " gelu " << gelu;
        EXPECT_EQ(hasOp(fused, "QuantizeLinear"), leak) << dtypeName(xt) << " gelu " << gelu;
        HostTensor x(xt, {2, 3, 40});
        for (int64_t i = 0; i < x.size(); ++i) static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(i * 11);
        auto want = testing::runGraph(g, {x}, "reference", testing::optLevel(0));
        ASSERT_TRUE(want.ok()) << want.status().message();
        for (const char* backend : {"reference", "cpu"}) {
          auto got = testing::runGraph(g, {x}, backend, testing::optLevel(2));
          ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
          // y exactly through the table; unfused (the erf leaked), the cpu's vectorised erf
          // (4.5e-7 from libm's) may move a value at a rounding edge by one step
          EXPECT_EQ(testing::compareTensors((*got)[leak ? 1 : 0], (*want)[leak ? 1 : 0], 0.0, leak ? 1.0 : 0.0), "") << backend;
          if (leak) { EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-6, 1e-6), "") << backend; }
        }
      }
    }
  }
}

// Q(Concat(DQ(a), DQ(b))) as onnxruntime's QLinearConcat and QDQ Concat write it (each
// input with its own scale): a Concat on the integers, a taken as it is (its DQ has Q's
// parameters), b through one 256-entry lookup; equal to the float path exactly, with
// QLinearConvs around it (the cpu's int8 NHWC layout) and without.
ir::Graph qdqConcatGraph(bool convs) {
  GraphBuilder b;
  const Shape s{1, 16, 5, 5};
  const float as = 0.05f, bs = 0.043f, ws = 0.01f;
  const uint8_t az = 128, bz = 120;
  QuantAttrs qa{1, 0, true, DType::kUInt8, DType::kFloat32};
  QuantAttrs dqa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value a = b.input("a", DType::kUInt8, s), x = b.input("b", DType::kUInt8, s);
  std::vector<int8_t> w(16 * 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(int(i * 7 % 61) - 30);
  const int8_t wz = 0;
  auto conv = [&](Value v, float vs, uint8_t vz, float ys, uint8_t yz) {  // a 1x1 QLinearConv of 16 channels
    if (!convs) return v;
    Conv2DAttrs c;
    return b.op1("QLinearConv", {v, b.constant("", DType::kFloat32, {}, &vs), b.constant("", DType::kUInt8, {}, &vz),
                                 b.constant("", DType::kInt8, {16, 16, 1, 1}, w.data()), b.constant("", DType::kFloat32, {}, &ws),
                                 b.constant("", DType::kInt8, {}, &wz), b.constant("", DType::kFloat32, {}, &ys),
                                 b.constant("", DType::kUInt8, {}, &yz)},
                 c);
  };
  a = conv(a, as, az, as, az);
  x = conv(x, as, az, bs, bz);
  Value af = b.op1("DequantizeLinear", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("az", DType::kUInt8, {}, &az)}, dqa);
  Value bf = b.op1("DequantizeLinear", {x, b.constant("bs", DType::kFloat32, {}, &bs), b.constant("bz", DType::kUInt8, {}, &bz)}, dqa);
  Value y = b.op1("QuantizeLinear", {b.op1("Concat", {af, bf}, AxisAttrs{1, false}), b.constant("ys", DType::kFloat32, {}, &as),
                                     b.constant("yz", DType::kUInt8, {}, &az)},
                  qa);
  std::vector<int8_t> w2(8 * 32);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<int8_t>(int(i * 5 % 41) - 20);
  if (convs) {
    Conv2DAttrs c;
    y = b.op1("QLinearConv", {y, b.constant("", DType::kFloat32, {}, &as), b.constant("", DType::kUInt8, {}, &az),
                              b.constant("", DType::kInt8, {8, 32, 1, 1}, w2.data()), b.constant("", DType::kFloat32, {}, &ws),
                              b.constant("", DType::kInt8, {}, &wz), b.constant("", DType::kFloat32, {}, &as),
                              b.constant("", DType::kUInt8, {}, &az)},
              c);
  }
  b.output(y, "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(QuantDqOpQFusion, ConcatOfDqsRequantizesEachInputOnTheIntegers) {
  for (bool convs : {false, true}) {
    const ir::Graph g = qdqConcatGraph(convs);
    ir::Graph fused = g;
    ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
    EXPECT_FALSE(hasOp(fused, "DequantizeLinear")) << convs;
    EXPECT_FALSE(hasOp(fused, "QuantizeLinear")) << convs;
    int lookups = 0;
    for (const auto& n : fused.nodes) lookups += std::string(n.op->name) == "Gather";
    EXPECT_EQ(lookups, 1) << convs;  // b's; a's DQ has the output's scale and zero point
    HostTensor a(DType::kUInt8, {1, 16, 5, 5}), x(DType::kUInt8, {1, 16, 5, 5});
    for (int64_t i = 0; i < a.size(); ++i) {
      static_cast<uint8_t*>(a.data())[i] = static_cast<uint8_t>(i * 13);
      static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(i * 29 + 7);
    }
    for (const char* backend : {"reference", "cpu"}) {  // against the same backend's float path (its convolutions the same)
      auto want = testing::runGraph(g, {a, x}, backend, *parseFusionFlags("--disable_pass=quant_dq_op_q_fusion"));
      auto got = testing::runGraph(g, {a, x}, backend, testing::optLevel(2));
      ASSERT_TRUE(want.ok() && got.ok()) << backend;
      EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 0.0, 0.0), "") << backend << " convs " << convs;
    }
  }
}

// Between two of onnxruntime's QDQ SqueezeNet fire modules: DQ -> ReLU on each expand
// convolution's output (its own scale and an odd zero point), Concat, MaxPool, Q with the
// next layer's scale: two 256-entry lookups, a Concat and a MaxPool of the integers, no
// float tensor left, equal to the float path exactly. A branch f that makes NaN (Sqrt of
// a negative value) keeps the pool on floats: a NaN's Q does not commute with a max.
ir::Graph fireGraph(bool nan_branch) {
  GraphBuilder b;
  const Shape s{1, 16, 7, 7};
  const float as = 0.051f, bs = 0.0537f, ys = 0.0291f;
  const uint8_t az = 131, bz = 117, yz = 0;
  QuantAttrs qa{1, 0, true, DType::kUInt8, DType::kFloat32};
  QuantAttrs dqa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value a = b.input("a", DType::kUInt8, s), x = b.input("b", DType::kUInt8, s);
  Value af = b.op1("DequantizeLinear", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("az", DType::kUInt8, {}, &az)}, dqa);
  Value bf = b.op1("DequantizeLinear", {x, b.constant("bs", DType::kFloat32, {}, &bs), b.constant("bz", DType::kUInt8, {}, &bz)}, dqa);
  Value joined = b.op1("Concat", {b.relu(af), nan_branch ? b.op1("Sqrt", {bf}) : b.relu(bf)}, AxisAttrs{1, false});
  Value pooled = b.op1("MaxPool", {joined}, PoolAttrs{{3, 3}, {2, 2}, {1, 1, 1, 1}});
  b.output(b.op1("QuantizeLinear", {pooled, b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yz", DType::kUInt8, {}, &yz)}, qa), "y");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(QuantDqOpQFusion, ReluConcatAndMaxPoolBetweenFireModulesRunOnTheIntegers) {
  HostTensor a(DType::kUInt8, {1, 16, 7, 7}), x(DType::kUInt8, {1, 16, 7, 7});
  for (int64_t i = 0; i < a.size(); ++i) {
    static_cast<uint8_t*>(a.data())[i] = static_cast<uint8_t>(i * 13);
    static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(i * 29 + 7);
  }
  for (bool nan_branch : {false, true}) {
    const ir::Graph g = fireGraph(nan_branch);
    ir::Graph fused = g;
    ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
    int lookups = 0, float_tensors = 0;
    for (const auto& n : fused.nodes) {
      lookups += std::string(n.op->name) == "Gather";
      for (int t : n.outputs) float_tensors += fused.tensors[size_t(t)].dtype == DType::kFloat32;
    }
    EXPECT_EQ(hasOp(fused, "QuantizeLinear"), nan_branch);
    EXPECT_EQ(lookups, nan_branch ? 0 : 2);
    if (!nan_branch) { EXPECT_EQ(float_tensors, 0); }
    for (const char* backend : {"reference", "cpu"}) {
      auto want = testing::runGraph(g, {a, x}, "reference", testing::optLevel(0));
      auto got = testing::runGraph(g, {a, x}, backend, testing::optLevel(2));
      ASSERT_TRUE(want.ok() && got.ok()) << backend;
      EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 0.0, 0.0), "") << backend << " nan branch " << nan_branch;
    }
  }
}

// A BatchNorm whose scale onnxruntime's quantize_static quantized (DQ(Q(gamma)): a
// constant only after ConstantFolding) between int8 layers: ArithmeticSimplify makes it
// x * s + t, so no BatchNorm runs alone; the result as the BatchNorm's within rounding.
TEST(BatchNormAffine, BatchNormWhoseScaleIsFoldedLaterBecomesMulAndAdd) {
  GraphBuilder b;
  const Shape s{1, 8, 6, 6};
  Value x = b.input("x", DType::kFloat32, s);
  std::vector<float> gamma(8), beta(8), mean(8), var(8);
  for (int c = 0; c < 8; ++c) {
    gamma[c] = 0.5f + 0.1f * c, beta[c] = 0.2f - 0.05f * c, mean[c] = 0.01f * c, var[c] = 1.0f + 0.3f * c;
  }
  const float gs = 0.01f;
  const uint8_t gz = 0;
  QuantAttrs qa{1, 0, true, DType::kUInt8, DType::kFloat32};
  QuantAttrs dqa{1, 0, true, DType::kFloat32, DType::kFloat32};
  Value gq = b.op1("QuantizeLinear", {b.constant("gamma", DType::kFloat32, {8}, gamma.data()), b.constant("gs", DType::kFloat32, {}, &gs),
                                      b.constant("gz", DType::kUInt8, {}, &gz)}, qa);
  Value g = b.op1("DequantizeLinear", {gq, b.constant("gs2", DType::kFloat32, {}, &gs), b.constant("gz2", DType::kUInt8, {}, &gz)}, dqa);
  Value y = b.op1("BatchNorm", {x, g, b.constant("beta", DType::kFloat32, {8}, beta.data()), b.constant("mean", DType::kFloat32, {8}, mean.data()),
                                b.constant("var", DType::kFloat32, {8}, var.data())},
                  NormAttrs{1, 1e-5f});
  b.output(b.relu(y), "y");
  auto graph = b.finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ir::Graph fused = *graph;
  ASSERT_TRUE(runFusionPipeline(fused, testing::optLevel(2), FusionColumn::kCpu).ok());
  EXPECT_FALSE(hasOp(fused, "BatchNorm"));
  ir::Graph off = *graph;
  ASSERT_TRUE(runFusionPipeline(off, *parseFusionFlags("--disable_pass=ArithmeticSimplify"), FusionColumn::kCpu).ok());
  EXPECT_TRUE(hasOp(off, "BatchNorm"));
  std::vector<float> xs(static_cast<size_t>(numElements(s)));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  HostTensor xv = HostTensor::fromFloats(s, xs);
  auto want = testing::runGraph(*graph, {xv}, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const char* backend : {"reference", "cpu"}) {
    auto got = testing::runGraph(*graph, {xv}, backend, testing::optLevel(2));
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
    EXPECT_EQ(testing::compareTensors((*got)[0], (*want)[0], 1e-5, 1e-6), "") << backend;
  }
}

TEST(CpuPrecision, Bf16WithoutNativeSupportRunsFloat32) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 64});
  std::vector<float> w(64 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i));
  b.output(b.op1("MatMul", {x, b.constant("w", DType::kFloat32, {64, 32}, w.data())}, MatMulAttrs{}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor in = testing::randomTensor({4, 64}, 3);
  auto run = [&](Precision p) -> std::vector<float> {
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.precision = p;
    auto s = Session::create(*g, o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s.ok()) return {};
    EXPECT_TRUE((*s)->setInput("x", in).ok());
    EXPECT_TRUE((*s)->run().ok());
    return (*s)->output("y")->toFloats();
  };
  const std::vector<float> f32 = run(Precision::kFloat32), bf16 = run(Precision::kBFloat16);
  if (!cpu::cpuHasNativeBf16()) {
    EXPECT_EQ(bf16, f32) << "bf16 must fall back to float32 on " << cpu::cpuTierSummary();
  }
  // The bf16 path itself (oneDNN may refuse it on this CPU; the GEMM then runs float32):
  // bf16 operands (8 bits of mantissa) over 64 terms stay within 2% of the float32 result.
  cpu::forceCpuBf16ForTesting(true);
  const std::vector<float> forced = run(Precision::kBFloat16);
  cpu::forceCpuBf16ForTesting(false);
  ASSERT_EQ(forced.size(), f32.size());
  // What bf16 operands with float32 accumulation give, computed here in double.
  const std::vector<float> xs = in.toFloats();
  auto bf = [](float v) { return bfloat16ToFloat(floatToBFloat16(v)); };
  double to_bf16 = 0, to_f32 = 0, scale = 0;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 32; ++j) {
      double want = 0;
      for (int k = 0; k < 64; ++k) want += static_cast<double>(bf(xs[i * 64 + k])) * bf(w[k * 32 + j]);
      const size_t o = static_cast<size_t>(i * 32 + j);
      to_bf16 = std::max(to_bf16, std::fabs(forced[o] - want));
      to_f32 = std::max(to_f32, std::fabs(static_cast<double>(forced[o]) - f32[o]));
      scale = std::max(scale, std::fabs(want));
    }
  }
  // Either oneDNN ran bf16 (then it matches the bf16 product) or it refused and the GEMM
  // ran float32 (then it matches float32): nothing in between.
  const bool ran_bf16 = to_bf16 <= 1e-5 * scale;
  EXPECT_TRUE(ran_bf16 || to_f32 <= 1e-5 * scale) << "to bf16 " << to_bf16 << ", to f32 " << to_f32;
  std::cout << "forced bf16 on oneDNN ISA " << cpu::cpuTierSummary() << ": " << (ran_bf16 ? "bf16 ran" : "oneDNN refused bf16, float32 ran")
            << " (max abs to the bf16 product " << to_bf16 << ", to float32 " << to_f32 << ")\n";
}

}  // namespace
}  // namespace gkrt
