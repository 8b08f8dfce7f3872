// The cpu backend's own quantization loops (backends/cpu/quantization/quant_kernels.h) against the
// reference kernels, bit for bit: rounding ties, NaN, infinities, saturation, sizes that
// are not a multiple of the vector width, two threads; and the fused-loop executor's
// integer Cast and small prologue ops (the dequantization chain of a dynamically
// quantized layer, backends/cpu/fused/fused_elementwise.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/layout/blocked_layout.h"
#include "backends/cpu/quantization/quant_kernels.h"
#include "runtime/builder.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

// Floats with every awkward case: ties at the scale, NaN, +-inf, huge and tiny values.
HostTensor awkwardFloats(const Shape& shape, float scale, uint32_t seed) {
  HostTensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-200.0f, 200.0f);
  float* x = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (i % 9) {
      case 0: x[i] = (std::floor(u(rng)) + 0.5f) * scale; break;  // a tie after / scale
      case 1: x[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 2: x[i] = (i % 2 ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity(); break;
      case 3: x[i] = (i % 2 ? 3e30f : -3e30f); break;
      default: x[i] = u(rng) * scale;
    }
  }
  return t;
}

HostTensor randomBytes(DType type, const Shape& shape, uint32_t seed) {
  HostTensor t(type, shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.size(); ++i) static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(rng());
  return t;
}

// cpu on 2 threads, the int8 kernels' float path forced or not.
StatusOr<testing::KernelRun> runCpuInt8(const ir::Graph& g, const std::vector<HostTensor>& in, bool float_path) {
  SessionOptions o;
  o.backend = "cpu";
  o.backend_options.num_threads = 2;
  o.backend_options.cpu_int8_float = float_path;
  return testing::runWithKernels(g, in, o);
}

// Runs on the reference and on cpu (2 threads) and expects identical bytes; returns the
// cpu kernels' details.
std::string expectCpuEqualsReference(const ir::Graph& g, const std::vector<HostTensor>& in) {
  auto want = testing::runGraph(g, in, "reference");
  EXPECT_TRUE(want.ok()) << want.status().message();
  auto got = runCpuInt8(g, in, false);
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!want.ok() || !got.ok()) return "";
  for (size_t k = 0; k < want->size(); ++k) {
    const HostTensor &w = (*want)[k], &c = got->outputs[k];
    EXPECT_EQ(c.dtype(), w.dtype());
    EXPECT_EQ(c.bytes(), w.bytes());
    if (c.bytes() != w.bytes()) continue;
    int first = -1;
    for (size_t i = 0; i < w.bytes() && first < 0; ++i) {
      if (static_cast<const uint8_t*>(c.data())[i] != static_cast<const uint8_t*>(w.data())[i]) first = static_cast<int>(i);
    }
    EXPECT_EQ(first, -1) << "output " << k << " differs from the reference at byte " << first;
  }
  return got->details;
}

// The largest difference in quantization steps between two uint8 tensors.
int worstStep(const HostTensor& got, const HostTensor& want) {
  int worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<const uint8_t*>(got.data())[i] - static_cast<const uint8_t*>(want.data())[i]));
  }
  return worst;
}

TEST(CpuQuantKernels, QuantizeAndDequantizeEqualTheReference) {
  for (DType to : {DType::kUInt8, DType::kInt8}) {
    GraphBuilder b;
    const Shape shape = {70001};  // two threads' worth, and a tail shorter than a vector
    Value x = b.input("x", DType::kFloat32, shape);
    const float s = 0.37f;
    const uint8_t zp_u8 = 3;
    const int8_t zp_s8 = -5;
    Value scale = b.constant("s", DType::kFloat32, {}, &s);
    Value zp = to == DType::kUInt8 ? b.constant("zp", to, {}, &zp_u8) : b.constant("zp", to, {}, &zp_s8);
    Value q = b.op1("QuantizeLinear", {x, scale, zp}, QuantAttrs{1, 0, true, to, DType::kFloat32});
    b.output(q, "q");
    b.output(b.op1("DequantizeLinear", {q, scale, zp}, QuantAttrs{1, 0, true, DType::kFloat32, DType::kFloat32}), "dq");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    const std::string details = expectCpuEqualsReference(*g, {awkwardFloats(shape, s, 3)});
    EXPECT_NE(details.find("own int8 loop"), std::string::npos) << details;
  }
}

TEST(CpuQuantKernels, QLinearAddAndMulEqualTheReferenceOnEveryOperandShape) {
  const Shape y = {3, 41, 67};
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    for (const char* op : {"QLinearAdd", "QLinearMul"}) {
      for (const Shape& bs : {y, Shape{67}, Shape{41, 67}, Shape{1}, Shape{3, 41, 1}, Shape{41, 1}}) {
        GraphBuilder b;
        Value a = b.input("a", t, y);
        Value bv = b.input("b", t, bs);
        const float as = 0.05f, bsc = 0.11f, ys = op[7] == 'A' ? 0.09f : 0.02f;
        const uint8_t zu[] = {128, 120, 131};
        const int8_t zs[] = {-3, 7, 0};
        auto zp = [&](const char* name, int k) {
          return t == DType::kUInt8 ? b.constant(name, t, {}, &zu[k]) : b.constant(name, t, {}, &zs[k]);
        };
        b.output(b.op1(op, {a, b.constant("as", DType::kFloat32, {}, &as), zp("az", 0), bv,
                            b.constant("bs", DType::kFloat32, {}, &bsc), zp("bz", 1),
                            b.constant("ys", DType::kFloat32, {}, &ys), zp("yz", 2)}),
                 "y");
        auto g = b.finish();
        ASSERT_TRUE(g.ok()) << g.status().message();
        SCOPED_TRACE(std::string(op) + " b " + shapeToString(bs) + (t == DType::kUInt8 ? " u8" : " s8"));
        const std::string details = expectCpuEqualsReference(*g, {randomBytes(t, y, 5), randomBytes(t, bs, 6)});
        EXPECT_NE(details.find("own int8 loop"), std::string::npos) << details;
      }
    }
  }
}

TEST(CpuQuantKernels, DynamicQuantizeLinearEqualsTheReferenceWithNaNAsZero) {
  const Shape shape = {2, 33333};
  auto g = testing::dynamicQuantizeGraph(shape);
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor in = testing::randomTensor(shape, 9);
  float* v = static_cast<float*>(in.data());
  v[17] = std::numeric_limits<float>::quiet_NaN();
  v[40000] = std::numeric_limits<float>::quiet_NaN();
  v[5] = -3.5f;  // the minimum: zero point 199 or so, not 0
  const std::string details = expectCpuEqualsReference(*g, {in});
  EXPECT_NE(details.find("own int8 loop"), std::string::npos) << details;
}

// A dynamically quantized convolution's dequantization as onnxruntime writes it:
// Cast(int32 accumulator) * (x_scale * w_scale[c]) + bias, ReLU. One fused loop: the
// per-channel scale product runs once first, the int32 is converted as it loads.
TEST(CpuQuantKernels, DequantizationChainOfADynamicLayerIsOneFusedLoop) {
  GraphBuilder b;
  const Shape shape = {1, 16, 9, 9};
  Value acc = b.input("acc", DType::kInt32, shape);
  Value xs = b.input("xs", DType::kFloat32, {});
  std::vector<float> ws(16), bias(16);
  for (int c = 0; c < 16; ++c) {
    ws[c] = 0.001f * (c + 1);
    bias[c] = 0.05f * (c - 8);
  }
  Value scale = b.mul(xs, b.constant({16, 1, 1}, ws));
  Value y = b.add(b.mul(b.op1("Cast", {acc}, CastAttrs{DType::kFloat32}), scale), b.constant({16, 1, 1}, bias));
  b.output(b.relu(y), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostTensor a(DType::kInt32, shape);
  std::mt19937 rng(4);
  for (int64_t i = 0; i < a.size(); ++i) static_cast<int32_t*>(a.data())[i] = static_cast<int32_t>(rng() % 20001) - 10000;
  HostTensor s(DType::kFloat32, {});
  *static_cast<float*>(s.data()) = 0.0173f;
  auto want = testing::runGraph(*g, {a, s}, "reference");
  ASSERT_TRUE(want.ok()) << want.status().message();
  auto got = runCpuInt8(*g, {a, s}, false);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->kernels.size(), 1u) << got->details;
  EXPECT_EQ(got->countDetail("small op(s) run first"), 1) << got->details;
  EXPECT_EQ(got->countDetail("integer input(s) cast on load"), 1) << got->details;
  EXPECT_EQ(testing::compareTensors(got->outputs[0], (*want)[0], 1e-6, 1e-6), "");
}

// ConvInteger as onnxruntime's older quantizer writes it: u8 weights with a zero point (and
// s8 weights with one per output channel). oneDNN's convolutions take no weight zero
// point, so with VNNI the weights run as s8 (u8 ^ 0x80) and gkrt takes the zero point's
// term, c[o] * (window sum of x - x_zp), off the int32 sums; bit for bit the reference's,
// with groups, stride, dilation, padding and a run-time x zero point.
TEST(CpuQuantKernels, ConvIntegerWeightZeroPointsFoldedEqualTheReference) {
  struct Case {
    DType wt;
    int64_t C, K, groups, stride, dilation, pad;
    bool per_channel, runtime_xzp;
  };
  const Case cases[] = {{DType::kUInt8, 24, 32, 1, 2, 1, 1, false, false},
                        {DType::kInt8, 16, 24, 2, 1, 2, 2, true, true},
                        {DType::kUInt8, 16, 16, 16, 1, 1, 1, true, false},
                        {DType::kUInt8, 3, 20, 1, 1, 1, 0, false, true}};
  const bool vnni = cpu::cpuTier().has(cpu::CpuIsa::kAvx512Vnni) || cpu::cpuTier().avx_vnni;
  for (const Case& t : cases) {
    SCOPED_TRACE("C " + std::to_string(t.C) + " K " + std::to_string(t.K) + " groups " + std::to_string(t.groups));
    GraphBuilder b;
    const Shape xs = {2, t.C, 13, 11};
    Value x = b.input("x", DType::kUInt8, xs);
    const uint8_t xzp_value = 121;
    Value xzp = t.runtime_xzp ? b.input("xzp", DType::kUInt8, {}) : b.constant("xzp", DType::kUInt8, {}, &xzp_value);
    const Shape ws = {t.K, t.C / t.groups, 3, 3};
    const HostTensor w = randomBytes(t.wt, ws, 31);
    std::vector<uint8_t> wzp(t.per_channel ? t.K : 1);
    for (size_t o = 0; o < wzp.size(); ++o) wzp[o] = static_cast<uint8_t>(t.wt == DType::kUInt8 ? 178 - 3 * o : 250 + 3 * o);
    Value y = b.op1("ConvInteger", {x, b.constant("w", t.wt, ws, w.data()), xzp,
                                    b.constant("wzp", t.wt, t.per_channel ? Shape{t.K} : Shape{}, wzp.data())},
                    Conv2DAttrs{{t.stride, t.stride}, {t.pad, t.pad, t.pad, t.pad}, {t.dilation, t.dilation}, t.groups});
    b.output(y, "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::vector<HostTensor> in{randomBytes(DType::kUInt8, xs, 32)};
    if (t.runtime_xzp) {
      in.emplace_back(DType::kUInt8, Shape{});
      *static_cast<uint8_t*>(in.back().data()) = 97;
    }
    const std::string details = expectCpuEqualsReference(*g, in);
    if (vnni && t.groups == 1) { EXPECT_NE(details.find("zero point folded"), std::string::npos) << details; }
  }
}

// The float path of the oneDNN int8 kernels (CPUs without VNNI; forced here with
// cpu_int8_float): the integer sums in float32 and gkrt's requantization, straight from
// the convolution's blocked accumulator, equal the reference bit for bit (oneDNN's int8
// kernels: within one step).
TEST(CpuQuantKernels, Int8ConvolutionFloatPathEqualsTheReference) {
#ifndef GKRT_HAVE_DNNL
  GTEST_SKIP() << "no oneDNN in this build: these ops run the own int8 GEMM or the reference kernels";
#endif
  GraphBuilder b;
  const int64_t C = 32, K = 48;
  Value x = b.input("x", DType::kUInt8, {1, C, 12, 12});
  std::mt19937 rng(11);
  std::vector<int8_t> w(K * C * 9);
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  std::vector<float> ws(K);
  std::vector<int32_t> bias(K);
  for (int64_t k = 0; k < K; ++k) {
    ws[k] = 0.002f + 0.0001f * k;
    bias[k] = static_cast<int32_t>(rng() % 4001) - 2000;
  }
  std::vector<int8_t> wzp(K, 0);
  const float xs = 0.02f, ys = 0.75f;
  const uint8_t xzp = 121, yzp = 5;
  Value y = b.op1("QLinearConv", {x, b.constant("xs", DType::kFloat32, {}, &xs), b.constant("xzp", DType::kUInt8, {}, &xzp),
                                  b.constant("w", DType::kInt8, {K, C, 3, 3}, w.data()),
                                  b.constant("ws", DType::kFloat32, {K}, ws.data()),
                                  b.constant("wzp", DType::kInt8, {K}, wzp.data()),
                                  b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yzp", DType::kUInt8, {}, &yzp),
                                  b.constant("bias", DType::kInt32, {K}, bias.data())},
                  Conv2DAttrs{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
  b.output(y, "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const HostTensor in = randomBytes(DType::kUInt8, {1, C, 12, 12}, 12);
  auto want = testing::runGraph(*g, {in}, "reference");
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (bool float_path : {true, false}) {
    auto got = runCpuInt8(*g, {in}, float_path);
    ASSERT_TRUE(got.ok()) << got.status().message();
    if (float_path) { EXPECT_EQ(got->countDetail("oneDNN f32 on int8 values"), 1) << got->details; }
    EXPECT_LE(worstStep(got->outputs[0], (*want)[0]), float_path ? 0 : 1) << got->details;
  }
}

// Attention's activation x activation QLinearMatMul (u8 x u8): oneDNN's int8 matmul takes
// s8 weights, so the u8 operand runs shifted (w ^ 0x80, its zero point - 128) where the
// CPU has VNNI, and the float path otherwise; both equal the reference.
TEST(CpuQuantKernels, ActivationTimesActivationQLinearMatMulEqualsTheReference) {
#ifndef GKRT_HAVE_DNNL
  GTEST_SKIP() << "no oneDNN in this build: these ops run the own int8 GEMM or the reference kernels";
#endif
  GraphBuilder b;
  Value a = b.input("a", DType::kUInt8, {2, 4, 16, 32});
  Value k = b.input("k", DType::kUInt8, {2, 4, 32, 16});
  const float as = 0.03f, ks = 0.05f, ys = 0.6f;
  const uint8_t azp = 128, kzp = 119, yzp = 130;
  b.output(b.op1("QLinearMatMul", {a, b.constant("as", DType::kFloat32, {}, &as), b.constant("azp", DType::kUInt8, {}, &azp),
                                   k, b.constant("ks", DType::kFloat32, {}, &ks), b.constant("kzp", DType::kUInt8, {}, &kzp),
                                   b.constant("ys", DType::kFloat32, {}, &ys), b.constant("yzp", DType::kUInt8, {}, &yzp)}),
           "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<HostTensor> in{randomBytes(DType::kUInt8, {2, 4, 16, 32}, 21), randomBytes(DType::kUInt8, {2, 4, 32, 16}, 22)};
  auto want = testing::runGraph(*g, in, "reference");
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (bool float_path : {true, false}) {
    auto got = runCpuInt8(*g, in, float_path);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->countDetail(float_path ? "oneDNN f32 on int8 values" : "oneDNN"), 1) << got->details;
    // oneDNN's own requantization rounds its float32 product, the reference a double one:
    // one step apart at near-ties; gkrt's float path is exact.
    EXPECT_LE(worstStep(got->outputs[0], (*want)[0]), float_path ? 0 : 1) << got->details;
  }
}

// Exact halves: with the scales 0.5 x 0.5 / 1 every odd accumulator lands on k + 0.5, which
// ONNX rounds to even before it adds the output zero point. oneDNN's native int8 path adds
// the zero point first, one step off wherever it is odd (found on an AVX-512 VNNI EPYC,
// 2026-11-28), so there gkrt requantizes oneDNN's float32 output itself. Every path, even
// and odd zero points, matmul and convolution: the reference's bytes.
TEST(CpuQuantKernels, ExactHalvesRoundToEvenBeforeTheOutputZeroPoint) {
#ifndef GKRT_HAVE_DNNL
  GTEST_SKIP() << "no oneDNN in this build: these ops run the own int8 GEMM or the reference kernels";
#endif
  const float half = 0.5f, one = 1.0f;
  const uint8_t xzp = 0;
  const int8_t wzp = 0;
  std::vector<int8_t> w(16 * 24 * 9);
  std::mt19937 rng(5);
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 15) - 7);
  for (uint8_t yzp : {uint8_t(3), uint8_t(4), uint8_t(129)}) {
    for (bool conv : {false, true}) {
      GraphBuilder b;
      Value x = b.input("x", DType::kUInt8, conv ? Shape{1, 24, 6, 6} : Shape{32, 24});
      std::vector<Value> in{x, b.constant("xs", DType::kFloat32, {}, &half), b.constant("xzp", DType::kUInt8, {}, &xzp),
                            b.constant("w", DType::kInt8, conv ? Shape{16, 24, 3, 3} : Shape{24, 16}, w.data()),
                            b.constant("ws", DType::kFloat32, {}, &half), b.constant("wzp", DType::kInt8, {}, &wzp),
                            b.constant("ys", DType::kFloat32, {}, &one), b.constant("yzp", DType::kUInt8, {}, &yzp)};
      if (conv) b.output(b.op1("QLinearConv", in, Conv2DAttrs{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}), "y");
      else b.output(b.op1("QLinearMatMul", in), "y");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().message();
      HostTensor xv = randomBytes(DType::kUInt8, conv ? Shape{1, 24, 6, 6} : Shape{32, 24}, 6);
      for (int64_t i = 0; i < xv.size(); ++i) static_cast<uint8_t*>(xv.data())[i] &= 7;  // small sums: no saturation
      auto want = testing::runGraph(*g, {xv}, "reference");
      ASSERT_TRUE(want.ok()) << want.status().message();
      for (bool float_path : {true, false}) {
        auto got = runCpuInt8(*g, {xv}, float_path);
        ASSERT_TRUE(got.ok()) << got.status().message();
        EXPECT_EQ(worstStep(got->outputs[0], (*want)[0]), 0)
            << (conv ? "QLinearConv" : "QLinearMatMul") << ", output zero point " << int(yzp) << "\n" << got->details;
      }
    }
  }
}

// Two QDQ convolutions with a MaxPool (float, on the blocked layout) or a ReLU between,
// as onnxruntime's QDQ files have them: after quant_dq_op_q_fusion the int8 tensors
// between the convolutions are stored NHWC (what oneDNN's int8 convolutions take,
// int8_layout.h); the MaxPool between equal Q/DQ pools the integers in NHWC, the ReLU
// becomes a 256-entry lookup reading and writing NHWC; results as with plain layouts
// (GKRT_CPU_LAYOUT=plain).
void int8ActivationsStayNhwc(bool pool) {
#ifndef GKRT_HAVE_DNNL
  GTEST_SKIP() << "no oneDNN in this build";
#endif
  GraphBuilder b;
  const int64_t C = 32;
  Value x = b.input("x", DType::kFloat32, {1, C, 10, 10});
  std::mt19937 rng(31);
  QuantAttrs per_tensor{1, 0, true, DType::kFloat32, DType::kFloat32};
  QuantAttrs per_channel{0, 0, true, DType::kFloat32, DType::kFloat32};
  QuantAttrs to_u8{1, 0, true, DType::kUInt8, DType::kFloat32};
  const float s1 = 0.02f, s2 = 0.05f, s3 = 0.04f;
  const uint8_t z1 = 128, z2 = 0, z3 = 100;
  auto qdq = [&](Value v, const float& s, const uint8_t& z, const char* name) {
    Value sc = b.constant(std::string(name) + "_s", DType::kFloat32, {}, &s);
    Value zp = b.constant(std::string(name) + "_z", DType::kUInt8, {}, &z);
    return b.op1("DequantizeLinear", {b.op1("QuantizeLinear", {v, sc, zp}, to_u8), sc, zp}, per_tensor);
  };
  auto conv = [&](Value v, const char* name) {
    std::vector<int8_t> w(C * C * 9);
    for (int8_t& e : w) e = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    std::vector<float> ws(C, 0.003f);
    std::vector<int8_t> wzp(C, 0);
    Value wf = b.op1("DequantizeLinear", {b.constant(std::string(name) + "_w", DType::kInt8, {C, C, 3, 3}, w.data()),
                                          b.constant(std::string(name) + "_ws", DType::kFloat32, {C}, ws.data()),
                                          b.constant(std::string(name) + "_wz", DType::kInt8, {C}, wzp.data())},
                     per_channel);
    Conv2DAttrs a;
    a.pads = {1, 1, 1, 1};
    return b.op1("Conv2D", {v, wf}, a);
  };
  Value mid = qdq(conv(qdq(x, s1, z1, "in"), "c1"), s2, z2, "mid");
  Value h = qdq(pool ? b.op1("MaxPool", {mid}, PoolAttrs{{3, 3}, {1, 1}, {1, 1, 1, 1}}) : b.relu(mid), s2, z2, "act");
  b.output(qdq(conv(h, "c2"), s3, z3, "out"), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<HostTensor> in{testing::randomTensor({1, C, 10, 10}, 32)};
  SessionOptions o;
  o.backend = "cpu";
  o.backend_options.num_threads = 2;
  auto blocked = testing::runWithKernels(*g, in, o);
  ASSERT_TRUE(blocked.ok()) << blocked.status().message();
  o.backend_options.cpu_blocked_layout = false;
  auto plain = testing::runWithKernels(*g, in, o);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->countDetail("nhwc"), 0) << plain->details;
  if (cpu::preferredBlock() == 0 || C % cpu::preferredBlock() != 0) GTEST_SKIP() << "no blocked layout on this CPU";
  EXPECT_GE(blocked->countDetail(", nhwc"), 2) << blocked->details;
  if (pool) { EXPECT_EQ(blocked->countDetail("own int8 max pool, nhwc"), 1) << blocked->details; }
  if (pool) EXPECT_EQ(blocked->countDetail("own int8 loop"), 2) << blocked->details;  // the input Q and output DQ only
  else EXPECT_EQ(blocked->countDetail("int8 lookup"), 1) << blocked->details;
  EXPECT_EQ(testing::compareTensors(blocked->outputs[0], plain->outputs[0], 0, 0), "") << blocked->details;
}

TEST(CpuQuantKernels, Int8ActivationsBetweenConvolutionsStayNhwc) { int8ActivationsStayNhwc(true); }

// MaxPool of uint8 and int8 values (a QOperator network's pools) on the own int8 pool,
// byte for byte the reference's: padded and unpadded windows, strides 1 and 2, ceil mode,
// a window wider than tall.
TEST(CpuQuantKernels, Int8MaxPoolEqualsTheReference) {
  struct Case { PoolAttrs a; };
  PoolAttrs ceil{{3, 3}, {2, 2}, {0, 0, 0, 0}};
  ceil.ceil_mode = true;
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    for (const PoolAttrs& a : {PoolAttrs{{3, 3}, {2, 2}, {1, 1, 1, 1}}, PoolAttrs{{2, 3}, {1, 2}, {0, 1, 0, 1}}, ceil}) {
      GraphBuilder b;
      b.output(b.op1("MaxPool", {b.input("x", t, {2, 5, 11, 9})}, a), "y");
      auto g = b.finish();
      ASSERT_TRUE(g.ok()) << g.status().message();
      const std::string details = expectCpuEqualsReference(*g, {randomBytes(t, {2, 5, 11, 9}, 41)});
      EXPECT_NE(details.find("own int8 max pool"), std::string::npos) << details;
    }
  }
}
TEST(CpuQuantKernels, Int8LookupBetweenConvolutionsKeepsNhwc) { int8ActivationsStayNhwc(false); }

// requantizeRow at this process's tier (the cpu_tier_* runs take the AVX2 and SSE2 builds)
// against the rule written out: sat(rint(double(a) * m) + zp). Sums that land on exact
// halves, NaN, +-inf, values that saturate either way, per-value and one multiplier, zero
// points odd and even, lengths around the vector widths; the bytes past n untouched.
TEST(CpuQuantKernels, RequantizeRowEqualsTheRuleAtThisTier) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> sum(-3000, 3000);
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(15), int64_t(16), int64_t(17), int64_t(33), int64_t(64), int64_t(100)}) {
    std::vector<float> a(static_cast<size_t>(n)), s(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      switch (i % 7) {
        case 0: a[i] = std::numeric_limits<float>::quiet_NaN(); break;
        case 1: a[i] = (i % 2 ? 1 : -1) * std::numeric_limits<float>::infinity(); break;
        case 2: a[i] = (i % 3 ? 1.0e12f : -1.0e12f); break;
        default: a[i] = static_cast<float>(sum(rng));
      }
      s[i] = i % 2 ? 0.5f : 0.0625f;  // odd sums land on halves
    }
    for (int zp : {0, 3, 4, 127, -5}) {
      for (bool per_value : {false, true}) {
        const float s1 = 0.25f;
        std::vector<int8_t> y8(size_t(n) + 1, 42);
        std::vector<uint8_t> yu(size_t(n) + 1, 42);
        cpu::requantizeRow(a.data(), per_value ? s.data() : nullptr, s1, zp, y8.data(), n);
        if (zp >= 0) cpu::requantizeRow(a.data(), per_value ? s.data() : nullptr, s1, zp, yu.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          const double v = static_cast<double>(a[i]) * static_cast<double>(per_value ? s[i] : s1);
          const double r = v == v ? std::nearbyint(std::min(std::max(v, -1.0e9), 1.0e9)) : 0.0;
          const int q = static_cast<int>(r) + zp;
          ASSERT_EQ(int(y8[i]), std::min(std::max(q, -128), 127)) << "int8, n " << n << " i " << i << " zp " << zp;
          if (zp >= 0) { ASSERT_EQ(int(yu[i]), std::min(std::max(q, 0), 255)) << "uint8, n " << n << " i " << i << " zp " << zp; }
        }
        ASSERT_EQ(y8[n], 42);
        ASSERT_EQ(yu[n], 42);
      }
    }
  }
}

}  // namespace
}  // namespace gkrt
