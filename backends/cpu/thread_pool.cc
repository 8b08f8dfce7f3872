#include "backends/cpu/thread_pool.h"

#include <algorithm>

#ifdef GKRT_HAVE_OPENMP
#include <omp.h>
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_OPENMP
ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = omp_get_num_procs();
  omp_set_num_threads(num_threads);  // oneDNN's primitives use the same count
  openmp_threads_ = num_threads;
}
#else
ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}
#endif

#ifdef GKRT_HAVE_OPENMP
OneThreadScope::OneThreadScope() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
OneThreadScope::~OneThreadScope() { omp_set_num_threads(saved_); }
#else
OneThreadScope::OneThreadScope() = default;
OneThreadScope::~OneThreadScope() = default;
#endif

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::runShare(int thread) {
  const int64_t begin = thread * chunk_, end = std::min(n_, begin + chunk_);
  if (begin < end) fn_(thread, begin, end);
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little (a run's kernels follow each other closely), then sleep.
    for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    if (index < active_) runShare(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, int64_t min_per_thread, Task fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_thread));
  const int threads = static_cast<int>(std::min<int64_t>(size(), by_size));
  if (threads <= 1) {
    fn(0, 0, n);
    return;
  }
  int64_t chunk = (n + threads - 1) / threads;
  chunk = (chunk + grain - 1) / grain * grain;
#ifdef GKRT_HAVE_OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end) fn(t, begin, end);
  }
  return;
#endif
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    n_ = n;
    chunk_ = chunk;
    active_ = threads;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  runShare(0);
  while (pending_.load(std::memory_order_acquire) != 0) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace gkrt::cpu
