// STREAM-style triad, a[i] = b[i] + s * c[i] over float arrays, as the memory
// bandwidth reference of the benchmark suite: prints the best GB/s (12 bytes moved
// per element: two reads, one write) at the given thread count.
//
//   gkrt_triad ELEMENTS THREADS
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 16L << 20;
  const int threads = argc > 2 ? std::atoi(argv[2]) : omp_get_num_procs();
  omp_set_num_threads(threads);
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 1e30;
  for (int rep = 0; rep < 20; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("%.3f\n", 12.0 * n / best / 1e9);
  return a[n / 2] == 7.0f ? 0 : 1;
}
