// The cuda backend. Everywhere: without a GPU (or driver) it is unavailable with a
// reason, unlisted, and nothing crashes. With a GPU (skipped otherwise, with the
// reason printed): fused clusters and cuBLASLt GEMMs with their epilogues against the
// reference backend, the whole-session CUDA graph against uncaptured runs, the module
// cache (cold, warm, corrupt entry rebuilt), fallback to cpu, and device errors.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <cstdlib>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_communicator.h"
#include "runtime/model_io.h"
#include "tests/unit/conv_epilogue_graph.h"
#include "tests/unit/tensor_parallel_mlp.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

#define SKIP_WITHOUT_CUDA()                                                       \
  do {                                                                            \
    auto probe = createBackend("cuda");                                           \
    if (!probe.ok()) GTEST_SKIP() << "no GPU here: " << probe.status().message(); \
  } while (0)

using testing::optLevel;
using testing::randomTensor;

std::vector<HostTensor> runSession(Session& s, const std::vector<HostTensor>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE(s.setInput(s.inputs()[k].name, inputs[k]).ok());
  const Status run = s.run();
  EXPECT_TRUE(run.ok()) << run.toString();
  std::vector<HostTensor> out;
  for (const TensorInfo& o : s.outputs()) out.push_back(*s.output(o.name));
  return out;
}

StatusOr<std::unique_ptr<Session>> cudaSession(const ir::Graph& g, const FusionOptions& fusion, const std::string& cache_dir = "") {
  SessionOptions o;
  o.backend = "cuda";
  o.fusion = fusion;
  o.backend_options.program_cache_dir = cache_dir;
  return Session::create(g, o);
}

void expectMatchesReference(const ir::Graph& g, const std::vector<HostTensor>& inputs, const FusionOptions& fusion,
                            double rtol, const std::string& what) {
  auto want = testing::runGraph(g, inputs, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  auto s = cudaSession(g, fusion);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  for (int run = 0; run < 3; ++run) {  // the third run replays the CUDA graph
    const auto got = runSession(**s, inputs);
    for (size_t k = 0; k < want->size(); ++k) {
      EXPECT_EQ(testing::compareTensors(got[k], (*want)[k], rtol, 1e-5), "") << what << ", run " << run << ", output " << k;
    }
  }
}

TEST(CudaBackend, WithoutAGpuItIsUnavailableWithAReason) {
  auto backend = createBackend("cuda");
  if (backend.ok()) GTEST_SKIP() << "a GPU is present: " << static_cast<CudaBackend*>(backend->get())->device().name;
  EXPECT_EQ(backend.status().message().rfind("cuda: unavailable: ", 0), 0u) << backend.status().message();
  for (const std::string& name : availableBackends()) EXPECT_NE(name, "cuda");
  GraphBuilder b;
  b.output(b.add(b.input("x", DType::kFloat32, {4}), 1.0f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto s = cudaSession(*g, optLevel(2));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cuda: unavailable: "), std::string::npos) << s.status().message();
}

TEST(CudaBackend, FusedClustersMatchReference) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {16, 96});
  Value i = b.input("i", DType::kInt32, {16, 1});
  Value gelu = b.op1("GeLU", {b.add(x, 0.5f)}, GeluAttrs{GeluApprox::kNone});
  Value sm = b.op1("Softmax", {gelu}, AxisAttrs{-1, false});
  Value ln = b.op1("LayerNorm", {sm}, NormAttrs{-1, 1e-5f});
  Value sel = b.op1("Select", {b.op1("Greater", {ln, b.scalar(0.0f, ln)}), ln, b.op1("Cast", {i}, CastAttrs{DType::kFloat32})});
  b.output(b.op1("Transpose", {sel}, PermAttrs{{1, 0}}), "y");
  b.output(b.op1("ReduceMax", {b.op1("Abs", {x})}, AxesAttrs{{0}, false}), "m");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor iv(DType::kInt32, {16, 1});
  for (int k = 0; k < 16; ++k) iv.as<int32_t>()[k] = k - 8;
  const std::vector<HostTensor> inputs = {randomTensor({16, 96}, 3), iv};
  for (int level : {0, 2, 3}) expectMatchesReference(*g, inputs, optLevel(level), 1e-4, "opt_level " + std::to_string(level));
}

TEST(CudaBackend, SeedNetworkMyOpIsOneKernel) {
  SKIP_WITHOUT_CUDA();
  auto g = loadModelFile(std::string(GKRT_EXAMPLES_DIR) + "/mynet_myop.gkm");
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto s = cudaSession(*g, optLevel(2));
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ((*s)->kernelCount(), 1u);
  const std::vector<HostTensor> in = {HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.5f)),
                                      HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.25f))};
  auto want = testing::runGraph(*g, in, "reference", optLevel(0));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(testing::compareTensors(runSession(**s, in)[0], (*want)[0], 1e-6, 1e-7), "");
}

// MatMul / BatchMatMul / Gemm and the matmul_elem pattern ops through cuBLASLt epilogues.
TEST(CudaBackend, CublasLtGemmsAndEpiloguesMatchReference) {
  SKIP_WITHOUT_CUDA();
  struct Case { const char* op; Shape a, b; bool ta, tb; bool erf = false; };
  for (const Case& c : std::vector<Case>{{"MatMul", {37, 20}, {20, 45}, false, false},
                                         {"MatMul", {20, 37}, {45, 20}, true, true},
                                         {"BatchMatMul", {2, 3, 17, 9}, {1, 1, 9, 33}, false, false},
                                         {"BatchMatMul", {2, 3, 17, 9}, {2, 3, 33, 9}, false, true},
                                         {"MatMulBiasAdd", {2, 8, 64}, {64, 48}, false, false},
                                         {"MatMulRelu", {8, 64}, {48, 64}, false, true},
                                         {"MatMulGelu", {8, 64}, {64, 48}, false, false},
                                         {"MatMulGelu", {2, 8, 64}, {64, 48}, false, false, true},  // + the erf kernel
                                         {"MatMulAllReduce", {2, 8, 64}, {64, 48}, false, false},    // one rank
                                         {"MatMulAdd", {8, 64}, {64, 48}, false, false}}) {
    GraphBuilder b;
    Value a = b.input("a", DType::kFloat32, c.a);
    const HostTensor wt = randomTensor(c.b, 12);
    const int64_t n = c.tb ? c.b[c.b.size() - 2] : c.b.back();
    const int64_t m = c.ta ? c.a.back() : c.a[c.a.size() - 2];
    const HostTensor bias = randomTensor({n}, 13);
    Value w = b.constant("w", DType::kFloat32, c.b, wt.data());
    Value bv = b.constant("bias", DType::kFloat32, {n}, bias.data());
    const std::string op = c.op;
    Value y;
    if (op == "MatMul" || op == "BatchMatMul") y = b.op1(op, {a, w}, MatMulAttrs{c.ta, c.tb});
    else if (op == "MatMulGelu") y = b.op1(op, {a, w, bv}, GeluAttrs{c.erf ? GeluApprox::kNone : GeluApprox::kTanh});
    else if (op == "MatMulAdd") y = b.op1(op, {a, w, b.input("c", DType::kFloat32, {m, n}), bv}, MatMulAttrs{c.ta, c.tb});
    else y = b.op1(op, {a, w, bv}, MatMulAttrs{c.ta, c.tb});
    b.output(y, "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << op << ": " << g.status().toString();
    std::vector<HostTensor> inputs;
    inputs.reserve(2);
    inputs.push_back(randomTensor(c.a, 14));
    if (op == "MatMulAdd") inputs.push_back(randomTensor({m, n}, 15));
    auto s = cudaSession(*g, optLevel(0));
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ((*s)->kernelInfos()[0].backend, "cuda") << op << " fell back";
    expectMatchesReference(*g, inputs, optLevel(0), 1e-4, op + " " + shapeToString(c.a) + " x " + shapeToString(c.b));
  }
  GraphBuilder b;  // Gemm: alpha, beta and a full C; and a row-bias C
  Value a = b.input("a", DType::kFloat32, {12, 30});
  Value w = b.input("w", DType::kFloat32, {30, 20});
  b.output(b.op1("Gemm", {a, w, b.input("c", DType::kFloat32, {12, 20})}, GemmAttrs{0.5f, 2.0f, false, false}), "full");
  b.output(b.op1("Gemm", {a, w, b.input("r", DType::kFloat32, {20})}, GemmAttrs{1.5f, 1.0f, false, false}), "row");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  expectMatchesReference(*g, {randomTensor({12, 30}, 1), randomTensor({30, 20}, 2), randomTensor({12, 20}, 3), randomTensor({20}, 4)},
                         optLevel(0), 1e-4, "Gemm");
}

// The third and later runs replay one CUDA graph; they agree with a session that never captures.
TEST(CudaBackend, CudaGraphReplayAgreesWithUncapturedRuns) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 64});
  const HostTensor wt = randomTensor({64, 64}, 5);
  Value h = b.op1("MatMul", {x, b.constant("w", DType::kFloat32, {64, 64}, wt.data())}, MatMulAttrs{});
  Value e = b.op1("Exp", {b.sub(h, b.op1("ReduceMax", {h}, AxesAttrs{{1}, true}))});
  b.output(b.op1("RealDiv", {e, b.op1("ReduceSum", {e}, AxesAttrs{{1}, true})}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto captured = cudaSession(*g, optLevel(2));
  ASSERT_TRUE(captured.ok()) << captured.status().toString();
  setenv("GKRT_CUDA_GRAPHS", "0", 1);
  auto plain = cudaSession(*g, optLevel(2));
  unsetenv("GKRT_CUDA_GRAPHS");
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  for (uint32_t run = 0; run < 5; ++run) {  // new inputs every run: the replay reads them
    const HostTensor in = randomTensor({8, 64}, 100 + run);
    const auto want = runSession(**plain, {in});
    const auto got = runSession(**captured, {in});
    EXPECT_EQ(testing::compareTensors(got[0], want[0], 0, 0), "") << "run " << run;
  }
}

TEST(CudaBackend, SecondStartLoadsTheCachedModuleAndCorruptEntriesAreRebuilt) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {16, 32});
  Value gelu = b.op1("GeLU", {b.add(x, 0.5f)}, GeluAttrs{GeluApprox::kNone});
  b.output(b.op1("ReduceSum", {b.mul(gelu, gelu)}, AxesAttrs{{1}, true}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  const std::string dir = (std::filesystem::temp_directory_path() / ("gkrt_cuda_cache" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  BackendOptions opts;
  opts.program_cache_dir = dir;
  std::vector<std::string> sources;
  for (int start = 0; start < 3; ++start) {
    if (start == 2) {  // flip a byte in the middle of the stored module
      const auto entry = std::filesystem::directory_iterator(dir)->path();
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      const auto mid = static_cast<std::streamoff>(std::filesystem::file_size(entry) / 2);
      char c = 0;
      f.seekg(mid);
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x5a);
      f.seekp(mid);
      f.write(&c, 1);
    }
    auto be = CudaBackend::create(opts);
    ASSERT_TRUE(be.ok()) << be.status().toString();
    auto* cu = static_cast<CudaBackend*>(be->get());
    ir::Graph fused = ir::cloneGraph(*g);
    ASSERT_TRUE(ir::inferShapes(fused).ok());
    std::vector<std::unique_ptr<Kernel>> kernels;
    for (const ir::Node& n : fused.nodes) {
      if (!cu->supports(fused, n)) continue;
      auto k = cu->compile(fused, n);
      ASSERT_TRUE(k.ok()) << k.status().toString();
      kernels.push_back(std::move(*k));
    }
    ASSERT_TRUE(cu->finishCompile().ok());
    sources.push_back(cu->lastProgramSource());
  }
  EXPECT_EQ(sources, (std::vector<std::string>{"compiled", "cache", "compiled"}));
  std::filesystem::remove_all(dir);
}

TEST(CudaBackend, UnsupportedNodesFallBackToCpuWithCopies) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 3, 12, 12});
  const HostTensor wt = randomTensor({4, 3, 3, 3}, 7);
  Conv2DAttrs ca;
  ca.pads = {1, 0, 0, 1};  // asymmetric: cuDNN pads both sides alike, so cuda declines it
  Value y = b.op1("Conv2D", {x, b.constant("w", DType::kFloat32, {4, 3, 3, 3}, wt.data())}, ca);
  b.output(b.op1("Exp", {b.mul(y, 0.1f)}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto s = cudaSession(*g, optLevel(2));
  ASSERT_TRUE(s.ok()) << s.status().toString();
  std::vector<std::string> backends;
  for (const auto& k : (*s)->kernelInfos()) backends.push_back(k.backend);
  EXPECT_EQ(backends, (std::vector<std::string>{"cpu", "cuda"}));
  expectMatchesReference(*g, {randomTensor({1, 3, 12, 12}, 8)}, optLevel(2), 1e-4, "asymmetric Conv2D on cpu, Exp on cuda");
}

// Conv2D through cuDNN: bias or not, stride, dilation, groups (depthwise too), float32 math.
TEST(CudaBackend, CudnnConvolutionsMatchReference) {
  SKIP_WITHOUT_CUDA();
  struct Case { Shape x, w; int64_t stride, dilation, groups, pad; bool bias; };
  for (const Case& c : std::vector<Case>{{{1, 3, 17, 15}, {8, 3, 3, 3}, 1, 1, 1, 1, true},
                                         {{2, 16, 20, 20}, {32, 16, 1, 1}, 1, 1, 1, 0, false},
                                         {{1, 8, 21, 19}, {12, 8, 5, 3}, 2, 1, 1, 2, true},
                                         {{1, 8, 16, 16}, {8, 4, 3, 3}, 1, 2, 2, 2, true},
                                         {{1, 24, 14, 14}, {24, 1, 3, 3}, 2, 1, 24, 1, true}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, c.x);
    const HostTensor wt = randomTensor(c.w, 21), bias = randomTensor({c.w[0]}, 22);
    Conv2DAttrs a;
    a.strides = {c.stride, c.stride};
    a.dilations = {c.dilation, c.dilation};
    a.pads = {c.pad, c.pad, c.pad, c.pad};
    a.groups = c.groups;
    std::vector<Value> ins = {x, b.constant("w", DType::kFloat32, c.w, wt.data())};
    if (c.bias) ins.push_back(b.constant("b", DType::kFloat32, {c.w[0]}, bias.data()));
    b.output(b.op1("Conv2D", ins, a), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::string what = "Conv2D " + shapeToString(c.x) + " * " + shapeToString(c.w) + " groups " + std::to_string(c.groups);
    for (const char* mode : {"cudnn", "gemm"}) {  // cuDNN, and the GEMM form (grouped ones stay on cuDNN)
      setenv("GKRT_CUDA_CONV", mode, 1);
      auto s = cudaSession(*g, optLevel(0));
      ASSERT_TRUE(s.ok()) << s.status().toString();
      EXPECT_EQ((*s)->kernelInfos()[0].backend, "cuda") << what << " fell back";
      const bool gemm = (*s)->kernelInfos()[0].detail.find("GEMM") != std::string::npos;
      EXPECT_EQ(gemm, std::string(mode) == "gemm" && c.groups == 1) << what << ": " << (*s)->kernelInfos()[0].detail;
      expectMatchesReference(*g, {randomTensor(c.x, 23)}, optLevel(0), 1e-4, what + " (" + mode + ")");
    }
    unsetenv("GKRT_CUDA_CONV");
  }
}

// Convolution epilogues: ReLU(conv + bias [+ residual]) in cuDNN's fused call (a zero
// bias where the convolution has none), HSwish and a bare residual Add as a generated
// kernel over the convolution's output; equal to the reference, CUDA graph replay too.
TEST(CudaBackend, ConvolutionEpiloguesMatchReference) {
  SKIP_WITHOUT_CUDA();
  auto g = testing::convEpilogueGraph();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  setenv("GKRT_CUDA_CONV", "cudnn", 1);  // cuDNN's paths (the GEMM form: ConvolutionsAsGemmsMatchReference)
  auto s = cudaSession(*g, optLevel(2));
  unsetenv("GKRT_CUDA_CONV");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ((*s)->kernelCount(), 6u);
  const HostTensor x = randomTensor({1, 8, 10, 10}, 31);
  runSession(**s, {x});  // the details say which path the first launch took
  int in_call = 0, after = 0;
  std::string details;
  for (const auto& k : (*s)->kernelInfos()) {
    EXPECT_EQ(k.backend, "cuda") << k.name;
    in_call += k.detail.find("in the call") != std::string::npos;
    after += k.detail.find("over its output") != std::string::npos;
    details += k.name + " [" + k.detail + "]\n";
  }
  EXPECT_EQ(in_call, 3) << details;
  EXPECT_EQ(after, 2) << details;
  expectMatchesReference(*g, {x}, optLevel(2), 1e-4, "convolution epilogues");
  expectMatchesReference(*g, {x}, *parseFusionFlags("--disable_cluster_ops=Conv2D"), 1e-4, "without the Conv2D row");
}

// Convolutions as GEMMs (GKRT_CUDA_CONV=gemm: im2col, cuBLASLt, the epilogue kernel):
// the epilogue graph, and strided, dilated and batched convolutions with a 1x1 one that
// is not the direct form, against the reference; auto mode (the default) matches too.
TEST(CudaBackend, ConvolutionsAsGemmsMatchReference) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  auto constant = [&b](const Shape& s, float scale) {
    std::vector<float> v(static_cast<size_t>(numElements(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(int((i * 2654435761u) >> 24 & 255) - 128) / 128.0f;
    return b.constant(s, v);
  };
  auto conv = [&](Value x, int64_t c, int64_t k, int64_t ks, int64_t stride, int64_t dil, int64_t pad) {
    Conv2DAttrs a;
    a.strides = {stride, stride};
    a.dilations = {dil, dil};
    a.pads = {pad, pad, pad, pad};
    return b.op1("Conv2D", {x, constant({k, c, ks, ks}, 0.1f), constant({k}, 0.5f)}, a);
  };
  Value x = b.input("x", DType::kFloat32, {2, 3, 17, 15});
  Value y = b.relu(conv(x, 3, 16, 5, 2, 1, 2));      // [2, 16, 9, 8]
  y = b.relu(b.add(conv(y, 16, 16, 3, 1, 2, 2), y));  // dilated, residual + ReLU
  b.output(conv(y, 16, 8, 1, 2, 1, 0), "y");          // 1x1 with stride 2: still an im2col
  auto strided = b.finish();
  ASSERT_TRUE(strided.ok()) << strided.status().toString();
  auto epilogues = testing::convEpilogueGraph();
  ASSERT_TRUE(epilogues.ok()) << epilogues.status().toString();
  const HostTensor xs = randomTensor({2, 3, 17, 15}, 5), xe = randomTensor({1, 8, 10, 10}, 31);
  for (const char* mode : {"gemm", "auto"}) {
    setenv("GKRT_CUDA_CONV", mode, 1);
    for (const char* flags : {"--opt_level=2", "--disable_cluster_ops=Conv2D"}) {
      auto s = cudaSession(*strided, *parseFusionFlags(flags));
      ASSERT_TRUE(s.ok()) << s.status().toString();
      runSession(**s, {xs});
      int gemms = 0;
      for (const auto& k : (*s)->kernelInfos()) gemms += k.detail.find("GEMM") != std::string::npos;
      if (std::string(mode) == "gemm") {
        EXPECT_EQ(gemms, 3) << flags;
      }
      expectMatchesReference(*strided, {xs}, *parseFusionFlags(flags), 1e-4, std::string(mode) + " strided " + flags);
      expectMatchesReference(*epilogues, {xe}, *parseFusionFlags(flags), 1e-4, std::string(mode) + " epilogues " + flags);
    }
  }
  setenv("GKRT_CUDA_CONV", "im2row", 1);
  auto bad = cudaSession(*strided, optLevel(2));
  unsetenv("GKRT_CUDA_CONV");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GKRT_CUDA_CONV=im2row"), std::string::npos) << bad.status().message();
}

// Ranks on GPUs through NCCL: a device communicator of one rank (one GPU here); the
// AllReduce and MatMulAllReduce of the tensor-parallel MLP run on the cuda backend as
// ncclAllReduce on its stream and equal the reference, CUDA graph replay included.
TEST(CudaBackend, NcclCommunicatorSumsOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  auto id = cuda::NcclCommunicator::uniqueId();
  if (!id.ok()) GTEST_SKIP() << id.status().message();
  auto probe = createBackend("cuda");  // makes the device current on this thread for NCCL
  ASSERT_TRUE(probe.ok());
  auto comm = cuda::NcclCommunicator::create(0, 1, *id);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  const testing::Weights w = testing::makeWeights();
  const HostTensor x = randomTensor({testing::kRows, testing::kIn}, 9);
  auto want = testing::runGraph(testing::rankGraph(w, -1, 1), {x}, "reference", optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (const char* flags : {"--opt_level=0", "--enable_pass=MatMulAllReduce"}) {
    SessionOptions o;
    o.backend = "cuda";
    o.fusion = *parseFusionFlags(flags);
    o.backend_options.communicator = *comm;
    auto s = Session::create(testing::rankGraph(w, 0, 1), o);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    int nccl = 0;
    std::string details;
    for (const auto& k : (*s)->kernelInfos()) {
      nccl += k.backend == "cuda" && k.detail.find("NCCL AllReduce") != std::string::npos;
      details += k.name + " [" + k.backend + ": " + k.detail + "]\n";
    }
    EXPECT_EQ(nccl, 1) << flags << "\n" << details;
    for (int run = 0; run < 3; ++run) {
      const auto got = runSession(**s, {x});
      EXPECT_EQ(testing::compareTensors(got[0], (*want)[0], 1e-5, 1e-6), "") << flags << ", run " << run;
    }
  }
}

// The hand-written kernels: pooling with ceil_mode and asymmetric pads, GlobalAvgPool, Gather.
TEST(CudaBackend, LibraryKernelsMatchReference) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 3, 11, 13});
  PoolAttrs mp;
  mp.kernel = {3, 3}, mp.strides = {2, 2}, mp.pads = {1, 0, 0, 1}, mp.ceil_mode = true;
  b.output(b.op1("MaxPool", {x}, mp), "max");
  PoolAttrs ap = mp;
  ap.count_include_pad = true;
  b.output(b.op1("AvgPool", {x}, ap), "avg_pad");
  ap.count_include_pad = false;
  b.output(b.op1("AvgPool", {x}, ap), "avg");
  b.output(b.op1("GlobalAvgPool", {x}), "gap");
  Value table = b.input("table", DType::kFloat32, {10, 7});
  Value ids = b.input("ids", DType::kInt64, {2, 4});
  b.output(b.op1("Gather", {table, ids}, AxisAttrs{0, false}), "rows");
  b.output(b.op1("Gather", {table, b.input("cols", DType::kInt32, {3})}, AxisAttrs{1, false}), "cols");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  HostTensor id(DType::kInt64, {2, 4}), col(DType::kInt32, {3});
  const int64_t id_values[] = {0, 9, -1, 3, -10, 4, 4, 2};
  const int32_t col_values[] = {6, -7, 2};
  std::copy(std::begin(id_values), std::end(id_values), static_cast<int64_t*>(id.data()));
  std::copy(std::begin(col_values), std::end(col_values), static_cast<int32_t*>(col.data()));
  auto s = cudaSession(*g, optLevel(0));
  ASSERT_TRUE(s.ok()) << s.status().toString();
  for (const auto& k : (*s)->kernelInfos()) EXPECT_EQ(k.backend, "cuda") << k.name << " fell back";
  expectMatchesReference(*g, {randomTensor({2, 3, 11, 13}, 31), randomTensor({10, 7}, 32), id, col}, optLevel(0), 1e-5,
                         "pooling and Gather");
}

// An index out of range is found on the device, reported when the run ends, and the
// next run with good indices succeeds.
TEST(CudaBackend, GatherIndexOutOfRangeIsAnError) {
  SKIP_WITHOUT_CUDA();
  GraphBuilder b;
  b.output(b.op1("Gather", {b.input("table", DType::kFloat32, {10, 4}), b.input("ids", DType::kInt64, {3})}, AxisAttrs{0, false}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto s = cudaSession(*g, optLevel(0));
  ASSERT_TRUE(s.ok()) << s.status().toString();
  HostTensor ids(DType::kInt64, {3});
  int64_t* p = static_cast<int64_t*>(ids.data());
  p[0] = 1, p[1] = 10, p[2] = 2;
  ASSERT_TRUE((*s)->setInput("table", randomTensor({10, 4}, 41)).ok());
  ASSERT_TRUE((*s)->setInput("ids", ids).ok());
  Status run = (*s)->run();
  ASSERT_FALSE(run.ok()) << "an out-of-range index ran";
  EXPECT_NE(run.message().find("index 10 at position 1 is out of range"), std::string::npos) << run.message();
  EXPECT_NE(run.message().find("Gather"), std::string::npos) << run.message();
  p[1] = -10;
  ASSERT_TRUE((*s)->setInput("ids", ids).ok());
  run = (*s)->run();
  EXPECT_TRUE(run.ok()) << run.toString();
}

TEST(CudaBackend, UnknownDeviceIsAClearError) {
  SKIP_WITHOUT_CUDA();
  BackendOptions o;
  o.device = "77";
  auto be = createBackend("cuda", o);
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("device 77 does not exist"), std::string::npos) << be.status().message();
  o.device = "gpu0";
  be = createBackend("cuda", o);
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("not a device index"), std::string::npos) << be.status().message();
}

}  // namespace
}  // namespace gkrt
