// The opencl backend on whatever OpenCL device the machine has (PoCL in CI): the
// seeds' networks as one kernel each, reduce clusters rendered with work-group
// reductions, the on-disk program cache (warm start, corrupt entries), fallback to
// cpu with copies, device selection errors, and the CUDA dialect of the renderer.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "backends/codegen/cluster_renderer.h"
#ifdef GKRT_HAVE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#include "runtime/model_io.h"
#include "tests/unit/eight_bit_graph.h"
#include "tests/unit/conv_epilogue_graph.h"
#include "tests/unit/test_support.h"
#include "tools/array_print.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

#define SKIP_WITHOUT_OPENCL()                                                        \
  do {                                                                               \
    auto probe = createBackend("opencl");                                            \
    if (!probe.ok()) GTEST_SKIP() << "no opencl here: " << probe.status().message(); \
  } while (0)

using testing::optLevel;
using testing::randomTensor;

std::string freshCacheDir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("gkrt_cl_" + name + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  return dir;
}

StatusOr<std::unique_ptr<Session>> openclSession(const ir::Graph& g, int level, const std::string& cache_dir = "") {
  SessionOptions o;
  o.backend = "opencl";
  o.fusion = optLevel(level);
  o.backend_options.program_cache_dir = cache_dir;
  return Session::create(g, o);
}

std::vector<HostTensor> runSession(Session& s, const std::vector<HostTensor>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE(s.setInput(s.inputs()[k].name, inputs[k]).ok());
  EXPECT_TRUE(s.run().ok());
  std::vector<HostTensor> out;
  for (const TensorInfo& o : s.outputs()) out.push_back(*s.output(o.name));
  return out;
}

void expectMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& inputs, double rtol, int level) {
  auto want = testing::runGraph(g, inputs, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto s = openclSession(g, level);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  const auto got = runSession(**s, inputs);
  for (size_t k = 0; k < want->size(); ++k) {
    EXPECT_EQ(testing::compareTensors(got[k], (*want)[k], rtol, 1e-5), "") << "opt_level " << level << ", output " << k;
  }
}

TEST(OpenClBackend, SeedNetworksRunAsOneOpenClKernelEach) {
  SKIP_WITHOUT_OPENCL();
  const std::string ex = GKRT_EXAMPLES_DIR;
  struct Case { const char* model; std::vector<const char*> inputs; const char* printed; };
  for (const Case& c : std::vector<Case>{
           {"mynet", {"x"}, "[[2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]]"},
           {"mynet_myop", {"x", "y"},
            "[[-0.015104 -0.015104 -0.015104 -0.015104]\n [-0.015104 -0.015104 -0.015104 -0.015104]\n"
            " [-0.015104 -0.015104 -0.015104 -0.015104]\n [-0.015104 -0.015104 -0.015104 -0.015104]]"}}) {
    auto g = loadModelFile(ex + "/" + c.model + ".gkm");
    ASSERT_TRUE(g.ok()) << g.status().toString();
    std::vector<HostTensor> inputs;
    for (const char* in : c.inputs) inputs.push_back(*readNpy(ex + "/" + c.model + "_" + in + ".npy"));
    auto s = openclSession(*g, 2);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    ASSERT_EQ((*s)->kernelCount(), 1u) << c.model;
    const auto infos = (*s)->kernelInfos();
    EXPECT_TRUE(infos[0].fused);
    EXPECT_EQ(infos[0].backend, "opencl");
    EXPECT_EQ(formatArray(runSession(**s, inputs)[0]), c.printed) << c.model;
  }
}

// Softmax and LayerNorm expand (GPU table) into reduce clusters: row reductions with a
// prologue, the row's value broadcast back, and an epilogue; plus reductions over
// outer and middle axes, ReduceMean without keep_dims, NaN through ReduceMax, rows
// longer than a work-group, and single ops with fusion off.
// The hand-written LayerNorm on a constant row far from zero: the mean is taken around
// the row's first element, so x - mean is exactly 0 (a plain float sum left a residue
// that 1/sqrt(eps) turned into 1.5e-3 of error: fuzz seed 104569). AddLayerNorm likewise.
TEST(OpenClBackend, LayerNormOfAConstantRowIsExact) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {3, 33});
  Value r = b.input("r", DType::kFloat32, {3, 33});
  const HostTensor gamma = randomTensor({33}, 51), beta = randomTensor({33}, 52);
  Value g = b.constant("g", DType::kFloat32, {33}, gamma.data()), be = b.constant("be", DType::kFloat32, {33}, beta.data());
  b.output(b.op("LayerNorm", {x, g, be}, NormAttrs{-1, 1e-5f}, 1)[0], "ln");
  b.output(b.op("AddLayerNorm", {x, r, g, be}, NormAttrs{-1, 1e-5f}, 2)[0], "add_ln");
  auto graph = b.finish();
  ASSERT_TRUE(graph.ok()) << graph.status().toString();
  HostTensor xs(DType::kFloat32, {3, 33}), rs(DType::kFloat32, {3, 33});
  float* xp = static_cast<float*>(xs.data());
  float* rp = static_cast<float*>(rs.data());
  const float rows[3] = {53.598148f, 0.3f, 123.456f};  // every row constant, in x and in x + r
  for (int k = 0; k < 99; ++k) xp[k] = rows[k / 33], rp[k] = 0.0f;
  auto want = testing::runGraph(*graph, {xs, rs}, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto s = openclSession(*graph, 0);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  const auto got = runSession(**s, {xs, rs});
  for (size_t k = 0; k < want->size(); ++k) EXPECT_EQ(testing::compareTensors(got[k], (*want)[k], 1e-5, 1e-5), "") << "output " << k;
}

TEST(OpenClBackend, ReduceClustersMatchReference) {
  SKIP_WITHOUT_OPENCL();
  for (const Shape& s : {Shape{3, 7, 33}, Shape{2, 700}, Shape{5, 1}}) {
    auto g = testing::normsAndReductionsGraph(s);
    ASSERT_TRUE(g.ok()) << g.status().toString();
    HostTensor xin = randomTensor(s, 1);
    for (int level : {0, 2}) expectMatchesReference(*g, {xin}, 2e-5, level);
  }
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 6, 5});
  b.output(b.op1("ReduceSum", {b.op1("Sigmoid", {x})}, AxesAttrs{{0, 2}, false}), "middle_kept");
  b.output(b.op1("ReduceMax", {x}, AxesAttrs{{1}, true}), "nan_max");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor xin = randomTensor({4, 6, 5}, 2);
  xin.as<float>()[7] = std::nanf("");
  for (int level : {0, 2}) expectMatchesReference(*g, {xin}, 1e-5, level);
}

// Comparisons, logic and Select on bool, Cast between float32/int32/int64/bool (NaN
// and out-of-range floats saturate like the reference), integer arithmetic and
// BroadcastTo: rendered too, fused with float math around them.
TEST(OpenClBackend, BoolAndIntegerOpsMatchReference) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {3, 4});
  Value i = b.input("i", DType::kInt32, {4});
  Value neg = b.op1("Less", {x, b.scalar(0.25f, x)});
  Value sel = b.op1("Select", {neg, x, b.op1("Neg", {x})});
  Value fi = b.op1("Cast", {i}, CastAttrs{DType::kFloat32});
  b.output(b.add(sel, fi), "y");
  Value xi = b.op1("Cast", {b.mul(x, 1e9f)}, CastAttrs{DType::kInt32});
  b.output(b.op1("Maximum", {xi, b.add(b.mul(i, i), b.op1("Neg", {i}))}), "z");  // no overflow: saturated values only compared
  b.output(b.op1("LogicalOr", {b.op1("LogicalNot", {neg}), b.op1("Equal", {x, b.op1("Abs", {x})})}), "m");
  b.output(b.op1("Cast", {b.op1("BroadcastTo", {i}, ShapeAttrs{{2, 3, 4}})}, CastAttrs{DType::kInt64}), "w");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor xin = randomTensor({3, 4}, 15);
  xin.as<float>()[1] = std::nanf("");
  xin.as<float>()[2] = 1e30f;  // saturates in the int32 cast
  HostTensor iin(DType::kInt32, {4});
  for (int k = 0; k < 4; ++k) iin.as<int32_t>()[k] = k * 7 - 9;
  for (int level : {0, 2}) {
    auto s = openclSession(*g, level);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    for (const auto& k : (*s)->kernelInfos()) EXPECT_EQ(k.backend, "opencl") << k.name;
  }
  for (int level : {0, 2}) expectMatchesReference(*g, {xin, iin}, 1e-6, level);
}

// 8-bit values on the GPU dialects: a quantized embedding gathered in its int8 values and
// widened after the gather (the GGUF importer's form), uint8 compared with a constant and
// selected, int32 narrowed to int8; every kernel on opencl, equal to the reference.
// Arithmetic on 8-bit values and float-to-8-bit casts stay off the GPU (not checked here).
TEST(OpenClBackend, EightBitValuesRunOnOpenCl) {
  SKIP_WITHOUT_OPENCL();
  auto g = testing::eightBitValuesGraph();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor ids(DType::kInt32, {5}), q(DType::kUInt8, {5, 6});
  for (int k = 0; k < 5; ++k) ids.as<int32_t>()[k] = (k * 13) % 32;
  for (int k = 0; k < 30; ++k) q.as<uint8_t>()[k] = static_cast<uint8_t>(k * 41 % 256);
  for (int level : {0, 2}) {
    auto s = openclSession(*g, level);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    for (const auto& k : (*s)->kernelInfos()) EXPECT_EQ(k.backend, "opencl") << k.name;
    expectMatchesReference(*g, {ids, q}, 0.0, level);
  }
}

// A cluster whose outputs differ in shape (an intermediate of a broadcast operand is an
// output too): the smaller one is written once per element, by the work-item at index 0
// of the dims it broadcasts along.
TEST(OpenClBackend, ClusterOutputsOfDifferentShapes) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 3, 5});
  Value y = b.input("y", DType::kFloat32, {3, 1});
  Value e = b.op1("Exp", {b.mul(y, 0.5f)});
  b.output(e, "e");
  b.output(b.add(b.mul(x, e), 1.0f), "z");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto s = openclSession(*g, 2);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ((*s)->kernelCount(), 1u);
  EXPECT_EQ((*s)->kernelInfos()[0].backend, "opencl");
  for (int level : {0, 2}) expectMatchesReference(*g, {randomTensor({4, 3, 5}, 19), randomTensor({3, 1}, 20)}, 1e-6, level);
}

// Ops that move elements render as index arithmetic: StridedSlice (negative step,
// clamped ends), Slice, constant Pad, Concat of computed inputs, Transpose; any of them
// on int64 too where they only move values.
TEST(OpenClBackend, SlicePadConcatMatchReference) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 6, 5});
  Value i = b.input("i", DType::kInt64, {3, 7});
  StridedSliceAttrs ss;
  ss.begins = {-1, 1};
  ss.ends = {-100, 99};
  ss.axes = {0, 2};
  ss.steps = {-2, 2};
  Value sl = b.op1("StridedSlice", {b.op1("Exp", {x})}, ss);  // [2, 6, 2]
  SliceAttrs sa;
  sa.begins = {0, 2, 1};
  sa.sizes = {2, -1, 2};
  Value sl2 = b.op1("Slice", {x}, sa);  // [2, 4, 2]
  PadAttrs pa;
  pa.pads = {0, 1, 0, 0, 1, 0};
  pa.value = -3.5f;
  Value padded = b.op1("Pad", {sl2}, pa);  // [2, 6, 2]
  Value cat = b.op1("Concat", {sl, b.mul(padded, 2.0f), sl}, AxisAttrs{2, false});  // [2, 6, 6]
  b.output(b.op1("Transpose", {b.add(cat, 1.0f)}, PermAttrs{{2, 0, 1}}), "y");
  StridedSliceAttrs si;
  si.begins = {1};
  si.ends = {7};
  si.axes = {1};
  si.steps = {3};
  b.output(b.op1("Concat", {b.op1("StridedSlice", {i}, si), i}, AxisAttrs{1, false}), "z");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor iin(DType::kInt64, {3, 7});
  for (int k = 0; k < 21; ++k) iin.as<int64_t>()[k] = int64_t(k) * 1000003 - 7;
  for (int level : {0, 2}) {
    auto s = openclSession(*g, level);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    for (const auto& k : (*s)->kernelInfos()) EXPECT_EQ(k.backend, "opencl") << k.name;
    expectMatchesReference(*g, {randomTensor({4, 6, 5}, 21), iin}, 1e-6, level);
  }
}

// With MatMul in the cluster set, a GEMM takes its elementwise tail (bias, GeLU, a
// residual add): one generated kernel, the tail applied in the GEMM's epilogue.
TEST(OpenClBackend, GemmEpiloguesRunAsOneKernel) {
  SKIP_WITHOUT_OPENCL();
  struct Case { Shape a, b; bool tb; const char* op; };
  for (const Case& c : std::vector<Case>{{{37, 20}, {20, 45}, false, "MatMul"},
                                         {{2, 3, 17, 9}, {1, 3, 33, 9}, true, "BatchMatMul"}}) {
    GraphBuilder b;
    Value a = b.input("a", DType::kFloat32, c.a);
    const HostTensor wt = randomTensor(c.b, 12);
    const int64_t n = c.tb ? c.b[c.b.size() - 2] : c.b.back();
    const HostTensor bias = randomTensor({n}, 13);
    Value w = b.constant("w", DType::kFloat32, c.b, wt.data());
    Value h = b.add(b.op1(c.op, {a, w}, MatMulAttrs{false, c.tb}), b.constant("bias", DType::kFloat32, {n}, bias.data()));
    Value y = b.op1("GeLU", {h}, GeluAttrs{GeluApprox::kTanh});
    b.output(b.add(y, b.mul(y, 0.5f)), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const HostTensor x = randomTensor(c.a, 14);
    auto want = testing::runGraph(*g, {x}, "reference", optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    SessionOptions o;
    o.backend = "opencl";
    o.fusion = *parseFusionFlags("--enable_cluster_ops=MatMul,BatchMatMul");
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    ASSERT_EQ((*s)->kernelCount(), 1u) << c.op;
    EXPECT_EQ((*s)->kernelInfos()[0].backend, "opencl");
    EXPECT_EQ(testing::compareTensors(runSession(**s, {x})[0], (*want)[0], 1e-4, 1e-5), "") << c.op;
  }
}

// Convolution epilogues (the gpu column clusters Conv2D with its chain): the library
// convolution, then the chain as one generated kernel over its output in place; one
// kernel per convolution, equal to the reference; with Conv2D's own row off, more kernels.
TEST(OpenClBackend, ConvolutionEpiloguesMatchReference) {
  SKIP_WITHOUT_OPENCL();
  auto g = testing::convEpilogueGraph();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const HostTensor x = randomTensor({1, 8, 10, 10}, 31);
  auto want = testing::runGraph(*g, {x}, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto s = openclSession(*g, 2);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ((*s)->kernelCount(), 6u);
  int epilogues = 0;
  for (const auto& k : (*s)->kernelInfos()) {
    EXPECT_EQ(k.backend, "opencl") << k.name;
    epilogues += k.detail.find("then its epilogue") != std::string::npos;
  }
  EXPECT_EQ(epilogues, 5);
  EXPECT_EQ(testing::compareTensors(runSession(**s, {x})[0], (*want)[0], 1e-4, 1e-5), "");
  SessionOptions o;
  o.backend = "opencl";
  o.fusion = *parseFusionFlags("--disable_cluster_ops=Conv2D");
  auto plain = Session::create(*g, o);
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  EXPECT_GT((*plain)->kernelCount(), 6u);
  EXPECT_EQ(testing::compareTensors(runSession(**plain, {x})[0], (*want)[0], 1e-4, 1e-5), "");
}

// Generated kernels only (the library kernels live in a program of their own).
ir::Graph generatedOnlyGraph() {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {16, 32});
  Value gelu = b.op1("GeLU", {b.add(x, 0.5f)}, GeluAttrs{GeluApprox::kNone});
  Value e = b.op1("Exp", {b.sub(gelu, b.op1("ReduceMax", {gelu}, AxesAttrs{{1}, true}))});
  b.output(b.op1("RealDiv", {e, b.op1("ReduceSum", {e}, AxesAttrs{{1}, true})}), "y");
  return *b.finish();
}

#ifdef GKRT_HAVE_OPENCL
TEST(OpenClBackend, SecondStartLoadsTheCachedProgramAndCorruptEntriesAreRebuilt) {
  SKIP_WITHOUT_OPENCL();
  const ir::Graph g = generatedOnlyGraph();
  const HostTensor x = randomTensor({16, 32}, 6);
  auto want = testing::runGraph(g, {x}, "reference", optLevel(0));
  ASSERT_TRUE(want.ok());
  const std::string dir = freshCacheDir("cache");
  BackendOptions opts;
  opts.program_cache_dir = dir;
  // Starts 3 and 4 change PoCL's extra build flags (ctest sets -cl-opt-disable): a program
  // built with other flags is built again, not loaded; back to the first flags, loaded.
  const char* env = std::getenv("POCL_EXTRA_BUILD_FLAGS");
  const std::string flags = env ? env : "";
  std::vector<std::string> sources;
  for (int start = 0; start < 5; ++start) {
    if (start == 3) setenv("POCL_EXTRA_BUILD_FLAGS", flags.empty() ? "-cl-opt-disable" : "", 1);
    if (start == 4) setenv("POCL_EXTRA_BUILD_FLAGS", flags.c_str(), 1);
    if (start == 2) {  // flip a byte in the middle of the stored binary
      ASSERT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
      const auto entry = std::filesystem::directory_iterator(dir)->path();
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(std::filesystem::file_size(entry) / 2));
      char c = 0;
      f.read(&c, 1);
      f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(entry) / 2));
      c = static_cast<char>(c ^ 0x5a);
      f.write(&c, 1);
    }
    auto be = OpenClBackend::create(opts);
    ASSERT_TRUE(be.ok()) << be.status().toString();
    auto* cl = static_cast<OpenClBackend*>(be->get());
    ir::Graph fused = ir::cloneGraph(g);
    ASSERT_TRUE(ir::inferShapes(fused).ok());
    std::vector<std::unique_ptr<Kernel>> kernels;
    for (const ir::Node& n : fused.nodes) {
      if (!cl->supports(fused, n)) continue;
      auto k = cl->compile(fused, n);
      ASSERT_TRUE(k.ok()) << k.status().toString();
      kernels.push_back(std::move(*k));
    }
    ASSERT_TRUE(cl->finishCompile().ok());
    sources.push_back(cl->lastProgramSource());
  }
  if (env == nullptr) unsetenv("POCL_EXTRA_BUILD_FLAGS");
  EXPECT_EQ(sources, (std::vector<std::string>{"compiled", "cache", "compiled", "compiled", "cache"}));
  // and a session through the (rebuilt) cache computes the right thing
  auto s = openclSession(g, 2, dir);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(testing::compareTensors(runSession(**s, {x})[0], (*want)[0], 1e-4, 1e-6), "");
  std::filesystem::remove_all(dir);
}

// A kernel that does not compile is named in the error, with the driver's build log.
TEST(OpenClBackend, BuildFailuresNameTheKernel) {
  SKIP_WITHOUT_OPENCL();
  auto be = OpenClBackend::create({});
  ASSERT_TRUE(be.ok());
  auto* cl = static_cast<OpenClBackend*>(be->get());
  const std::string source =
      "__kernel void good(__global float* y) { y[0] = 1.0f; }\n"
      "__kernel void bad(__global float* y) {\n  y[0] = undefined_thing;\n}\n";
  auto p = cl->buildProgram(source, {{1, "good (node a)"}, {2, "bad (node b)"}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("building kernel bad (node b) failed"), std::string::npos) << p.status().message();
  EXPECT_EQ(p.status().message().find("good (node a)"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("undefined_thing"), std::string::npos) << p.status().message();
}

#endif  // GKRT_HAVE_OPENCL

// A tensor the device cannot hold: a clear device error at session creation.
TEST(OpenClBackend, DeviceOutOfMemoryIsAClearError) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {int64_t(1) << 40});
  b.output(b.op1("Exp", {x}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  SessionOptions o;  // the memory cap (SessionOptions::max_memory_bytes) lifted: the device itself refuses
  o.backend = "opencl";
  o.fusion = optLevel(2);
  o.max_memory_bytes = ~size_t{0};
  auto s = Session::create(*g, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDeviceError) << s.status().toString();
  EXPECT_NE(s.status().message().find("out of memory or cannot hold"), std::string::npos) << s.status().message();
}

// A node the opencl backend has no kernel for runs on cpu between opencl kernels, with
// copies, and the result matches.
TEST(OpenClBackend, UnsupportedNodesFallBackToCpuWithCopies) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;  // ScatterElements has no opencl kernel: Exp on opencl, it on cpu, Mul on opencl
  Value x = b.input("x", DType::kFloat32, {6, 4});
  std::vector<int64_t> picks(4);
  for (size_t i = 0; i < picks.size(); ++i) picks[i] = static_cast<int64_t>((i * 5) % 6);
  Value idx = b.constant("picks", DType::kInt64, {1, 4}, picks.data());
  Value e = b.op1("Exp", {x});
  Value scattered = b.op1("ScatterElements", {e, idx, b.op1("Neg", {b.op1("Slice", {e}, SliceAttrs{{0, 0}, {1, 4}})})},
                          ScatterAttrs{0});
  b.output(b.mul(scattered, 2.0f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const HostTensor x_in = randomTensor({6, 4}, 7);
  auto want = testing::runGraph(*g, {x_in}, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (int level : {0, 2}) {
    auto s = openclSession(*g, level);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    int on_cpu = 0, on_cl = 0;
    for (const auto& k : (*s)->kernelInfos()) {
      (k.backend == "cpu" ? on_cpu : on_cl) += 1;
      if (k.backend == "cpu") { EXPECT_NE(k.name.find("ScatterElements"), std::string::npos) << k.name; }
    }
    EXPECT_EQ(on_cpu, 1);
    EXPECT_GE(on_cl, 2) << "Exp and Mul";
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(testing::compareTensors(runSession(**s, {x_in})[0], (*want)[0], 1e-6, 1e-6), "") << level;
    }
  }
}

TEST(OpenClBackend, UnknownDeviceListsTheDevices) {
  SKIP_WITHOUT_OPENCL();
  BackendOptions o;
  o.device = "no-such-device-42";
  auto be = createBackend("opencl", o);
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("no device matches 'no-such-device-42'"), std::string::npos) << be.status().message();
  EXPECT_NE(be.status().message().find("0:0 "), std::string::npos) << be.status().message();
}

// The renderer is shared with CUDA: the same cluster in the CUDA dialect.
TEST(ClusterRenderer, CudaDialectDiffersOnlyInSpelling) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 64});
  b.output(b.op1("ReduceSum", {b.op1("Exp", {b.mul(x, 0.5f)})}, AxesAttrs{{1}, true}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto cl = codegen::renderCluster(*g, g->nodes[2], "k", codegen::openclDialect());
  auto cu = codegen::renderCluster(*g, g->nodes[2], "k", codegen::cudaDialect());
  ASSERT_TRUE(cl.ok() && cu.ok()) << cl.status().toString();
  EXPECT_TRUE(cl->reduce);
  EXPECT_EQ(cl->items, 8);
  EXPECT_EQ(cl->reduce_size, 64);
  EXPECT_NE(cl->source.find("__kernel void k("), std::string::npos) << cl->source;
  EXPECT_NE(cl->source.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
  EXPECT_NE(cu->source.find("extern \"C\" __global__ void k("), std::string::npos) << cu->source;
  EXPECT_NE(cu->source.find("__syncthreads()"), std::string::npos);
  EXPECT_EQ(cu->source.find("__global float"), std::string::npos);
}

}  // namespace
}  // namespace gkrt
