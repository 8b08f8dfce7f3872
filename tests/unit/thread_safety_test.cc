// What docs/threads.md promises, checked (and run under TSan by the tsan preset):
//  - N threads, each with its own session of one model (sharing its constants), run
//    concurrently and get the single-threaded outputs;
//  - one session run from several threads in turn gets them too;
// on cpu and on opencl (skipped with the reason where there is no OpenCL device).
// The model: GKRT_THREAD_TEST_MODEL, else $GKRT_ZOO_DIR/transformer_block.gkm (the zoo's
// transformer block, docs/threads.md), else (CI) a 64x64 elementwise chain.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "runtime/builder.h"
#include "runtime/model_io.h"
#include "runtime/session.h"

namespace gkrt {
namespace {

ir::Graph testModel() {
  std::string path;
  if (const char* m = std::getenv("GKRT_THREAD_TEST_MODEL")) path = m;
  else if (const char* z = std::getenv("GKRT_ZOO_DIR")) path = std::string(z) + "/transformer_block.gkm";
  if (std::getenv("GKRT_THREAD_TEST_MODEL") && !std::filesystem::exists(path)) {
    ADD_FAILURE() << "GKRT_THREAD_TEST_MODEL names " << path << ", which does not exist; convert it first "
                  << "(gkrt convert build/zoo/transformer_block.onnx -o " << path << ")";
  }
  if (!path.empty() && std::filesystem::exists(path)) {
    auto g = loadModelFile(path);
    if (g.ok()) return std::move(g).value();
    ADD_FAILURE() << g.status().message();
  }
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {64, 64});
  auto y = b.input("y", DType::kFloat32, {64, 64});
  b.output(b.mul(b.sub(b.add(b.mul(x, 2.0f), 1.0f), y), x), "result");  // the seeds' ((x*2+1)-y)*x
  return std::move(b.finish()).value();
}

std::map<std::string, HostTensor> inputsFor(const Session& s) {
  std::map<std::string, HostTensor> in;
  for (const TensorInfo& i : s.inputs()) {
    HostTensor t(i.dtype, i.shape);
    for (int64_t k = 0; k < t.size(); ++k) t.as<float>()[k] = 0.25f * std::sin(0.1f * static_cast<float>(k));
    in[i.name] = t;
  }
  return in;
}

using Outputs = std::vector<std::vector<float>>;

Status runOnce(Session& s, const std::map<std::string, HostTensor>& in, Outputs* out) {
  for (const auto& [name, t] : in) RETURN_IF_ERROR(s.setInput(name, t));
  RETURN_IF_ERROR(s.run());
  out->clear();
  for (const TensorInfo& o : s.outputs()) {
    ASSIGN_OR_RETURN(HostTensor t, s.output(o.name));
    out->push_back(t.toFloats());
  }
  return Status::Ok();
}

void expectSame(const Outputs& got, const Outputs& want, const std::string& who) {
  ASSERT_EQ(got.size(), want.size()) << who;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size()) << who;
    for (size_t i = 0; i < got[k].size(); ++i) {
      ASSERT_NEAR(got[k][i], want[k][i], 1e-5f * (1.0f + std::fabs(want[k][i]))) << who << ", output " << k << " element " << i;
    }
  }
}

class ThreadSafety : public ::testing::TestWithParam<const char*> {};

TEST_P(ThreadSafety, SessionsPerThreadAndOneSessionInTurn) {
  const ir::Graph model = testModel();
  SessionOptions o;
  o.backend = GetParam();
  auto single = Session::create(model, o);
  if (!single.ok() && single.status().code() != StatusCode::kInvalidModel && std::string(GetParam()) != "cpu") {
    GTEST_SKIP() << GetParam() << ": " << single.status().message();
  }
  ASSERT_TRUE(single.ok()) << single.status().message();
  const auto in = inputsFor(**single);
  Outputs want;
  ASSERT_TRUE(runOnce(**single, in, &want).ok());

  constexpr int kThreads = 4, kRuns = 3;
  std::vector<Outputs> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto s = Session::create(model, o);  // one session per thread, constants shared through `model`
      if (!s.ok()) { errors[t] = s.status().message(); return; }
      for (int r = 0; r < kRuns; ++r) {
        Status st = runOnce(**s, in, &got[t]);
        if (!st.ok()) { errors[t] = st.message(); return; }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    expectSame(got[t], want, "concurrent session " + std::to_string(t));
  }

  for (int t = 0; t < kThreads; ++t) {  // the first session, handed from thread to thread
    Outputs out;
    Status st;
    std::thread([&] { st = runOnce(**single, in, &out); }).join();
    ASSERT_TRUE(st.ok()) << st.message();
    expectSame(out, want, "shared session, turn " + std::to_string(t));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ThreadSafety, ::testing::Values("cpu", "opencl"));

}  // namespace
}  // namespace gkrt
