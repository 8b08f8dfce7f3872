// Control-flow kernels size their working memory when the session is compiled: a second
// run of a Loop, a Scan (also Scan-8's batched form) and an If on the cpu backend
// allocates nothing, child sessions included. Every
// global operator new of this binary is counted, so it is a binary of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/builder.h"
#include "runtime/ir/control_flow.h"
#include "runtime/ir/op_def.h"
#include "runtime/session.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

__attribute__((noinline)) void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Out of line, so the compiler never sees a new-expression paired with free().
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gkrt {
namespace {

// Allocations made while `fn` runs.
template <class Fn> long allocationsDuring(Fn&& fn) {
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

using Sub = std::shared_ptr<ir::Graph>;
Sub finished(GraphBuilder& b) {
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::make_shared<ir::Graph>(std::move(g).value());
}

// Loop(4) { h = h * 0.5 + bias; scan out h }, bias captured.
ir::Graph loopModel() {
  GraphBuilder body;
  body.input("i", DType::kInt64, {});
  Value cond = body.input("cond", DType::kBool, {});
  Value h = body.input("h", DType::kFloat32, {2, 3});
  Value bias = body.input("bias", DType::kFloat32, {2, 3});
  Value next = body.add(body.mul(h, 0.5f), bias);
  body.output(body.op1("Identity", {cond}), "cond_out");
  body.output(next, "h_out");
  body.output(body.mul(next, 2.0f), "h_scan");
  GraphBuilder b;
  Value h0 = b.input("h0", DType::kFloat32, {2, 3});
  Value bias_outer = b.input("bias", DType::kFloat32, {2, 3});
  const int64_t m = 4;
  auto outs = b.op("Loop", {b.constant("M", DType::kInt64, {}, &m), Value{}, h0, bias_outer}, LoopAttrs{4, 1}, 2, "loop",
                   {finished(body)});
  b.output(outs[0], "h_final");
  b.output(outs[1], "h_all");
  return *finished(b);
}

// Scan over axis 1 backwards, a running sum; `batched`: Scan-8 with a batch of 2.
ir::Graph scanModel(bool batched) {
  GraphBuilder body;
  Value s = body.input("s", DType::kFloat32, {3});
  Value col = body.input("col", DType::kFloat32, {3});
  Value next = body.add(s, col);
  body.output(next, "s_out");
  body.output(body.mul(next, 1.0f), "cum");
  GraphBuilder b;
  const Shape lead = batched ? Shape{2} : Shape{};
  auto with = [&](Shape s) { s.insert(s.begin(), lead.begin(), lead.end()); return s; };
  Value init = b.input("init", DType::kFloat32, with({3}));
  Value x = b.input("x", DType::kFloat32, with({3, 4}));
  ScanAttrs a;
  a.num_state = 1;
  a.num_scan_inputs = 1;
  a.scan_input_axes = {1};
  a.scan_input_directions = {1};
  a.batched = batched;
  auto outs = b.op("Scan", {init, x}, a, 2, "scan", {finished(body)});
  b.output(outs[0], "final");
  b.output(outs[1], "cumulative");
  return *finished(b);
}

ir::Graph ifModel() {
  GraphBuilder then_b, else_b;
  Value a = then_b.input("a", DType::kFloat32, {4});
  then_b.output(then_b.mul(a, 2.0f), "t");
  Value c = else_b.input("a", DType::kFloat32, {4});
  else_b.output(else_b.sub(c, 1.0f), "e");
  GraphBuilder b;
  Value cond = b.input("cond", DType::kBool, {});
  Value x = b.input("x", DType::kFloat32, {4});
  auto out = b.op("If", {cond, x}, IfAttrs{}, 1, "choose", {finished(then_b), finished(else_b)});
  b.output(out[0], "y");
  return *finished(b);
}

HostTensor filled(DType t, const Shape& s) {
  HostTensor h(t, s);
  std::memset(h.data(), 1, h.bytes());
  return h;
}

TEST(ControlFlowAllocations, ASecondRunAllocatesNothing) {
  const std::pair<const char*, ir::Graph> models[] = {
      {"Loop", loopModel()}, {"Scan", scanModel(false)}, {"Scan-8", scanModel(true)}, {"If", ifModel()}};
  for (const auto& [name, g] : models) {
    // The cpu backend: the reference backend's kernels (the oracle, kept obvious) may
    // allocate; the frame test below covers the control-flow part alone.
    for (const char* backend : {"cpu"}) {
      SessionOptions opts;
      opts.backend = backend;
      auto s = Session::create(g, opts);
      ASSERT_TRUE(s.ok()) << name << ": " << s.status().toString();
      for (const TensorInfo& in : (*s)->inputs()) ASSERT_TRUE((*s)->setInput(in.name, filled(in.dtype, in.shape)).ok());
      ASSERT_TRUE((*s)->run().ok()) << name;
      const size_t bytes = (*s)->allocatedBytes();
      Status second;
      const long count = allocationsDuring([&] { second = (*s)->run(); });
      ASSERT_TRUE(second.ok()) << name << " " << backend << ": " << second.toString();
      EXPECT_EQ(count, 0) << name << " on " << backend << " allocated at its second run";
      EXPECT_EQ((*s)->allocatedBytes(), bytes) << name;
    }
  }
}

// The frame alone, with a body that copies its carried input to its output: nothing is
// allocated by any run, the first included, once the frame is prepared.
TEST(ControlFlowAllocations, AFrameIsSizedWhenPrepared) {
  const ir::Graph g = loopModel();
  const ir::Node& loop = g.nodes.back();
  ASSERT_STREQ(loop.op->name, "Loop");
  std::vector<TensorView> in;
  for (int t : loop.inputs) in.push_back(t < 0 ? TensorView{} : TensorView{g.tensors[size_t(t)].dtype, g.tensors[size_t(t)].shape, nullptr});
  std::vector<MutableTensorView> out;
  for (int t : loop.outputs) out.push_back({g.tensors[size_t(t)].dtype, g.tensors[size_t(t)].shape, nullptr});
  auto frame = ir::ControlFlowFrame::prepare(loop, in, out);
  ASSERT_TRUE(frame.ok()) << frame.status().toString();
  const size_t bytes = frame->bufferBytes();
  EXPECT_GE(bytes, 2 * 6 * sizeof(float) + sizeof(int64_t) + 2);  // h current and next, iteration, cond in/out
  std::vector<float> h0(6, 1.0f), bias(6, 0.0f), h_final(6), h_all(24);
  in[2].data = h0.data();
  in[3].data = bias.data();
  out[0].data = h_final.data();
  out[1].data = h_all.data();
  int steps = 0;
  ir::SubgraphRunner body = [&](size_t, const std::vector<TensorView>& bi, const std::vector<MutableTensorView>& bo) {
    *static_cast<uint8_t*>(bo[0].data) = 1;
    std::memcpy(bo[1].data, bi[2].data, 6 * sizeof(float));
    std::memcpy(bo[2].data, bi[2].data, 6 * sizeof(float));
    ++steps;
    return Status::Ok();
  };
  for (int run = 0; run < 2; ++run) {
    Status st;
    EXPECT_EQ(allocationsDuring([&] { st = ir::runControlFlow(loop, in, out, body, *frame); }), 0) << "run " << run;
    ASSERT_TRUE(st.ok()) << st.toString();
  }
  EXPECT_EQ(steps, 8);
  EXPECT_EQ(frame->bufferBytes(), bytes);
  EXPECT_EQ(h_all[23], 1.0f);
}

}  // namespace
}  // namespace gkrt
