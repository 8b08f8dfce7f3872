// The data-movement kernels the GPU backends render (backends/codegen/movement_kernels.h:
// Split, Resize, Gather/GatherElements with their out-of-range record, Tile, reflect/edge Pad) and GlobalAvgPool as a cluster-renderer reduction, against the reference
// kernels on every available backend, and run on the device where the backend is a GPU
// one (opencl with PoCL here; cuda where a GPU is present). Split and nearest Resize move
// bits, so their outputs must be identical (float16, uint8, int64 and bool too); linear
// and cubic Resize weigh the reference's taps in float32 instead of double.
#include <cstring>
#include <random>

#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::compareTensors;
using testing::runGraph;

// Random bits (bool: 0 or 1; floats: finite uniform values).
HostTensor randomBits(DType t, const Shape& s, uint32_t seed) {
  if (t == DType::kFloat32) return testing::randomTensor(s, seed);
  HostTensor h(t, s);
  std::mt19937 rng(seed);
  auto* b = static_cast<unsigned char*>(h.data());
  const size_t bytes = static_cast<size_t>(numElements(s)) * dtypeSize(t);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(t == DType::kBool ? rng() % 2 : rng());
  if (t == DType::kFloat16) {  // keep the exponent below all-ones: no NaN or inf patterns
    auto* h16 = static_cast<uint16_t*>(h.data());
    for (int64_t i = 0; i < numElements(s); ++i) h16[i] &= 0xBBFF;
  }
  return h;
}

bool sameBytes(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(numElements(a.shape())) * dtypeSize(a.dtype())) == 0;
}

// Runs `g` on every backend against the reference; `exact`: bit-identical outputs.
// Checks the device backends ran `op` themselves.
void expectEveryBackendMatches(const ir::Graph& g, const std::vector<HostTensor>& in, const char* op, bool exact,
                               double tol, const std::string& what) {
  FusionOptions off;
  off.opt_level = 0;
  auto want = runGraph(g, in, "reference", off);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().message();
  for (const std::string& backend : availableBackends()) {
    if (backend == "reference") continue;
    for (int level : {0, 2}) {
      FusionOptions fusion;
      fusion.opt_level = level;
      auto got = runGraph(g, in, backend, fusion);
      ASSERT_TRUE(got.ok()) << what << " on " << backend << ": " << got.status().message();
      ASSERT_EQ(got->size(), want->size());
      for (size_t o = 0; o < want->size(); ++o) {
        if (exact) {
          EXPECT_TRUE(sameBytes((*got)[o], (*want)[o])) << what << " on " << backend << " output " << o << " differs";
        } else {
          EXPECT_EQ(compareTensors((*got)[o], (*want)[o], tol, tol), "") << what << " on " << backend << " output " << o;
        }
      }
    }
    if (backend == "cpu") continue;
    auto on = testing::backendsRunning(g, op, backend, "--opt_level=0");
    ASSERT_TRUE(on.ok()) << on.status().message();
    EXPECT_EQ(*on, std::vector<std::string>{backend}) << what << ": " << op << " did not run on " << backend;
    SessionOptions fused;  // with fusion on, no kernel of the graph goes to the fallback either
    fused.backend = backend;
    auto session = Session::create(g, fused);
    ASSERT_TRUE(session.ok()) << session.status().message();
    for (const auto& k : (*session)->kernelInfos()) EXPECT_EQ(k.backend, backend) << what << ": " << k.name;
  }
}

TEST(MovementKernels, SplitMovesEveryElementToItsPiece) {
  struct Case { DType t; Shape s; int64_t axis; Ints sizes; };
  for (const Case& c : std::vector<Case>{{DType::kFloat32, {2, 10, 3, 5}, 1, {3, 3, 4}},
                                         {DType::kFloat32, {4, 7}, -1, {2, 5}},
                                         {DType::kInt64, {6, 4}, 0, {1, 5}},
                                         {DType::kUInt8, {1, 64, 8, 8}, 1, {32, 32}},
                                         {DType::kFloat16, {2, 6, 5}, 2, {1, 1, 3}},
                                         {DType::kBool, {3, 4}, 1, {2, 2}},
                                         {DType::kFloat32, {1, 96, 20, 20}, 1, {32, 32, 32}}}) {
    GraphBuilder b;
    Value x = b.input("x", c.t, c.s);
    auto parts = b.op("Split", {x}, SplitAttrs{c.axis, c.sizes}, c.sizes.size());
    for (size_t p = 0; p < parts.size(); ++p) b.output(parts[p], "y" + std::to_string(p));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectEveryBackendMatches(*g, {randomBits(c.t, c.s, 7)}, "Split", true, 0,
                              std::string("Split ") + dtypeName(c.t) + " " + shapeToString(c.s) + " axis " + std::to_string(c.axis));
  }
}

struct ResizeCase {
  DType t;
  Shape s;
  Ints sizes;
  ResizeMode mode;
  CoordTransform transform;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  float scale = 0;  // given scale on both axes (0: from the sizes)
  float cubic_a = -0.75f;
  bool exclude_outside = false;
};

TEST(MovementKernels, ResizeTakesTheReferencesTaps) {
  using M = ResizeMode;
  using C = CoordTransform;
  using N = NearestMode;
  for (const ResizeCase& c : std::vector<ResizeCase>{
           {DType::kFloat32, {1, 3, 5, 7}, {10, 14}, M::kNearest, C::kHalfPixel},
           {DType::kFloat32, {1, 2, 4, 4}, {8, 8}, M::kNearest, C::kAsymmetric, N::kFloor, 2.0f},
           {DType::kFloat32, {2, 2, 9, 11}, {4, 5}, M::kNearest, C::kAlignCorners, N::kRoundPreferCeil},
           {DType::kUInt8, {1, 4, 6, 6}, {13, 1}, M::kNearest, C::kPytorchHalfPixel, N::kCeil},
           {DType::kFloat16, {1, 2, 3, 3}, {6, 6}, M::kNearest, C::kHalfPixel},
           {DType::kInt64, {1, 1, 2, 3}, {5, 7}, M::kNearest, C::kAsymmetric},
           {DType::kFloat32, {1, 3, 5, 7}, {12, 9}, M::kLinear, C::kHalfPixel},
           {DType::kFloat32, {1, 2, 4, 4}, {7, 7}, M::kLinear, C::kAlignCorners},
           {DType::kFloat32, {2, 1, 9, 9}, {4, 4}, M::kLinear, C::kAsymmetric},
           {DType::kFloat32, {1, 2, 5, 6}, {1, 6}, M::kLinear, C::kPytorchHalfPixel},
           {DType::kFloat32, {1, 2, 6, 6}, {11, 13}, M::kCubic, C::kHalfPixel},
           {DType::kFloat32, {1, 1, 5, 8}, {9, 3}, M::kCubic, C::kAlignCorners, N::kRoundPreferFloor, 0, -0.5f, true}}) {
    ResizeAttrs a;
    a.mode = c.mode, a.coordinate_transformation = c.transform, a.nearest_mode = c.nearest, a.sizes = c.sizes;
    a.scale_h = a.scale_w = c.scale, a.cubic_coeff_a = c.cubic_a, a.exclude_outside = c.exclude_outside;
    GraphBuilder b;
    b.output(b.op1("Resize", {b.input("x", c.t, c.s)}, a), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const std::string what = std::string("Resize ") + dtypeName(c.t) + " " + shapeToString(c.s) + " -> " +
                             std::to_string(c.sizes[0]) + "x" + std::to_string(c.sizes[1]) + " mode " +
                             std::to_string(int(c.mode)) + " transform " + std::to_string(int(c.transform));
    expectEveryBackendMatches(*g, {randomBits(c.t, c.s, 11)}, "Resize", c.mode == M::kNearest, 2e-6, what);
  }
}

TEST(MovementKernels, TileBroadcastAndReflectOrEdgePadReadOneElementEach) {
  struct Case { const char* op; DType t; Shape s; Ints ints; PadMode mode; };
  for (const Case& c : std::vector<Case>{{"Tile", DType::kFloat32, {2, 3}, {3, 2, 2}, PadMode::kConstant},
                                         {"Tile", DType::kUInt8, {4, 1, 5}, {1, 7, 1}, PadMode::kConstant},
                                         {"Tile", DType::kInt64, {3}, {4}, PadMode::kConstant},
                                         {"Pad", DType::kFloat32, {1, 2, 4, 5}, {0, 0, 1, 2, 0, 0, 3, 1}, PadMode::kReflect},
                                         {"Pad", DType::kFloat16, {3, 6}, {2, 5, 2, 5}, PadMode::kReflect},
                                         {"Pad", DType::kInt32, {4, 5}, {0, -1, 3, 2}, PadMode::kEdge},  // a crop, too
                                         {"Pad", DType::kFloat32, {1, 3, 8, 8}, {0, 0, 4, 4, 0, 0, 4, 4}, PadMode::kEdge},
                                         // constant (1.5) around and a crop, rows outside too; one dim
                                         {"Pad", DType::kFloat32, {2, 3, 7}, {1, 0, -2, 2, 1, 3}, PadMode::kConstant},
                                         {"Pad", DType::kFloat32, {9}, {4, 3}, PadMode::kReflect},
                                         // BroadcastTo (ONNX Expand): to the shape in ints
                                         {"BroadcastTo", DType::kFloat32, {3, 1, 5}, {2, 3, 4, 5}, PadMode::kConstant},
                                         {"BroadcastTo", DType::kUInt8, {2, 1}, {2, 6}, PadMode::kConstant},  // filled rows
                                         {"BroadcastTo", DType::kInt64, {1}, {7}, PadMode::kConstant},
                                         {"BroadcastTo", DType::kFloat16, {1, 3, 1, 16, 8}, {1, 3, 3, 16, 8}, PadMode::kConstant},
                                         {"BroadcastTo", DType::kBool, {4, 1, 1}, {4, 3, 2}, PadMode::kConstant}}) {
    GraphBuilder b;
    Value x = b.input("x", c.t, c.s);
    const std::string op = c.op;
    if (op == "Tile") {
      b.output(b.op1("Tile", {x}, TileAttrs{c.ints}), "y");
    } else if (op == "BroadcastTo") {
      b.output(b.op1("BroadcastTo", {x}, ShapeAttrs{c.ints}), "y");
    } else {
      PadAttrs a;
      a.pads = c.ints, a.mode = c.mode, a.value = 1.5f;
      b.output(b.op1("Pad", {x}, a), "y");
    }
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectEveryBackendMatches(*g, {randomBits(c.t, c.s, 13)}, c.op, true, 0,
                              op + " " + dtypeName(c.t) + " " + shapeToString(c.s) + " " + shapeToString(c.ints));
    {  // on cpu: the copy kernels, not the reference one
      SessionOptions o;
      o.backend = "cpu";
      auto session = Session::create(*g, o);
      ASSERT_TRUE(session.ok()) << session.status().message();
      bool own = false;
      for (const auto& k : (*session)->kernelInfos()) own = own || k.detail == (op == "Pad" ? "gkrt pad copy" : "gkrt broadcast copy");
      EXPECT_TRUE(own) << op << " " << shapeToString(c.s);
    }
  }
}

// Segmentation heads end in ArgMax over the classes; ties take the first index.
TEST(MovementKernels, ArgMaxAndArgMinTakeTheFirstExtreme) {
  struct Case { const char* op; Shape s; int64_t axis; bool keep; bool ties; };
  for (const Case& c : std::vector<Case>{{"ArgMax", {1, 21, 6, 7}, 1, false, false},
                                         {"ArgMin", {3, 9}, -1, true, false},
                                         {"ArgMax", {4, 5, 3}, 0, true, true},
                                         {"ArgMaxWithValue", {2, 6}, 1, false, false}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, c.s);
    const std::string op = c.op;
    const size_t outs = op == "ArgMaxWithValue" ? 2 : 1;
    auto y = b.op(op, {b.op1("Exp", {x})}, AxisAttrs{c.axis, c.keep}, outs);  // a producer on the device too
    for (size_t o = 0; o < y.size(); ++o) b.output(y[o], "y" + std::to_string(o));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    HostTensor in = testing::randomTensor(c.s, 17);
    if (c.ties) for (int64_t i = 0; i < numElements(c.s); ++i) in.as<float>()[i] = static_cast<float>(i % 3);
    expectEveryBackendMatches(*g, {in}, c.op, outs == 1, 1e-6, op + " " + shapeToString(c.s) + " axis " + std::to_string(c.axis));
  }
}

TEST(MovementKernels, CumSumEveryDirection) {
  struct Case { DType t; Shape s; int64_t axis; bool exclusive, reverse; };
  for (const Case& c : std::vector<Case>{{DType::kFloat32, {3, 40}, 1, false, false},
                                         {DType::kFloat32, {5, 4, 3}, 0, true, false},
                                         {DType::kInt64, {2, 9}, -1, false, true},   // position ids from a mask
                                         {DType::kInt32, {4, 6, 2}, 1, true, true}}) {
    GraphBuilder b;
    b.output(b.op1("CumSum", {b.input("x", c.t, c.s)}, CumSumAttrs{c.axis, c.exclusive, c.reverse}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    HostTensor in = testing::randomTensor(c.s, 19);
    if (c.t != DType::kFloat32) {  // small integers: the reference sums them exactly too
      HostTensor ints(c.t, c.s);
      for (int64_t i = 0; i < numElements(c.s); ++i) {
        const int64_t v = (i * 7) % 5 - 2;
        if (c.t == DType::kInt64) ints.as<int64_t>()[i] = v;
        else ints.as<int32_t>()[i] = static_cast<int32_t>(v);
      }
      in = std::move(ints);
    }
    expectEveryBackendMatches(*g, {in}, "CumSum", c.t != DType::kFloat32, 1e-5,
                              std::string("CumSum ") + dtypeName(c.t) + " " + shapeToString(c.s) + " axis " + std::to_string(c.axis));
  }
}

// Indices of `t` in [-extent, extent), deterministic.
HostTensor indices(DType t, const Shape& s, int64_t extent, uint32_t seed) {
  HostTensor h(t, s);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < numElements(s); ++i) {
    const int64_t v = static_cast<int64_t>(rng() % (2 * extent)) - extent;
    if (t == DType::kInt64) h.as<int64_t>()[i] = v;
    else h.as<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return h;
}

TEST(MovementKernels, GatherTakesRowsByIndexNegativeOnesFromTheEnd) {
  struct Case { DType t; Shape x; DType it; Shape ind; int64_t axis; };
  for (const Case& c : std::vector<Case>{{DType::kFloat32, {100, 16}, DType::kInt64, {2, 5}, 0},   // an embedding
                                         {DType::kFloat32, {3, 7, 4}, DType::kInt32, {6}, 1},
                                         {DType::kUInt8, {5, 9}, DType::kInt64, {4, 2}, -1},
                                         {DType::kInt64, {8}, DType::kInt32, {}, 0},
                                         {DType::kFloat16, {6, 3, 2}, DType::kInt64, {3}, 2}}) {
    GraphBuilder b;
    b.output(b.op1("Gather", {b.input("x", c.t, c.x), b.input("i", c.it, c.ind)}, AxisAttrs{c.axis, false}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const int64_t extent = c.x[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis)];
    expectEveryBackendMatches(*g, {randomBits(c.t, c.x, 3), indices(c.it, c.ind, extent, 4)}, "Gather", true, 0,
                              std::string("Gather ") + dtypeName(c.t) + " " + shapeToString(c.x) + " axis " + std::to_string(c.axis));
  }
}

TEST(MovementKernels, GatherElementsTakesOneElementPerIndex) {
  struct Case { DType t; Shape x; Shape ind; int64_t axis; };
  for (const Case& c : std::vector<Case>{{DType::kFloat32, {4, 6}, {3, 6}, 0},
                                         {DType::kInt64, {2, 5, 3}, {2, 7, 3}, 1},
                                         {DType::kUInt8, {3, 4, 5}, {2, 3, 2}, -1}}) {  // indices smaller than the data
    GraphBuilder b;
    b.output(b.op1("GatherElements", {b.input("x", c.t, c.x), b.input("i", DType::kInt64, c.ind)}, AxisAttrs{c.axis, false}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const int64_t extent = c.x[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis)];
    expectEveryBackendMatches(*g, {randomBits(c.t, c.x, 23), indices(DType::kInt64, c.ind, extent, 24)}, "GatherElements", true, 0,
                              std::string("GatherElements ") + dtypeName(c.t) + " " + shapeToString(c.x) + " axis " +
                                  std::to_string(c.axis));
  }
}

// An index out of range fails the run on every backend, naming the index; the device
// backends' fault record is cleared, so the next run with good indices succeeds.
TEST(MovementKernels, GatherIndexOutOfRangeFailsTheRun) {
  GraphBuilder b;
  b.output(b.op1("Gather", {b.input("table", DType::kFloat32, {10, 4}), b.input("ids", DType::kInt64, {3})}, AxisAttrs{0, false}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  for (const std::string& backend : availableBackends()) {
    SessionOptions opts;
    opts.backend = backend;
    auto s = Session::create(*g, opts);
    ASSERT_TRUE(s.ok()) << backend << ": " << s.status().message();
    HostTensor ids(DType::kInt64, {3});
    int64_t* p = ids.as<int64_t>();
    p[0] = 1, p[1] = 10, p[2] = 2;
    ASSERT_TRUE((*s)->setInput("table", testing::randomTensor({10, 4}, 41)).ok());
    ASSERT_TRUE((*s)->setInput("ids", ids).ok());
    Status run = (*s)->run();
    ASSERT_FALSE(run.ok()) << backend << ": an out-of-range index ran";
    EXPECT_NE(run.message().find("10"), std::string::npos) << backend << ": " << run.message();
    EXPECT_NE(run.message().find("out of range"), std::string::npos) << backend << ": " << run.message();
    p[1] = -10;  // the first row, from the end
    ASSERT_TRUE((*s)->setInput("ids", ids).ok());
    run = (*s)->run();
    EXPECT_TRUE(run.ok()) << backend << ": " << run.message();
  }
}

TEST(MovementKernels, GlobalAvgPoolIsAReductionOnTheGpuBackends) {
  for (const Shape& s : std::vector<Shape>{{2, 5, 7, 9}, {3, 4, 17}, {1, 300, 1, 1}, {1, 8, 40, 40}}) {
    GraphBuilder b;
    b.output(b.op1("GlobalAvgPool", {b.input("x", DType::kFloat32, s)}), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectEveryBackendMatches(*g, {testing::randomTensor(s, 5)}, "GlobalAvgPool", false, 1e-5, "GlobalAvgPool " + shapeToString(s));
  }
}

// A reduction over axes of one element with its dims kept (unsimplified at opt level 0)
// has its input's shape; the renderer takes it as the input (it declined such nodes, as
// it could not tell the reduced value from the full-shaped one).
TEST(MovementKernels, ReductionsOfOneElementAreReshapes) {
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMean"}) {
    GraphBuilder b;
    b.output(b.op1(op, {b.input("x", DType::kFloat32, {4, 1, 5})}, AxesAttrs{{1}, true}), "y");  // kept: the output has the input's shape
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    expectEveryBackendMatches(*g, {testing::randomTensor({4, 1, 5}, 6)}, op, true, 0, std::string(op) + " over an axis of 1");
  }
}

}  // namespace
}  // namespace gkrt
