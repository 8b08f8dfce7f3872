// The memory planner: no two live tensors overlap, dead tensors' bytes are reused,
// in-place chains share an offset; and a session's arena under it gives the
// reference backend's outputs, run after run.
#include <random>

#include "runtime/memory_plan.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

void expectNoLiveOverlap(const std::vector<BufferRequest>& r, const MemoryPlan& plan) {
  auto root = [&](size_t i) {
    while (r[i].share_with >= 0 || r[i].inside >= 0) i = static_cast<size_t>(r[i].share_with >= 0 ? r[i].share_with : r[i].inside);
    return i;
  };
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + r[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < r.size(); ++j) {
      if (root(i) == root(j)) continue;
      const bool live_together = r[i].first <= r[j].last && r[j].first <= r[i].last;
      const bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + r[j].bytes && plan.offsets[j] < plan.offsets[i] + r[i].bytes;
      EXPECT_FALSE(live_together && bytes_overlap) << "requests " << i << " and " << j;
    }
  }
}

TEST(MemoryPlan, ReusesDeadBytesAndKeepsLiveOnesApart) {
  // a chain: t0 -> t1 -> t2 -> t3, each read only by the next step.
  std::vector<BufferRequest> r{{1000, -1, 0}, {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}};
  MemoryPlan plan = planMemory(r);
  expectNoLiveOverlap(r, plan);
  EXPECT_EQ(plan.arena_bytes, 2 * 1024u);  // two buffers ping-pong
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
}

TEST(MemoryPlan, InPlaceChainsShareOneOffset) {
  std::vector<BufferRequest> r{{4096, -1, 5}, {256, 0, 1}, {256, 1, 2, 1}, {256, 2, 3, 2}, {100, 1, 1}};
  MemoryPlan plan = planMemory(r);
  expectNoLiveOverlap(r, plan);
  EXPECT_EQ(plan.offsets[1], plan.offsets[2]);
  EXPECT_EQ(plan.offsets[2], plan.offsets[3]);
}

// A concat's output (3) holding its three pieces, written before it at steps 0-2, and a
// smaller concat (4) of the first two as a view of its start: each at the host's offset
// plus its own, the group's bytes kept from the first piece's step to the last read of
// any member, so a tensor living then (5, 6) goes elsewhere.
TEST(MemoryPlan, TensorsInsideAnotherSitAtItsOffsetForTheGroupsLifetime) {
  std::vector<BufferRequest> r{{1024, 0, 4}, {1024, 1, 3}, {1000, 2, 6}, {3072, 3, 7}, {2048, 3, 9}, {3072, 0, 1}, {512, 8, 9}};
  r[0].inside = 3, r[0].at = 0;
  r[1].inside = 3, r[1].at = 1024;
  r[2].inside = 3, r[2].at = 2048;
  r[4].inside = 3, r[4].at = 0;
  MemoryPlan plan = planMemory(r);
  expectNoLiveOverlap(r, plan);
  EXPECT_EQ(plan.offsets[0], plan.offsets[3]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[3] + 1024);
  EXPECT_EQ(plan.offsets[2], plan.offsets[3] + 2048);
  EXPECT_EQ(plan.offsets[4], plan.offsets[3]);
  for (int other : {5, 6}) {  // live with a member, though not with the host's own steps
    const size_t o = plan.offsets[size_t(other)], e = o + r[size_t(other)].bytes;
    EXPECT_TRUE(e <= plan.offsets[3] || o >= plan.offsets[3] + 3072) << "request " << other;
  }
  // Nested: a piece of a piece, offsets adding up.
  std::vector<BufferRequest> n{{256, 0, 2}, {512, 1, 3}, {1024, 2, 4}};
  n[0].inside = 1, n[0].at = 256;
  n[1].inside = 2, n[1].at = 512;
  MemoryPlan nested = planMemory(n);
  EXPECT_EQ(nested.offsets[0], nested.offsets[2] + 768);
  EXPECT_EQ(nested.offsets[1], nested.offsets[2] + 512);
  EXPECT_EQ(nested.arena_bytes, 1024u);
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> r;
    size_t total = 0;
    for (int i = 0; i < 40; ++i) {
      const int first = static_cast<int>(rng() % 30) - 1;
      r.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 8)});
      total += (r.back().bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    }
    MemoryPlan plan = planMemory(r);
    expectNoLiveOverlap(r, plan);
    EXPECT_LE(plan.arena_bytes, total);
  }
}

// Unfused elementwise chain on cpu: intermediates share the arena, in-place steps
// reuse their input's bytes, and a second run with the same inputs gives the same
// answer (inputs are never overwritten).
TEST(MemoryPlan, SessionArenaMatchesReferenceAcrossRuns) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {64, 100});
  Value y = b.input("y", DType::kFloat32, {64, 100});
  Value t = b.op1("Exp", {b.op1("Neg", {b.op1("Abs", {x})})});
  t = b.op1("Reshape", {b.add(t, y)}, ShapeAttrs{{100, 64}});
  b.output(b.mul(t, 3.0f), "out");
  b.output(b.op1("Tanh", {x}), "side");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  std::vector<HostTensor> inputs;
  for (int k = 0; k < 2; ++k) {
    std::vector<float> v(6400);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.01f * static_cast<float>(i) + k);
    inputs.push_back(HostTensor::fromFloats({64, 100}, v));
  }
  auto want = testing::runGraph(*g, inputs, "reference", *parseFusionFlags("--opt_level=0"));
  ASSERT_TRUE(want.ok());
  SessionOptions o;
  o.backend = "cpu";
  o.fusion = *parseFusionFlags("--opt_level=0");
  auto s = Session::create(*g, o);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_LT((*s)->peakBytes(), (*s)->tensorBytes());
  ASSERT_TRUE((*s)->setInput("x", inputs[0]).ok());
  ASSERT_TRUE((*s)->setInput("y", inputs[1]).ok());
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE((*s)->run().ok());
    for (size_t k = 0; k < want->size(); ++k) {
      auto got = (*s)->output((*s)->outputs()[k].name);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(testing::compareTensors(*got, (*want)[k], 1e-5, 1e-6), "") << "run " << run << ", output " << k;
    }
  }
}

// Tensors with no elements still get valid addresses (an empty arena was a crash).
TEST(MemoryPlan, EmptyTensorsRun) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {0, 3});
  b.output(b.op1("Exp", {b.add(x, 1.0f)}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  for (const char* backend : {"cpu", "reference"}) {
    SessionOptions o;
    o.backend = backend;
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    ASSERT_TRUE((*s)->setInput("x", HostTensor::fromFloats({0, 3}, {})).ok());
    ASSERT_TRUE((*s)->run().ok());
    auto y = (*s)->output("y");
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(y->shape(), (Shape{0, 3}));
  }
}

}  // namespace
}  // namespace gkrt
