#include "tools/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace gkrt::tools {
namespace {

constexpr int kChains = 12;       // independent accumulators: covers FMA latency x ports
constexpr long kIterations = 1L << 21;

// Each returns the FLOPs done; `seed` keeps the compiler from folding the loop.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fmaLoop512(float seed) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(seed + i);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  alignas(64) float lanes[16];
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes) sink += v;
  }
  return sink == 12345.0f ? 0 : 2.0 * 16 * kChains * kIterations;
}
__attribute__((target("avx2,fma"))) double fmaLoop256(float seed) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(seed + i);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  alignas(32) float lanes[8];
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float v : lanes) sink += v;
  }
  return sink == 12345.0f ? 0 : 2.0 * 8 * kChains * kIterations;
}
#elif defined(__aarch64__)
double fmaLoopNeon(float seed) {
  float32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_f32(seed + i);
  const float32x4_t m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = vfmaq_f32(c, acc[i], m);
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += vaddvq_f32(acc[i]);
  return sink == 12345.0f ? 0 : 2.0 * 4 * kChains * kIterations;
}
#endif
double fmaLoopScalar(float seed) {
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = seed + i;
  for (long it = 0; it < kIterations / 8; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  float sink = 0;
  for (float v : acc) sink += v;
  return sink == 12345.0f ? 0 : 2.0 * kChains * (kIterations / 8);
}

double fmaLoop(float seed) {
  const cpu::CpuTier& tier = cpu::cpuTier();
#if defined(__x86_64__)
  if (tier.has(cpu::CpuIsa::kAvx512)) return fmaLoop512(seed);
  if (tier.has(cpu::CpuIsa::kAvx2)) return fmaLoop256(seed);
#elif defined(__aarch64__)
  if (tier.has(cpu::CpuIsa::kNeon)) return fmaLoopNeon(seed);
#endif
  (void)tier;
  return fmaLoopScalar(seed);
}

}  // namespace

double measurePeakGflops(int threads, int repeats) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double best = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    std::vector<double> flops(threads);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&flops, t]() { flops[t] = fmaLoop(0.5f + t); });
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    if (s > 0) best = std::max(best, total / s / 1e9);
  }
  return best;
}

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
