// The generator on a real decoder (tests/models/check_llm.py runs it on each form of
// SmolLM2): greedy ids through the C API, the same through the C++ API with every
// operator new counted across decode steps (none allowed after the first), and a
// context overflow reported as an error. Every global operator new of this binary is
// counted, so it is a program of its own.
//
//   gkrt_generator_check MODEL.gkm BACKEND PROMPT_IDS(comma) EXPECTED_IDS(comma)
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/generator.h"
#include "runtime/gkrt_c.h"
#include "runtime/model_io.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// GKRT_DEBUG_ALLOC=1 prints a backtrace of each counted allocation (addr2line -f -C -e).
#include <execinfo.h>
__attribute__((noinline)) void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("GKRT_DEBUG_ALLOC")) {
      g_counting = false;
      void* frames[12];
      backtrace_symbols_fd(frames, backtrace(frames, 12), 2);
      std::fprintf(stderr, "----\n");
      g_counting = true;
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

std::vector<int64_t> parseIds(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoll(item));
  return v;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

int onToken(int64_t id, void* user) {
  static_cast<std::vector<int64_t>*>(user)->push_back(id);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.gkm BACKEND PROMPT_IDS EXPECTED_IDS\n", argv[0]);
    return 2;
  }
  const std::string backend = argv[2];
  const std::vector<int64_t> prompt = parseIds(argv[3]), expected = parseIds(argv[4]);
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
  };

  // 1. The C API: greedy, the expected ids.
  gkrt_model* model = nullptr;
  gkrt_generator* gen = nullptr;
  if (gkrt_model_load(argv[1], &model) || gkrt_generator_create(model, backend.c_str(), 0, 256, &gen)) {
    std::fprintf(stderr, "%s\n", gkrt_last_error());
    return 1;
  }
  gkrt_generate_options o;
  gkrt_generate_options_init(&o);
  o.max_new_tokens = static_cast<int64_t>(expected.size());
  std::vector<int64_t> got;
  const gkrt_status s = gkrt_generate(gen, prompt.data(), prompt.size(), &o, onToken, &got);
  check(s == GKRT_OK && got == expected, "C API greedy ids [" + join(got) + "], expected [" + join(expected) + "]" +
                                             (s ? std::string(": ") + gkrt_last_error() : ""));
  gkrt_generator_free(gen);
  gkrt_model_free(model);

  // 2. No allocation in decode steps (C++ API; the first step switches to the decode plan).
  auto graph = gkrt::loadModelFile(argv[1]);
  if (!graph.ok()) return std::fprintf(stderr, "%s\n", graph.status().toString().c_str()), 1;
  gkrt::GeneratorOptions go;
  go.backend = backend;
  go.max_context = static_cast<int64_t>(prompt.size() + expected.size()) + 1;
  auto g = gkrt::Generator::create(*graph, go);
  if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().toString().c_str()), 1;
  gkrt::Generator& G = **g;
  bool ok = G.append(prompt.data(), prompt.size()).ok();
  std::vector<int64_t> ids;
  ids.reserve(expected.size());  // the check's own vector: no growth while counting
  ids.push_back(G.sample({}));
  long steps = 0, allocations = 0;
  for (size_t i = 1; ok && i < expected.size(); ++i) {
    const int64_t last = ids.back();
    if (i > 1) { g_allocations = 0; g_counting = true; }
    ok = G.append(&last, 1).ok();
    ids.push_back(G.sample({}));
    if (i > 1) { g_counting = false; allocations += g_allocations.load(); ++steps; }
  }
  check(ok && ids == expected, "C++ API greedy ids [" + join(ids) + "]");
  check(allocations == 0, std::to_string(allocations) + " allocations in " + std::to_string(steps) + " decode steps");

  // 3. The context is full: an error naming it; the generator stays usable after reset().
  const int64_t one = ids.back();
  gkrt::Status st = gkrt::Status::Ok();
  for (int k = 0; k < 4 && st.ok(); ++k) st = G.append(&one, 1);  // 2 positions are left
  check(!st.ok() && st.message().find("context is full") != std::string::npos, "overflow: " + st.toString());
  G.reset();
  check(G.append(prompt.data(), prompt.size()).ok() && G.sample({}) == expected[0], "after reset() the prompt gives the first id again");
  return failures ? 1 : 0;
}
