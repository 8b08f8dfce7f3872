// The renderer's CUDA dialect compiles: clusters of every kernel shape (elementwise with
// broadcasting, reduce with prologue/epilogue, GEMM + epilogue, Concat/Slice/Pad, bool
// and integer values) rendered for CUDA and compiled with NVRTC. Built where the CUDA
// Toolkit is found; no GPU is needed.
#include <nvrtc.h>

#include <gtest/gtest.h>

#include "backends/codegen/cluster_renderer.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/builder.h"

namespace gkrt {
namespace {

std::string compileCuda(const std::string& source) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "gk.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return "create failed";
  const char* opts[] = {"--std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
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

}  // namespace
}  // namespace gkrt
