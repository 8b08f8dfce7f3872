// SliceAtRun and the analysis behind it: a Loop body slicing x[i : i + k] with its
// counter compiles once (the slice's length is fixed, its start read at run), runs on
// every host backend, and fails with a clear message when the slice runs off the edge.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "runtime/builder.h"
#include "runtime/ir/value_offsets.h"
#include "runtime/base/log.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

Value int64Constant(GraphBuilder& b, int64_t v) { return b.constant("", DType::kInt64, {}, &v); }

TEST(SliceAtRun, ConstantDifferenceFollowsAddsSubsAndMoves) {
  GraphBuilder b;
  Value i = b.input("i", DType::kInt64, {});
  Value j = b.input("j", DType::kInt64, {});
  Value starts = b.op1("ExpandDims", {i}, AxesAttrs{{0}, false});
  Value ends = b.op1("ExpandDims", {b.op1("Add", {i, int64Constant(b, 3)})}, AxesAttrs{{0}, false});
  Value ends_sub = b.op1("Sub", {b.op1("Add", {int64Constant(b, 5), i}), int64Constant(b, 1)});
  Value other = b.op1("ExpandDims", {b.op1("Add", {j, int64Constant(b, 1)})}, AxesAttrs{{0}, false});
  Value doubled = b.op1("Add", {b.op1("Mul", {i, int64Constant(b, 2)}), int64Constant(b, 1)});
  ASSERT_TRUE(b.status().ok()) << b.status().toString();
  const ir::Graph& g = b.graph();
  EXPECT_EQ(ir::constantDifference(g, starts.id, ends.id), (Ints{3}));
  EXPECT_EQ(ir::constantDifference(g, ends.id, starts.id), (Ints{-3}));
  EXPECT_EQ(ir::constantDifference(g, starts.id, ends_sub.id), (Ints{4}));
  EXPECT_FALSE(ir::constantDifference(g, starts.id, other.id).has_value());    // another run-time value
  EXPECT_FALSE(ir::constantDifference(g, starts.id, doubled.id).has_value());  // 2i + 1 - i is not constant
}

// Loop(trips) { acc += x[i : i + 1] } over a captured x of `length` values.
ir::Graph sliceLoop(int64_t trips, int64_t length) {
  GraphBuilder body;
  Value i = body.input("i", DType::kInt64, {});
  Value cond = body.input("cond", DType::kBool, {});
  Value acc = body.input("acc", DType::kFloat32, {1});
  Value x = body.input("x", DType::kFloat32, {length});
  Value starts = body.op1("ExpandDims", {i}, AxesAttrs{{0}, false});
  Value ends = body.op1("ExpandDims", {body.op1("Add", {i, int64Constant(body, 1)})}, AxesAttrs{{0}, false});
  Value picked = body.op1("SliceAtRun", {x, starts, ends}, SliceAtRunAttrs{{0}, {}, {1}});
  body.output(body.op1("Identity", {cond}), "cond_out");
  body.output(body.add(acc, picked), "acc_out");
  auto sub = body.finish();
  EXPECT_TRUE(sub.ok()) << sub.status().toString();
  GraphBuilder b;
  Value acc0 = b.input("acc0", DType::kFloat32, {1});
  Value xs = b.input("x", DType::kFloat32, {length});
  Value m = int64Constant(b, trips);
  auto outs = b.op("Loop", {m, Value{}, acc0, xs}, LoopAttrs{trips, 1}, 1, "loop",
                   {std::make_shared<ir::Graph>(std::move(sub).value())});
  b.output(outs[0], "acc");
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(g).value();
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// 1000 iterations, each slicing at another start: the body is compiled once, with the
// parent, never per value; the time per iteration is printed (not asserted).
TEST(SliceAtRun, ALoopOfAThousandSlicesCompilesItsBodyOnce) {
  const int64_t n = 1000;
  const ir::Graph g = sliceLoop(n, n);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) x[size_t(k)] = static_cast<float>(k % 7) - 2.5f;
  float want = -1;
  for (float v : x) want += v;
  for (const std::string& backend : availableBackends()) {
    SessionOptions opts;
    opts.backend = backend;
    const LogLevel saved = logLevel();
    setLogLevel(LogLevel::kInfo);
    ::testing::internal::CaptureStderr();
    const auto c0 = std::chrono::steady_clock::now();
    auto s = Session::create(g, opts);
    const double compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    const std::string compile_log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ(countOf(compile_log, "session compiled for"), 2u) << compile_log;  // the model and the body
    ASSERT_TRUE((*s)->setInput("acc0", HostTensor::fromFloats({1}, {-1})).ok());
    ASSERT_TRUE((*s)->setInput("x", HostTensor::fromFloats({n}, x)).ok());
    ::testing::internal::CaptureStderr();
    const auto t0 = std::chrono::steady_clock::now();
    Status run = (*s)->run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string run_log = ::testing::internal::GetCapturedStderr();
    setLogLevel(saved);
    ASSERT_TRUE(run.ok()) << backend << ": " << run.toString();
    EXPECT_EQ(countOf(run_log, "compiled"), 0u) << run_log;
    auto acc = (*s)->output("acc");
    ASSERT_TRUE(acc.ok());
    EXPECT_FLOAT_EQ(acc->toFloats()[0], want) << backend;
    std::printf("[ measure  ] %s: %lld-iteration Loop slicing x[i:i+1]: %.1f us per iteration; compiling the "
                "session (model and body) took %.1f us\n", backend.c_str(), static_cast<long long>(n),
                seconds * 1e6 / static_cast<double>(n), compile_seconds * 1e6);
  }
}

TEST(SliceAtRun, ASliceRunningOffTheEdgeFailsAtRunNamingIt) {
  const ir::Graph g = sliceLoop(6, 5);  // iteration 5 slices x[5:6] of 5 values
  for (const char* backend : {"reference", "cpu"}) {
    auto out = testing::runGraph(g, {HostTensor::fromFloats({1}, {0}), HostTensor::fromFloats({5}, {1, 2, 3, 4, 5})},
                                 backend);
    ASSERT_FALSE(out.ok()) << backend;
    const std::string m = out.status().toString();
    EXPECT_NE(m.find("iteration 5"), std::string::npos) << m;
    EXPECT_NE(m.find("starts 5 and ends 6 select 0 elements of axis 0 (size 5"), std::string::npos) << m;
    EXPECT_NE(m.find("off the tensor's edge"), std::string::npos) << m;
  }
}

TEST(SliceAtRun, ALengthNoStartCanFitIsRefusedAtCompile) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {4, 3});
  Value s = b.input("s", DType::kInt64, {1});
  Value e = b.input("e", DType::kInt64, {1});
  b.output(b.op1("SliceAtRun", {x, s, e}, SliceAtRunAttrs{{1}, {2}, {3}}), "y");  // 3 of every 2nd of 3
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("keeps 3 elements of axis 1 (step 2), which has only 3"), std::string::npos)
      << g.status().toString();
  GraphBuilder b2;
  Value x2 = b2.input("x", DType::kFloat32, {4, 3});
  Value s2 = b2.input("s", DType::kInt64, {2});
  b2.output(b2.op1("SliceAtRun", {x2, s2, s2}, SliceAtRunAttrs{{0}, {}, {1}}), "y");
  auto g2 = b2.finish();
  ASSERT_FALSE(g2.ok());
  EXPECT_NE(g2.status().message().find("starts has shape 2;"), std::string::npos) << g2.status().toString();
}

}  // namespace
}  // namespace gkrt
