// The renderer's CUDA dialect compiles: clusters of every kernel shape (elementwise with
// broadcasting, reduce with prologue/epilogue, GEMM + epilogue, Concat/Slice/Pad, bool
// and integer values) rendered for CUDA and compiled with NVRTC. Built where the CUDA
// Toolkit is found; no GPU is needed.
#include <nvrtc.h>

#include <gtest/gtest.h>

#include <functional>

#include "backends/codegen/cluster_renderer.h"
#include "backends/codegen/movement_kernels.h"
#include "backends/codegen/pattern_kernels.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/cuda_library_kernels.h"
#include "backends/conv_epilogue.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/nccl_communicator.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/builder.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/conv_epilogue_graph.h"
#include "tests/unit/eight_bit_graph.h"

namespace gkrt {
namespace {

std::string compileCuda(const std::string& source, const char* arch = "--gpu-architecture=compute_80") {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "gk.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return "create failed";
  const char* opts[] = {"--std=c++17", arch};
  const nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
  std::string log;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    log.resize(n);
    nvrtcGetProgramLog(prog, log.data());
    log = std::string(nvrtcGetErrorString(r)) + ": " + log;
  }
  nvrtcDestroyProgram(&prog);
  return log;
}

// `source` (a kernel in the CUDA dialect) compiles for sm_80 and sm_90.
void expectCompilesForSm80And90(const std::string& source) {
  for (const char* arch : {"--gpu-architecture=compute_80", "--gpu-architecture=compute_90"}) {
    EXPECT_EQ(compileCuda(std::string(codegen::cudaDialect().preamble) + source, arch), "") << arch << "\n" << source;
  }
}

// Renders every node of `g` with `render` (kernel names gk0, gk1, ...) and compiles each
// for sm_80 and sm_90; returns how many rendered (a render failure fails the test).
int compileEveryNode(const ir::Graph& g,
                     const std::function<StatusOr<codegen::RenderedKernel>(const ir::Node&, const std::string&)>& render) {
  int rendered = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    auto k = render(g.nodes[n], "gk" + std::to_string(n));
    EXPECT_TRUE(k.ok()) << g.nodes[n].op->name << ": " << k.status().message();
    if (!k.ok()) continue;
    ++rendered;
    expectCompilesForSm80And90(k->source);
  }
  return rendered;
}

TEST(CudaDialect, RenderedClustersCompileWithNvrtc) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 48});
  Value w = b.input("w", DType::kFloat32, {48, 40});
  Value i = b.input("i", DType::kInt32, {8, 1});
  Value h = b.op1("GeLU", {b.add(b.op1("MatMul", {x, w}, MatMulAttrs{false, false}), 0.5f)}, GeluAttrs{GeluApprox::kTanh});
  Value sm = b.op1("Softmax", {h}, AxisAttrs{-1, false});
  Value ln = b.op1("LayerNorm", {sm}, NormAttrs{-1, 1e-5f});
  Value big = b.op1("Greater", {ln, b.scalar(0.0f, ln)});
  Value sel = b.op1("Select", {big, ln, b.op1("Cast", {i}, CastAttrs{DType::kFloat32})});
  PadAttrs pa;
  pa.pads = {0, 1, 0, 1};
  Value cat = b.op1("Concat", {b.op1("Pad", {sel}, pa), b.op1("Exp", {x})}, AxisAttrs{1, false});
  b.output(b.op1("Transpose", {cat}, PermAttrs{{1, 0}}), "y");
  b.output(b.op1("ReduceMax", {b.op1("Abs", {x})}, AxesAttrs{{0}, false}), "m");
  b.output(b.op1("Maximum", {b.mul(i, b.op1("Neg", {i})), i}), "k");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto fo = parseFusionFlags("--enable_cluster_ops=MatMul");
  ASSERT_TRUE(fo.ok());
  auto report = runFusionPipeline(*g, *fo, FusionColumn::kGpu, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  const codegen::KernelDialect& d = codegen::cudaDialect();
  int rendered = 0, reduce = 0, gemm = 0;
  for (size_t n = 0; n < g->nodes.size(); ++n) {
    auto k = codegen::renderCluster(*g, g->nodes[n], "gk" + std::to_string(n), d);
    if (!k.ok()) continue;  // e.g. float-to-int Cast: OpenCL only for now
    ++rendered;
    reduce += k->reduce;
    gemm += k->gemm;
    EXPECT_EQ(compileCuda(std::string(d.preamble) + k->source), "") << k->source;
  }
  EXPECT_GE(rendered, 4);
  EXPECT_GE(reduce, 1);
  EXPECT_EQ(gemm, 1);
}

// 8-bit values (int8/uint8 gathered, compared, selected, cast) render in the CUDA dialect
// for every cluster of the gpu column's graph and compile; OpenClBackend.EightBitValues-
// RunOnOpenCl runs the OpenCL twin against the reference.
TEST(CudaDialect, EightBitValuesRenderAndCompile) {
  auto g = testing::eightBitValuesGraph();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto report = runFusionPipeline(*g, *parseFusionFlags("--opt_level=2"), FusionColumn::kGpu, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  int clusters = 0;
  for (size_t n = 0; n < g->nodes.size(); ++n) {
    if (std::string(g->nodes[n].op->name) == "Gather") {
      auto k = codegen::renderGatherKernel(*g, g->nodes[n], "gk" + std::to_string(n), codegen::cudaDialect(), 0);
      ASSERT_TRUE(k.ok()) << k.status().message();
      expectCompilesForSm80And90(k->source);
      continue;
    }
    auto k = codegen::renderCluster(*g, g->nodes[n], "gk" + std::to_string(n), codegen::cudaDialect());
    ASSERT_TRUE(k.ok()) << g->nodes[n].op->name << ": " << k.status().message();
    ++clusters;
    expectCompilesForSm80And90(k->source);
  }
  EXPECT_GE(clusters, 2);
}

// The pattern kernels (AddLayerNorm/AddRmsNorm with and without gamma/beta, SwiGLU,
// RmsNormQuant/AddRmsNormQuant to int8 and uint8, MatMulSplit in three, QuantBatchMatMul, FlashAttention in
// each layout, masked, K transposed, head dims up to 256) in the CUDA
// dialect compile for sm_80 and sm_90; their OpenCL twins run in the opencl tests.
TEST(CudaDialect, PatternKernelsCompileWithNvrtc) {
  GraphBuilder b;
  Value x1 = b.input("x1", DType::kFloat32, {4, 7, 384});
  Value x2 = b.input("x2", DType::kFloat32, {4, 7, 384});
  Value gamma = b.input("gamma", DType::kFloat32, {384});
  Value beta = b.input("beta", DType::kFloat32, {384});
  int id = 0;
  for (Value y : {b.op("AddLayerNorm", {x1, x2, gamma, beta}, NormAttrs{-1, 1e-5f})[0],
                  b.op("AddLayerNorm", {x1, x2}, NormAttrs{1, 1e-6f})[0],
                  b.op("AddRmsNorm", {x1, x2, gamma}, NormAttrs{-1, 1e-6f})[0],
                  b.op1("SwiGLU", {x1}, AxisAttrs{-1, false})}) {
    b.output(y, "y" + std::to_string(id++));
  }
  const float scale = 0.05f;
  const int8_t zp_s = -3;
  const uint8_t zp_u = 128;
  Value sc = b.constant("scale", DType::kFloat32, {}, &scale);
  b.output(b.op("RmsNormQuant", {x1, gamma, sc, b.constant("zps", DType::kInt8, {}, &zp_s), beta}, NormAttrs{-1, 1e-6f})[0], "q0");
  auto aq = b.op("AddRmsNormQuant", {x1, x2, gamma, sc, b.constant("zpu", DType::kUInt8, {}, &zp_u)}, NormAttrs{-1, 1e-6f}, 2);
  b.output(aq[0], "q1");
  b.output(aq[1], "q1sum");
  auto parts = b.op("MatMulSplit", {x1, b.input("w", DType::kFloat32, {384, 96}), b.input("wb", DType::kFloat32, {96})},
                    SplitAttrs{-1, {32, 32, 32}}, 3);
  for (size_t p = 0; p < parts.size(); ++p) b.output(parts[p], "part" + std::to_string(p));
  std::vector<int8_t> wq(384 * 40, 3);
  std::vector<int32_t> bq(40, -7);
  std::vector<float> wsq(40, 0.01f);
  b.output(b.op1("QuantBatchMatMul", {b.input("aq", DType::kUInt8, {4, 7, 384}), sc, b.constant("zpa", DType::kUInt8, {}, &zp_u),
                                      b.constant("wq", DType::kInt8, {384, 40}, wq.data()),
                                      b.constant("wsq", DType::kFloat32, {40}, wsq.data()),
                                      b.constant("zpw", DType::kInt8, {}, &zp_s), b.constant("bq", DType::kInt32, {40}, bq.data())}),
           "qmm");
  struct Attention { AttentionLayout layout; bool transposed, mask; int64_t s, d, dv; };
  for (const Attention& a : {Attention{AttentionLayout::kBNSD, false, true, 128, 64, 64},
                             Attention{AttentionLayout::kBNSD, true, false, 33, 8, 5},
                             Attention{AttentionLayout::kBSND, false, true, 9, 256, 256},
                             Attention{AttentionLayout::kBSH, false, false, 128, 32, 32}}) {
    AttentionAttrs at;
    at.layout = a.layout, at.key_transposed = a.transposed, at.scale = 0.125f;
    at.heads = a.layout == AttentionLayout::kBSH ? 4 : 0;
    auto shape = [&](int64_t dd, bool t) {
      if (a.layout == AttentionLayout::kBSH) return Shape{2, a.s, 4 * dd};
      if (a.layout == AttentionLayout::kBSND) return Shape{2, a.s, 4, dd};
      return t ? Shape{2, 4, dd, a.s} : Shape{2, 4, a.s, dd};
    };
    const std::string n = std::to_string(id++);
    std::vector<Value> in = {b.input("q" + n, DType::kFloat32, shape(a.d, false)),
                             b.input("k" + n, DType::kFloat32, shape(a.d, a.transposed)),
                             b.input("v" + n, DType::kFloat32, shape(a.dv, false))};
    if (a.mask) in.push_back(b.input("m" + n, DType::kFloat32, {2, 1, a.s, a.s}));
    b.output(b.op("FlashAttention", in, at)[0], "y" + n);
  }
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(compileEveryNode(*g, [&](const ir::Node& node, const std::string& name) {
              return codegen::renderPatternKernel(*g, node, name, codegen::cudaDialect());
            }), 12);
}

// The decoder-LLM kernels (llm_kernels.h: RmsNorm with its rstd output, Rotary with half
// and full angles, CachedAttention at SmolLM2's shape for decode and prefill and with an
// int32 past and a head dim past local memory, BlockQuantMatMul of every value layout and
// precision) and an int64 ReduceSum cluster in the CUDA dialect compile for sm_80 and
// sm_90; their OpenCL twins run in LlmGpuKernels.*.
TEST(CudaDialect, LlmKernelsCompileWithNvrtc) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 5, 576});
  auto norm = b.op("RmsNorm", {x, b.input("gamma", DType::kFloat32, {576})}, NormAttrs{-1, 1e-5f}, 2);
  b.output(norm[0], "n0");
  b.output(norm[1], "n1");
  Value xr = b.input("xr", DType::kFloat32, {1, 9, 5, 64});
  b.output(b.op1("Rotary", {xr, b.input("ch", DType::kFloat32, {1, 1, 5, 32}), b.input("sh", DType::kFloat32, {1, 1, 5, 32})}), "r0");
  b.output(b.op1("Rotary", {xr, b.input("cf", DType::kFloat32, {5, 64}), b.input("sf", DType::kFloat32, {5, 64})}), "r1");
  struct Attention { int64_t s, d; DType past; };
  int id = 0;
  for (const Attention& a : {Attention{1, 64, DType::kInt64}, Attention{5, 64, DType::kInt64}, Attention{3, 256, DType::kInt32}}) {
    const std::string n = std::to_string(id++);
    AttentionAttrs at;
    std::vector<Value> in = {b.input("q" + n, DType::kFloat32, {1, 9, a.s, a.d}), b.input("k" + n, DType::kFloat32, {1, 3, a.s, a.d}),
                             b.input("v" + n, DType::kFloat32, {1, 3, a.s, a.d}), b.input("ck" + n, DType::kFloat32, {1, 3, 512, a.d}),
                             b.input("cv" + n, DType::kFloat32, {1, 3, 512, a.d}), b.input("p" + n, a.past, {1})};
    b.output(b.op("CachedAttention", in, at)[0], "a" + n);
  }
  struct Quant { DType to, precision; int64_t k; bool offsets; };
  for (const Quant& q : {Quant{DType::kInt4, DType::kInt8, 576, false}, Quant{DType::kUInt4, DType::kFloat32, 80, true},
                         Quant{DType::kInt8, DType::kFloat32, 1536, false}, Quant{DType::kInt4, DType::kFloat32, 9000, false}}) {
    const std::string n = std::to_string(id++);
    const int64_t blocks = (q.k + 31) / 32;
    QuantAttrs qa;
    qa.block_size = 32, qa.to = q.to, qa.precision = q.precision;
    std::vector<Value> in = {b.input("bx" + n, DType::kFloat32, {1, 5, q.k}),
                             b.input("bw" + n, q.to == DType::kInt8 ? DType::kInt8 : DType::kUInt8,
                                     {40, blocks, q.to == DType::kInt8 ? 32 : 16}),
                             b.input("bs" + n, DType::kFloat32, {40, blocks})};
    in.push_back(q.offsets ? b.input("bo" + n, DType::kFloat32, {40, blocks}) : Value{});
    in.push_back(b.input("bb" + n, DType::kFloat32, {40}));
    b.output(b.op1("BlockQuantMatMul", in, qa), "q" + n);
  }
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(compileEveryNode(*g, [&](const ir::Node& node, const std::string& name) {
              return codegen::renderPatternKernel(*g, node, name, codegen::cudaDialect());
            }), 10);
  GraphBuilder r;
  r.output(r.op1("ReduceSum", {r.input("mask", DType::kInt64, {1, 300})}, AxesAttrs{{1}, false}), "len");
  auto rg = r.finish();
  ASSERT_TRUE(rg.ok()) << rg.status().toString();
  EXPECT_EQ(compileEveryNode(*rg, [&](const ir::Node& node, const std::string& name) {
              return codegen::renderCluster(*rg, node, name, codegen::cudaDialect());
            }), 1);
}

// Split, Resize, Gather, Tile, BroadcastTo, reflect/edge Pad, ArgMax/ArgMin and
// CumSum (movement_kernels.h) in the CUDA dialect: every element size,
// every Resize mode; and GlobalAvgPool through the cluster renderer.
TEST(CudaDialect, MovementKernelsCompileWithNvrtc) {
  GraphBuilder b;
  for (DType t : {DType::kFloat32, DType::kUInt8, DType::kFloat16, DType::kInt64}) {
    auto parts = b.op("Split", {b.input(std::string("s") + dtypeName(t), t, {2, 9, 4})}, SplitAttrs{1, {2, 3, 4}}, 3);
    for (size_t p = 0; p < parts.size(); ++p) b.output(parts[p], std::string("p") + dtypeName(t) + std::to_string(p));
  }
  int id = 0;
  for (ResizeMode mode : {ResizeMode::kNearest, ResizeMode::kLinear, ResizeMode::kCubic}) {
    ResizeAttrs a;
    a.mode = mode, a.sizes = {10, 7};
    b.output(b.op1("Resize", {b.input("r" + std::to_string(id), DType::kFloat32, {1, 3, 5, 7})}, a), "ry" + std::to_string(id));
    ++id;
  }
  ResizeAttrs nearest;
  nearest.sizes = {8, 8};
  b.output(b.op1("Resize", {b.input("rq", DType::kUInt8, {1, 3, 4, 4})}, nearest), "rq_y");
  b.output(b.op1("GlobalAvgPool", {b.input("gp", DType::kFloat32, {2, 16, 7, 7})}), "gp_y");
  b.output(b.op1("Gather", {b.input("emb", DType::kFloat32, {100, 16}), b.input("ids", DType::kInt64, {2, 5})}, AxisAttrs{0, false}), "g0");
  b.output(b.op1("Gather", {b.input("g8", DType::kUInt8, {5, 9}), b.input("i32", DType::kInt32, {4})}, AxisAttrs{1, false}), "g1");
  b.output(b.op1("Tile", {b.input("t", DType::kFloat16, {2, 3})}, TileAttrs{{3, 2, 2}}), "tile");
  PadAttrs reflect;
  reflect.pads = {0, 0, 1, 2, 0, 0, 3, 1}, reflect.mode = PadMode::kReflect;
  b.output(b.op1("Pad", {b.input("pr", DType::kFloat32, {1, 2, 4, 5})}, reflect), "reflect");
  PadAttrs edge;
  edge.pads = {0, -1, 3, 2}, edge.mode = PadMode::kEdge;
  b.output(b.op1("Pad", {b.input("pe", DType::kInt64, {4, 5})}, edge), "edge");
  b.output(b.op1("BroadcastTo", {b.input("bt", DType::kUInt8, {4, 1, 5})}, ShapeAttrs{{2, 4, 7, 5}}), "bcast");
  b.output(b.op1("ArgMax", {b.input("am", DType::kFloat32, {1, 21, 6, 7})}, AxisAttrs{1, false}), "argmax");
  auto amv = b.op("ArgMinWithValue", {b.input("amv", DType::kFloat32, {3, 9})}, AxisAttrs{-1, true}, 2);
  b.output(amv[0], "argmin");
  b.output(amv[1], "minval");
  b.output(b.op1("CumSum", {b.input("cs", DType::kInt64, {2, 9})}, CumSumAttrs{-1, true, true}), "cumsum");
  b.output(b.op1("GatherElements", {b.input("ge", DType::kFloat32, {4, 6}), b.input("gei", DType::kInt32, {3, 6})},
                 AxisAttrs{0, false}), "gather_elements");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const codegen::KernelDialect& d = codegen::cudaDialect();
  EXPECT_EQ(compileEveryNode(*g, [&](const ir::Node& node, const std::string& name) {
              const std::string op = node.op->name;
              if (op == "GlobalAvgPool") return codegen::renderCluster(*g, node, name, d);
              if (codegen::usesFaultRecord(node)) return codegen::renderGatherKernel(*g, node, name, d, 3);
              return codegen::renderMovementKernel(*g, node, name, d);
            }), 19);
}

// The matmul pattern ops cuBLASLt runs: MatMulAllReduce of one rank as x @ w + bias (an
// AllReduce alone as a copy), MatMulGelu with GELU's erf form as cuBLASLt's bias epilogue
// and then the renderer's GeLU over the output, whose text compiles.
TEST(CudaDialect, MatMulPatternOpsRunOnCublasLt) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 8, 64});
  Value w = b.input("w", DType::kFloat32, {64, 48});
  Value bias = b.input("bias", DType::kFloat32, {48});
  b.output(b.op1("MatMulAllReduce", {x, w, bias}, MatMulAttrs{}), "ar");
  b.output(b.op1("AllReduce", {x}), "copy");
  b.output(b.op1("MatMulGelu", {x, w, bias}, GeluAttrs{GeluApprox::kNone}), "erf");
  b.output(b.op1("MatMulGelu", {x, w, bias}, GeluAttrs{GeluApprox::kTanh}), "tanh");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const ir::Node &all_reduce = g->nodes[0], &copy = g->nodes[1], &erf = g->nodes[2], &tanh = g->nodes[3];
  auto p = cuda::gemmPlanFor(*g, all_reduce);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bias_input, 2);
  EXPECT_EQ(p->m * p->batch, 16);
  EXPECT_EQ(cuda::cudaKernelKind(*g, all_reduce), cuda::CudaKernelKind::kCublasLt);
  EXPECT_EQ(cuda::cudaKernelKind(*g, copy), cuda::CudaKernelKind::kCopy);
  // across ranks the backend declines both (no device communicator yet)
  EXPECT_EQ(deviceCollectiveRefusal(all_reduce, 1), "");
  EXPECT_NE(deviceCollectiveRefusal(all_reduce, 2).find("MatMulAllReduce across 2 ranks"), std::string::npos);
  EXPECT_NE(deviceCollectiveRefusal(copy, 4), "");
  EXPECT_EQ(deviceCollectiveRefusal(erf, 4), "");
  ASSERT_TRUE(cuda::gemmPlanFor(*g, erf).ok());
  EXPECT_EQ(cuda::gemmPlanFor(*g, erf)->activation, cuda::GemmPlan::Activation::kGeluErf);
  EXPECT_EQ(cuda::gemmPlanFor(*g, erf)->bias_input, 2);
  EXPECT_EQ(cuda::gemmPlanFor(*g, tanh)->activation, cuda::GemmPlan::Activation::kGeluTanh);
  EXPECT_FALSE(cuda::renderErfGeluEpilogue(*g, all_reduce, "gk").ok());  // not a MatMulGelu
  EXPECT_FALSE(cuda::renderErfGeluEpilogue(*g, tanh, "gk").ok());        // cuBLASLt's own epilogue
  auto k = cuda::renderErfGeluEpilogue(*g, erf, "gk_gelu");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->items, 2 * 8 * 48);
  EXPECT_NE(k->source.find("erf"), std::string::npos) << k->source;
  expectCompilesForSm80And90(k->source);
}


// The cuda backend's plan for convolution epilogues, decided without a device: the
// ReLU chains (ReLU expanded to Maximum by the gpu column) go whole into cuDNN's fused
// call, the residual as input 3; HSwish and a bare residual Add keep a generated kernel,
// which renders and compiles.
TEST(CudaDialect, ConvolutionEpiloguePlans) {
  auto g = testing::convEpilogueGraph();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const ir::Graph& graph = *g;
  auto supports = [&graph](const ir::Node& n) { return cuda::cudaKernelKind(graph, n, nullptr, true) != cuda::CudaKernelKind::kNone; };
  auto report = runFusionPipeline(*g, *parseFusionFlags("--opt_level=2"), FusionColumn::kGpu, supports);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  int whole = 0, residual = 0, generated = 0;
  for (const ir::Node& n : g->nodes) {
    if (!isConvEpilogue(n)) continue;
    EXPECT_EQ(cuda::cudaKernelKind(*g, n, nullptr, true), cuda::CudaKernelKind::kCudnnConv) << n.name;
    auto plan = cuda::convEpiloguePlanFor(n);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    if (plan->whole) {
      ++whole;
      EXPECT_TRUE(plan->conv.relu && plan->conv.bias);
      residual += plan->conv.residual && plan->residual_input >= 0;
      continue;
    }
    ++generated;
    auto split = splitConvEpilogue(n);
    ASSERT_TRUE(split.ok()) << split.status().message();
    auto k = codegen::renderCluster(*g, split->rest, "gk" + std::to_string(generated), codegen::cudaDialect());
    ASSERT_TRUE(k.ok()) << k.status().message();
    expectCompilesForSm80And90(k->source);
  }
  EXPECT_EQ(whole, 3);
  EXPECT_EQ(residual, 1);
  EXPECT_EQ(generated, 2);
}


// The GEMM form of a convolution (backends/cuda/conv_gemm.h): its im2col and epilogue
// kernels compile for every plan shape; the direct 1x1 form needs no im2col; a plan with
// nothing after the GEMM has no epilogue; GKRT_CUDA_CONV's bad values are named.
TEST(CudaDialect, ConvolutionGemmKernelsCompile) {
  cuda::ConvPlan p;
  p.n = 2, p.c = 3, p.h = 17, p.w = 15, p.k = 16, p.kh = 5, p.kw = 5, p.oh = 9, p.ow = 8;
  p.pad_h = p.pad_w = 2, p.stride_h = p.stride_w = 2;
  EXPECT_TRUE(cuda::convGemmApplies(p));
  EXPECT_FALSE(cuda::convGemmIsDirect(p));
  const auto im2col = cuda::renderIm2col(p, "gk0");
  EXPECT_EQ(im2col.items, 2 * 3 * 25 * 72);
  expectCompilesForSm80And90(im2col.source);
  EXPECT_FALSE(cuda::renderConvEpilogue(p, "gk1").ok());  // no bias, residual or ReLU
  for (int form = 0; form < 3; ++form) {
    cuda::ConvPlan q = p;
    q.bias = true;
    q.relu = form > 0;
    q.residual = form > 1;
    auto e = cuda::renderConvEpilogue(q, "gk1");
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->items, 2 * 16 * 72);
    expectCompilesForSm80And90(e->source);
  }
  cuda::ConvPlan one;
  one.n = 1, one.c = 64, one.h = one.oh = 7, one.w = one.ow = 7, one.k = 256, one.kh = one.kw = 1;
  EXPECT_TRUE(cuda::convGemmIsDirect(one));
  one.groups = 64;
  EXPECT_FALSE(cuda::convGemmApplies(one));  // grouped: cuDNN's
  auto mode = cuda::convModeOf("fastest");
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.status().message().find("GKRT_CUDA_CONV=fastest"), std::string::npos);
  EXPECT_EQ(*cuda::convModeOf("gemm"), cuda::ConvMode::kGemm);
  EXPECT_EQ(*cuda::convModeOf("cudnn"), cuda::ConvMode::kCudnn);
  EXPECT_EQ(*cuda::convModeOf(nullptr), cuda::ConvMode::kAuto);
  EXPECT_EQ(*cuda::convModeOf("auto"), cuda::ConvMode::kAuto);
}

// NCCL is compiled in wherever the toolkit has nccl.h (the library is opened at run
// time); a rank outside the group is a clear error before NCCL is asked.
TEST(CudaDialect, NcclCommunicatorIsBuiltAndChecksItsRank) {
  EXPECT_TRUE(cuda::NcclCommunicator::built());
  auto bad = cuda::NcclCommunicator::create(2, 2, cuda::NcclId{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank 2 of 2"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace gkrt
