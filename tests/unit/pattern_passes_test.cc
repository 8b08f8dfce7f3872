// The Appendix 3 pattern passes: each rewrites its pattern (kernel and op counts
// asserted), leaves near-misses alone, and the fused graph's outputs match the unfused
// graph's on every backend of this build (tolerance per case, stated below).
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "fusion/graph_text.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::randomTensor;
using testing::optLevel;
using testing::runGraph;

struct Fused {
  ir::Graph graph;
  size_t kernels = 0;
  std::vector<std::string> fired;  // pattern passes that changed the graph
};

// The ascend profile runs every pass (Appendix 3); the cpu profile's defaults are tested
// in SwitchedByEveryNameFormAndProfile.
StatusOr<Fused> fuse(const ir::Graph& g, const std::string& flags, const std::string& backend = "cpu") {
  SessionOptions opts;
  opts.backend = backend;
  const bool profile_given = flags.find("fusion_profile") != std::string::npos;
  ASSIGN_OR_RETURN(opts.fusion, parseFusionFlags(profile_given ? flags : "--fusion_profile=ascend " + flags));
  ASSIGN_OR_RETURN(auto session, Session::create(g, opts));
  Fused f{session->compiledGraph(), session->kernelCount(), {}};
  for (const PassRecord& p : session->fusionReport().passes) {
    if (p.changed && p.name.rfind("fusion_group_", 0) == 0) f.fired.push_back(p.name);
  }
  return f;
}


// Uniform in [-2, 2), in each input's dtype (float32, float16 or float64).
std::vector<HostTensor> randomInputs(const ir::Graph& g, uint32_t seed) {
  std::vector<HostTensor> in;
  for (int t : g.inputs) {
    const ir::Tensor& x = g.tensors[t];
    HostTensor f = randomTensor(x.shape, seed++);
    if (x.dtype == DType::kFloat32) {
      in.push_back(f);
      continue;
    }
    HostTensor typed(x.dtype, x.shape);
    const std::vector<float> v = f.toFloats();
    for (size_t i = 0; i < v.size(); ++i) {
      if (x.dtype == DType::kFloat16) typed.as<uint16_t>()[i] = floatToHalf(v[i]);
      else typed.as<double>()[i] = v[i];
    }
    in.push_back(typed);
  }
  return in;
}

// Outputs with the pattern passes on equal the unfused graph's (reference backend, fusion
// off) within atol + rtol * |want|, on every backend.
void expectSameOutputs(const ir::Graph& g, double rtol, double atol) {
  const std::vector<HostTensor> in = randomInputs(g, 7);
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(g, in, "reference", off);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const std::string& backend : availableBackends()) {
    auto got = runGraph(g, in, backend, *parseFusionFlags("--fusion_profile=ascend"));
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().message();
    for (size_t k = 0; k < want->size(); ++k) {
      EXPECT_EQ(compareTensors((*got)[k], (*want)[k], rtol, atol), "") << backend << " output " << k;
    }
  }
}

Value weights(GraphBuilder& b, const Shape& s, uint32_t seed, float scale = 0.2f) {
  HostTensor t = randomTensor(s, seed);
  std::vector<float> v = t.toFloats();
  for (float& x : v) x *= scale;
  return b.constant(s, v);
}

// ---- attention ----------------------------------------------------------------------
struct AttentionSpec {
  bool mask = false;
  Shape mask_shape{1, 1, 1, 16};
  int64_t softmax_axis = -1;
  bool scores_also_output = false;
  bool bsh = true;  // projections reshaped to heads (else 4-D BNSD inputs)
  DType dtype = DType::kFloat32;
};

ir::Graph attentionGraph(const AttentionSpec& s) {
  GraphBuilder b;
  const int64_t S = 16, H = 2, D = 8;
  Value q, k, v;
  if (s.bsh) {
    auto heads = [&](const char* name) {
      Value x = b.input(name, s.dtype, {1, S, H * D});
      return b.op1("Reshape", {x}, ShapeAttrs{{1, S, H, D}});
    };
    q = b.op1("Transpose", {heads("q")}, PermAttrs{{0, 2, 1, 3}});
    k = b.op1("Transpose", {heads("k")}, PermAttrs{{0, 2, 3, 1}});
    v = b.op1("Transpose", {heads("v")}, PermAttrs{{0, 2, 1, 3}});
  } else {
    q = b.input("q", s.dtype, {1, H, S, D});
    k = b.op1("Transpose", {b.input("k", s.dtype, {1, H, S, D})}, PermAttrs{{0, 1, 3, 2}});
    v = b.input("v", s.dtype, {1, H, S, D});
  }
  Value scores = b.op1("BatchMatMul", {q, k}, MatMulAttrs{});
  Value scaled = b.mul(scores, 0.35f);
  if (s.mask) scaled = b.add(scaled, b.input("mask", s.dtype, s.mask_shape));
  Value p = b.op1("Softmax", {scaled}, AxisAttrs{s.softmax_axis, false});
  Value o = b.op1("BatchMatMul", {p, v}, MatMulAttrs{});
  if (s.bsh) {
    o = b.op1("Reshape", {b.op1("Transpose", {o}, PermAttrs{{0, 2, 1, 3}})}, ShapeAttrs{{1, S, H * D}});
  }
  b.output(o, "o");
  if (s.scores_also_output) b.output(scores, "scores");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(PatternFlashAttention, V2TakesTheUnmaskedBlockWithItsHeadLayout) {
  const ir::Graph g = attentionGraph({});
  auto f = fuse(g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(f->graph, "FlashAttention"), 1);
  EXPECT_EQ(f->kernels, 1u);  // reshapes, transposes, both matmuls, scale and softmax: one kernel
  EXPECT_EQ(f->fired, std::vector<std::string>{"fusion_group_1_FlashAttentionFusionV2"});
  EXPECT_EQ(f->graph.nodes[0].attrs.get<AttentionAttrs>().layout, AttentionLayout::kBSH);
  auto off = fuse(g, "--disable_pass=FlashAttentionFusionV2");
  ASSERT_TRUE(off.ok());
  EXPECT_GE(off->kernels, 5u);
  expectSameOutputs(g, 1e-4, 1e-5);
}

TEST(PatternFlashAttention, V1TakesTheMaskedBlockInBnsd) {
  AttentionSpec s;
  s.mask = true;
  s.bsh = false;
  const ir::Graph g = attentionGraph(s);
  auto f = fuse(g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(f->graph, "FlashAttention"), 1);
  EXPECT_EQ(f->fired, std::vector<std::string>{"fusion_group_0_FlashAttentionFusionV1"});
  const auto& a = f->graph.nodes.back().attrs.get<AttentionAttrs>();
  EXPECT_EQ(a.layout, AttentionLayout::kBNSD);
  EXPECT_FALSE(a.key_transposed);  // K^T = Transpose(K) absorbed
  expectSameOutputs(g, 1e-4, 1e-5);
}

TEST(PatternFlashAttention, NearMissesAreLeftAlone) {
  AttentionSpec extra_user;
  extra_user.scores_also_output = true;
  AttentionSpec wrong_axis;
  wrong_axis.softmax_axis = 2;
  AttentionSpec wide_mask;  // broadcasts the scores to a second batch: not a mask of the scores
  wide_mask.mask = true;
  wide_mask.mask_shape = {2, 1, 1, 16};
  wide_mask.bsh = false;
  AttentionSpec f64;
  f64.dtype = DType::kFloat64;
  for (const AttentionSpec& s : {extra_user, wrong_axis, wide_mask, f64}) {
    const ir::Graph g = attentionGraph(s);
    auto f = fuse(g, "");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(testing::countOps(f->graph, "FlashAttention"), 0);
    EXPECT_TRUE(f->fired.empty());
  }
}

TEST(PatternPasses, SwitchedByEveryNameFormAndProfile) {
  const ir::Graph g = attentionGraph({});
  for (const char* flags : {"--disable_pass=FlashAttentionFusionV2", "--disable_pass=fusion_group.1",
                            "--disable_pass=fusion_group.FlashAttentionFusionV2",
                            "--disable_pass=fusion_group_1_FlashAttentionFusionV2",
                            "--fusion_profile=gpu --disable_pass=FlashAttentionFusionV2",
                            "--fusion_profile=cpu --disable_pass=fusion_group.1"}) {
    auto f = fuse(g, flags);
    ASSERT_TRUE(f.ok()) << flags << ": " << f.status().message();
    EXPECT_EQ(testing::countOps(f->graph, "FlashAttention"), 0) << flags;
  }
  // On by default under every profile (gpu: measured on an H200, bench/README.md).
  for (const char* flags : {"--fusion_profile=ascend", "--fusion_profile=gpu", "--fusion_profile=cpu"}) {
    auto f = fuse(g, flags);
    ASSERT_TRUE(f.ok()) << flags << ": " << f.status().message();
    EXPECT_EQ(testing::countOps(f->graph, "FlashAttention"), 1) << flags;
  }
  auto bad = parseFusionFlags("--disable_pass=FlashAttentionFusionV9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("FlashAttentionFusionV"), std::string::npos);
  EXPECT_EQ(ascendPatternPassNames().size(), 21u);
}

// ---- residual add + norm --------------------------------------------------------------
struct NormSpec {
  const char* norm = "LayerNorm";
  int64_t axis = -1;
  bool beta = true;
  bool broadcast_add = false;
  bool read_mean = false;
  bool sum_also_output = false;
};

ir::Graph addNormGraph(const NormSpec& s) {
  GraphBuilder b;
  Value x1 = b.input("x1", DType::kFloat32, {4, 8, 32});
  Value x2 = b.input("x2", DType::kFloat32, s.broadcast_add ? Shape{32} : Shape{4, 8, 32});
  Value sum = b.add(x1, x2);
  const int64_t cols = s.axis == -1 ? 32 : 256;
  std::vector<Value> in = {sum, weights(b, {cols}, 3, 1.0f)};
  if (s.beta) in.push_back(weights(b, {cols}, 4));
  auto outs = b.op(s.norm, in, NormAttrs{s.axis, 1e-5f}, s.read_mean ? 2 : 1);
  b.output(outs[0], "y");
  if (s.read_mean) b.output(outs[1], "mean");
  if (s.sum_also_output) b.output(sum, "sum");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(PatternAddNorm, EachLayerNormFormHasItsPass) {
  NormSpec v1;
  v1.sum_also_output = true;  // the sum keeps its reader: AddLayerNorm outputs it
  NormSpec v3;
  v3.axis = 1;
  NormSpec ext;
  ext.beta = false;
  NormSpec rms;
  rms.norm = "RmsNorm";
  rms.beta = false;
  const std::pair<NormSpec, const char*> cases[] = {{v1, "fusion_group_2_add_layer_norm_fusion"},
                                                    {v3, "fusion_group_3_add_layer_norm_v3_fusion"},
                                                    {ext, "fusion_group_4_add_layer_norm_ext_fusion"},
                                                    {rms, "fusion_group_11_add_rms_norm_fusion"}};
  for (const auto& [spec, pass] : cases) {
    const ir::Graph g = addNormGraph(spec);
    auto f = fuse(g, "");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(f->fired, std::vector<std::string>{pass});
    EXPECT_EQ(f->kernels, 1u) << pass;
    expectSameOutputs(g, 1e-4, 1e-5);
  }
}

TEST(PatternAddNorm, NearMissesAreLeftAlone) {
  NormSpec broadcast;
  broadcast.broadcast_add = true;
  NormSpec stats_read;
  stats_read.read_mean = true;
  for (const NormSpec& s : {broadcast, stats_read}) {
    auto f = fuse(addNormGraph(s), "");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_TRUE(f->fired.empty());
    EXPECT_EQ(testing::countOps(f->graph, "AddLayerNorm"), 0);
  }
}

TEST(PatternAddNorm, CastRmsNormCastInHalfPrecision) {
  GraphBuilder b;
  Value x1 = b.input("x1", DType::kFloat16, {4, 32});
  Value x2 = b.input("x2", DType::kFloat16, {4, 32});
  Value wide = b.op1("Cast", {b.add(x1, x2)}, CastAttrs{DType::kFloat32});
  Value y = b.op("RmsNorm", {wide, weights(b, {32}, 5, 1.0f)}, NormAttrs{-1, 1e-6f}, 1)[0];
  b.output(b.op1("Cast", {y}, CastAttrs{DType::kFloat16}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto f = fuse(*g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->fired, std::vector<std::string>{"fusion_group_12_add_cast_rms_norm_cast_fusion"});
  EXPECT_EQ(f->kernels, 1u);
  expectSameOutputs(*g, 2e-3, 2e-3);  // float16 output: one half-precision rounding
}

// ---- SwiGLU, split/concat, shape reshapes ------------------------------------------------
ir::Graph swigluGraph(int silu_part) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 64});
  auto halves = b.op("Split", {x}, SplitAttrs{-1, {32, 32}}, 2);
  Value y = b.mul(b.op1("SiLU", {halves[silu_part]}), halves[1 - silu_part]);
  b.output(y, "y");
  return *b.finish();
}

TEST(PatternSwiGLU, SplitSiluMulBecomesOneKernel) {
  auto f = fuse(swigluGraph(0), "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->fired, std::vector<std::string>{"fusion_group_5_inference_swiglu_fusion"});
  EXPECT_EQ(testing::countOps(f->graph, "SwiGLU"), 1);
  EXPECT_EQ(f->kernels, 1u);
  expectSameOutputs(swigluGraph(0), 1e-5, 1e-6);
  auto other = fuse(swigluGraph(1), "");  // SiLU on the second half: not Swiglu's order
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->fired.empty());
}

TEST(PatternSplitConcat, BecomesReshapeTransposeReshape) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {8, 6});
  auto parts = b.op("Split", {x}, SplitAttrs{0, {4, 4}}, 2);
  b.output(b.op1("Concat", {parts[0], parts[1]}, AxisAttrs{1, false}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto f = fuse(*g, "--fusion_profile=cpu --enable_pass=split_concat_fusion");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->fired, std::vector<std::string>{"fusion_group_14_split_concat_fusion"});
  EXPECT_EQ(testing::countOps(f->graph, "Split") + testing::countOps(f->graph, "Concat"), 0);
  SessionOptions opts;
  opts.fusion = *parseFusionFlags("--enable_pass=split_concat_fusion");
  const std::vector<HostTensor> in = randomInputs(*g, 1);
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(*g, in, "reference", off);
  auto got = runGraph(*g, in, "cpu", opts.fusion);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 0, 0), "");
}

// ---- matmul epilogues ------------------------------------------------------------------
enum class Epilogue { kBias, kRelu, kGelu, kResidual, kSplit };

ir::Graph matmulGraph(Epilogue e, bool extra_user = false, DType dtype = DType::kFloat32) {
  GraphBuilder b;
  Value x = b.input("x", dtype, {2, 8, 16});
  Value w = weights(b, {16, 24}, 11), bias = weights(b, {24}, 12);
  if (dtype != DType::kFloat32) {
    w = b.op1("Cast", {w}, CastAttrs{dtype});
    bias = b.op1("Cast", {bias}, CastAttrs{dtype});
  }
  Value p = b.op1("BatchMatMul", {x, w}, MatMulAttrs{});
  Value y = b.add(p, bias);
  if (e == Epilogue::kRelu) y = b.relu(y);
  if (e == Epilogue::kGelu) y = b.op1("GeLU", {y}, GeluAttrs{GeluApprox::kNone});
  if (e == Epilogue::kResidual) y = b.add(y, b.input("r", dtype, {2, 8, 24}));
  if (e == Epilogue::kSplit) {
    auto parts = b.op("Split", {y}, SplitAttrs{-1, {8, 16}}, 2);
    b.output(parts[0], "y0");
    b.output(parts[1], "y1");
  } else {
    b.output(y, "y");
  }
  if (extra_user) b.output(p, "product");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

TEST(PatternMatMul, EachEpilogueBecomesOneKernel) {
  const std::tuple<Epilogue, const char*, const char*> cases[] = {
      {Epilogue::kBias, "MatMulBiasAdd", "fusion_group_15_matmul_elem_biasadd_fusion"},
      {Epilogue::kResidual, "MatMulAdd", "fusion_group_16_matmul_elem_add_fusion"},
      {Epilogue::kRelu, "MatMulRelu", "fusion_group_17_matmul_elem_relu_fusion"},
      {Epilogue::kGelu, "MatMulGelu", "fusion_group_18_matmul_elem_gelu_fusion"},
      {Epilogue::kSplit, "MatMulSplit", "fusion_group_6_inference_matmul_split_fusion"}};
  for (const auto& [e, op, pass] : cases) {
    const ir::Graph g = matmulGraph(e);
    auto f = fuse(g, "");
    ASSERT_TRUE(f.ok()) << op << ": " << f.status().message();
    EXPECT_EQ(testing::countOps(f->graph, op), 1) << op;
    EXPECT_EQ(f->kernels, 1u) << op;
    EXPECT_NE(std::find(f->fired.begin(), f->fired.end(), pass), f->fired.end()) << op;
    expectSameOutputs(g, 1e-4, 1e-5);
  }
}

TEST(PatternMatMul, NearMissesAreLeftAlone) {
  auto shared = fuse(matmulGraph(Epilogue::kRelu, true), "");  // the product has a second reader
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  EXPECT_TRUE(shared->fired.empty());
  auto f64 = fuse(matmulGraph(Epilogue::kRelu, false, DType::kFloat64), "");
  ASSERT_TRUE(f64.ok()) << f64.status().message();
  EXPECT_TRUE(f64->fired.empty());
}

// ---- exporter forms -----------------------------------------------------------------
TEST(PatternRecognize, DecomposedLayerNormAndErfGeluReachThePatterns) {
  GraphBuilder b;
  Value x1 = b.input("x1", DType::kFloat32, {4, 32});
  Value x2 = b.input("x2", DType::kFloat32, {4, 32});
  Value x = b.add(x1, x2);
  Value mean = b.op1("ReduceMean", {x}, AxesAttrs{{-1}, true});
  Value d = b.sub(x, mean);
  Value var = b.op1("ReduceMean", {b.pow(d, 2.0f)}, AxesAttrs{{-1}, true});
  Value n = b.op1("Div", {d, b.op1("Sqrt", {b.add(var, 1e-5f)})});
  Value ln = b.add(b.mul(n, weights(b, {32}, 21, 1.0f)), weights(b, {32}, 22));
  Value h = b.add(b.op1("BatchMatMul", {ln, weights(b, {32, 16}, 23)}, MatMulAttrs{}), weights(b, {16}, 24));
  Value erf = b.op1("Erf", {b.op1("Div", {h, b.scalar(1.4142135f, h)})});
  b.output(b.mul(b.mul(h, b.add(erf, 1.0f)), 0.5f), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto f = fuse(*g, "");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(testing::countOps(f->graph, "AddLayerNorm"), 1) << graphToText(f->graph);
  EXPECT_EQ(testing::countOps(f->graph, "MatMulGelu"), 1);
  EXPECT_EQ(f->kernels, 2u);
  expectSameOutputs(*g, 1e-4, 1e-5);
  auto kept = fuse(*g, "--disable_pass=RecognizeExportedPatterns");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(testing::countOps(kept->graph, "AddLayerNorm"), 0);
}

// The opencl backend runs AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention (V1 masked and
// V2) and MatMulSplit with the rendered kernels (backends/codegen/pattern_kernels.h) and
// the matmul epilogues with its tiled GEMM (backends/opencl/library_kernels.cc), not on
// the host fallback. Outputs are checked against
// the unfused reference by expectSameOutputs in the tests above (every backend).
TEST(PatternOpenCl, PatternOpsRunOnTheDevice) {
  const std::vector<std::string> backends = availableBackends();
  if (std::find(backends.begin(), backends.end(), "opencl") == backends.end()) GTEST_SKIP() << "no OpenCL platform";
  NormSpec rms;
  rms.norm = "RmsNorm";
  rms.beta = false;
  AttentionSpec masked;
  masked.mask = true;
  masked.bsh = false;
  const std::vector<std::pair<ir::Graph, std::vector<const char*>>> cases = {
      {addNormGraph(NormSpec{}), {"AddLayerNorm"}},
      {addNormGraph(rms), {"AddRmsNorm"}},
      {swigluGraph(0), {"SwiGLU"}},
      {attentionGraph(AttentionSpec{}), {"FlashAttention"}},
      {attentionGraph(masked), {"FlashAttention"}},
      {matmulGraph(Epilogue::kBias), {"MatMulBiasAdd"}},
      {matmulGraph(Epilogue::kResidual), {"MatMulAdd"}},
      {matmulGraph(Epilogue::kRelu), {"MatMulRelu"}},
      {matmulGraph(Epilogue::kGelu), {"MatMulGelu"}},
      {matmulGraph(Epilogue::kSplit), {"MatMulSplit"}},
  };
  for (const auto& [g, ops] : cases) {
    for (const char* op : ops) {
      auto on = testing::backendsRunning(g, op, "opencl", "--fusion_profile=ascend");
      ASSERT_TRUE(on.ok()) << on.status().message();
      EXPECT_EQ(*on, std::vector<std::string>{"opencl"}) << op;
    }
  }
}

// one_hot_matmul_fusion: MatMul(Cast(Equal(ids [1, S, 1], iota [V])), W) becomes a row
// gather of W with a zero row for ids outside [0, V), equal to the product (one term of
// the one-hot sum is the row itself, so exactly); switched off, the product stays; a
// constant that is not 0..V-1 is left alone.
TEST(OwnPasses, OneHotProductBecomesARowGather) {
  const int64_t S = 40, V = 11, D = 6;
  for (bool iota : {true, false}) {
    GraphBuilder b;
    Value ids = b.input("ids", DType::kInt64, {1, S, 1});
    std::vector<int64_t> cols(V);
    for (int64_t v = 0; v < V; ++v) cols[v] = iota ? v : (v * 3) % V;
    const HostTensor w = randomTensor({V, D}, 7);
    CastAttrs to_float;
    Value onehot = b.op1("Cast", {b.op1("Equal", {ids, b.constant("iota", DType::kInt64, {V}, cols.data())})}, to_float);
    b.output(b.op1("BatchMatMul", {onehot, b.constant("w", DType::kFloat32, {V, D}, w.data())}, MatMulAttrs{}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    ir::Graph fused = *g;
    ASSERT_TRUE(ir::inferShapes(fused).ok());
    ASSERT_TRUE(runFusionPipeline(fused, optLevel(2), FusionColumn::kCpu).ok());
    EXPECT_EQ(testing::countOpsDeep(fused, "Gather"), iota ? 1 : 0);
    EXPECT_EQ(testing::countOpsDeep(fused, "BatchMatMul"), iota ? 0 : 1);
    ir::Graph kept = *g;
    ASSERT_TRUE(ir::inferShapes(kept).ok());
    ASSERT_TRUE(runFusionPipeline(kept, *parseFusionFlags("--disable_pass=one_hot_matmul_fusion"), FusionColumn::kCpu).ok());
    EXPECT_EQ(testing::countOpsDeep(kept, "Gather"), 0);
    HostTensor in(DType::kInt64, {1, S, 1});
    for (int64_t s = 0; s < S; ++s) in.as<int64_t>()[s] = s % 5 == 0 ? (s % 2 ? -1 - s : V + s) : s % V;  // out of range too
    auto want = runGraph(*g, {in}, "reference", optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (const std::string& backend : availableBackends()) {
      if (backend != "cpu" && backend != "reference") continue;
      auto got = runGraph(*g, {in}, backend, optLevel(2));
      ASSERT_TRUE(got.ok()) << got.status().toString();
      EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 0, 0), "") << backend << (iota ? " iota" : " permuted");
    }
  }
}

// stacked_reduce_fusion: ReduceMax/ReduceSum over the axis a Concat of size-1 slices
// builds becomes a Maximum/Add chain (no Concat left), equal to the reduction, NaN
// included; slices two wide are left alone.
TEST(OwnPasses, ReductionOverAStackBecomesAnElementwiseChain) {
  struct Case { const char* reduce; int64_t width; bool keep_dims; bool fused; };
  for (const Case& c : {Case{"ReduceMax", 1, false, true}, Case{"ReduceSum", 1, true, true},
                        Case{"ReduceMin", 1, false, true}, Case{"ReduceMax", 2, false, false}}) {
    GraphBuilder b;
    const Shape part{2, 5, c.width, 7};
    std::vector<Value> parts;
    std::vector<HostTensor> in;
    for (int k = 0; k < 3; ++k) {
      parts.push_back(b.input("x" + std::to_string(k), DType::kFloat32, part));
      in.push_back(randomTensor(part, 60 + k));
    }
    in[1].as<float>()[3] = std::nanf("");
    Value stacked = b.op1("Concat", {b.relu(parts[0]), parts[1], parts[2]}, AxisAttrs{2, false});
    b.output(b.op1(c.reduce, {stacked}, AxesAttrs{{-2}, c.keep_dims}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    ir::Graph fused = *g;
    ASSERT_TRUE(ir::inferShapes(fused).ok());
    ASSERT_TRUE(runFusionPipeline(fused, optLevel(1), FusionColumn::kCpu).ok());
    EXPECT_EQ(testing::countOpsDeep(fused, "Concat"), c.fused ? 0 : 1) << c.reduce;
    auto want = runGraph(*g, in, "reference", optLevel(0));
    ASSERT_TRUE(want.ok()) << want.status().toString();
    auto got = runGraph(*g, in, "cpu", optLevel(2));
    ASSERT_TRUE(got.ok()) << got.status().toString();
    EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-6, 1e-6), "") << c.reduce;
  }
}

// squeeze_sink: tf2onnx's Conv1D (Conv2D over [N, C, 1, W], Squeeze, bias Add of a [C, 1]
// constant, ReLU as Maximum with 0) ends with the Squeeze, so the bias and the ReLU join
// the convolution's cluster; equal to the unmoved graph; switched off, they stay apart.
TEST(OwnPasses, SqueezeOfAConvolutionSinksBelowItsBiasAndActivation) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 4, 1, 9});
  const HostTensor w = randomTensor({6, 4, 1, 3}, 81), bias = randomTensor({6, 1}, 82);
  Conv2DAttrs a;
  a.strides = {1, 1};
  a.pads = {0, 0, 0, 0};
  a.dilations = {1, 1};
  a.groups = 1;
  Value y = b.op1("Conv2D", {x, b.constant("w", DType::kFloat32, {6, 4, 1, 3}, w.data())}, a);
  y = b.op1("Squeeze", {y}, AxesAttrs{{2}, false});
  y = b.add(y, b.constant("bias", DType::kFloat32, {6, 1}, bias.data()));
  b.output(b.op1("Maximum", {y, b.scalar(0.0f, y)}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto clusterOf = [&](const char* flags) {
    ir::Graph f = *g;
    EXPECT_TRUE(ir::inferShapes(f).ok());
    EXPECT_TRUE(runFusionPipeline(f, *parseFusionFlags(flags), FusionColumn::kCpu).ok());
    for (const ir::Node& n : f.nodes) {
      if (n.subgraph && testing::countOps(*n.subgraph, "Conv2D") == 1) return int(n.subgraph->nodes.size());
    }
    return 1;  // the convolution alone
  };
  EXPECT_EQ(clusterOf("--opt_level=2"), 3);  // Conv2D, Add, Maximum
  EXPECT_EQ(clusterOf("--opt_level=2 --disable_pass=squeeze_sink"), 1);
  const std::vector<HostTensor> in{randomTensor({2, 4, 1, 9}, 83)};
  auto want = runGraph(*g, in, "reference", optLevel(0));
  auto got = runGraph(*g, in, "cpu", optLevel(2));
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-5, 1e-6), "");
}

// magika's form (jax2tf): Conv2D -> a StridedSlice keeping the whole output -> Squeeze ->
// bias Add -> GeLU with its cube written x * (x * (0.044715 * x)): the slice goes, the
// chain is recognised as one GeLU (tanh form; the cpu column then expands it into one
// loop), the bias joins the convolution's cluster; equal to the unfused graph.
TEST(OwnPasses, WholeSliceGoesAndJaxGeluIsRecognised) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 8, 12, 1});
  const HostTensor w = randomTensor({16, 8, 3, 1}, 91), bias = randomTensor({16, 1}, 92);
  Conv2DAttrs a;
  Value y = b.op1("Conv2D", {x, b.constant("w", DType::kFloat32, {16, 8, 3, 1}, w.data())}, a);
  StridedSliceAttrs whole;
  whole.begins = {0, 0, 0, 0};
  whole.ends = {INT64_MAX, INT64_MAX, INT64_MAX, 1};
  whole.axes = {0, 1, 2, 3};
  y = b.op1("StridedSlice", {y}, whole);
  y = b.op1("Squeeze", {y}, AxesAttrs{{3}, false});
  Value v = b.add(y, b.constant("bias", DType::kFloat32, {16, 1}, bias.data()));
  Value cube = b.mul(v, b.mul(v, b.mul(b.scalar(0.044715f, v), v)));
  Value t = b.op1("Tanh", {b.mul(b.scalar(0.7978845608f, v), b.add(v, cube))});
  b.output(b.mul(v, b.mul(b.scalar(0.5f, v), b.add(b.scalar(1.0f, v), t))), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ir::Graph f = *g;
  ASSERT_TRUE(ir::inferShapes(f).ok());
  ASSERT_TRUE(runFusionPipeline(f, optLevel(2), FusionColumn::kCpu).ok());
  EXPECT_EQ(testing::countOpsDeep(f, "StridedSlice"), 0);
  int with_conv = 0, gelu_ops = 0;
  for (const ir::Node& n : f.nodes) {
    if (!n.subgraph) continue;
    if (testing::countOps(*n.subgraph, "Conv2D") == 1) with_conv = int(n.subgraph->nodes.size());
    for (const ir::Node& m : n.subgraph->nodes) gelu_ops += m.name.find("/gelu/") != std::string::npos;
  }
  EXPECT_EQ(with_conv, 2) << graphToText(f);  // Conv2D, Add
  EXPECT_GT(gelu_ops, 0) << graphToText(f);   // the expanded GeLU
  const std::vector<HostTensor> in{randomTensor({1, 8, 12, 1}, 93)};
  auto want = runGraph(*g, in, "reference", optLevel(0));
  auto got = runGraph(*g, in, "cpu", optLevel(2));
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(compareTensors((*got)[0], (*want)[0], 1e-5, 1e-5), "");
}

}  // namespace
}  // namespace gkrt
