#include "tools/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace gkrt::tools {

double measureTriadGBps(long elements, int threads, int repeats) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<float> a(elements), b(elements), c(elements);
  auto parallel = [&](const std::function<void(long, long)>& body) {
    std::vector<std::thread> pool;
    const long chunk = (elements + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      const long lo = std::min(elements, t * chunk), hi = std::min(elements, lo + chunk);
      pool.emplace_back(body, lo, hi);
    }
    for (std::thread& th : pool) th.join();
  };
  parallel([&](long lo, long hi) {  // first touch by the threads that stream the pages
    for (long i = lo; i < hi; ++i) a[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f;
  });
  double best = 1e30;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    parallel([&](long lo, long hi) {
      float* __restrict pa = a.data();
      const float* __restrict pb = b.data();
      const float* __restrict pc = c.data();
      for (long i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    });
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return a[elements / 2] == 7.0f && best > 0 ? 12.0 * elements / best / 1e9 : 0.0;
}

}  // namespace gkrt::tools
