// The thread pool of the cpu backend's kernels. Built with OpenMP (the default where
// the compiler has it), it is OpenMP's pool, the same threads oneDNN (Debian's libdnnl
// uses the OpenMP runtime) runs on: one pool, no oversubscription. Without OpenMP it
// is a fixed set of workers; the calling thread takes part, workers spin briefly after
// a job (a warm pool forks in ~1 us) and then sleep.
//
//   ThreadPool pool(4);
//   pool.parallelFor(n, [&](int64_t begin, int64_t end) { ... });   // blocks until done
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace gkrt::cpu {

// oneDNN's primitives run on OpenMP with the pool's thread count; within this scope they
// run on the calling thread alone (a primitive too small to pay for the parallel region
// it opens per step: a small LSTM's 24 a run cost more than its arithmetic at 2 threads).
// A oneDNN matmul of fewer multiply-adds than this is made and run within one
// (OneThreadScope): at 2 threads an 8 x 256 x 128 product took 5 us split, 2 us alone.
constexpr int64_t kSerialMatMulMacs = 1 << 20;
class OneThreadScope {
 public:
  OneThreadScope();
  ~OneThreadScope();
  OneThreadScope(const OneThreadScope&) = delete;
  OneThreadScope& operator=(const OneThreadScope&) = delete;

 private:
  int saved_ = 0;
};

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // <= 0: every core
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return openmp_threads_ > 0 ? openmp_threads_ : static_cast<int>(workers_.size()) + 1; }
  // Splits [0, n) into size() contiguous ranges of `grain`-aligned length (the last may
  // be shorter) and runs fn on each; ranges below `min_per_thread` elements run inline.
  // `fn` is called as fn(int thread, int64_t begin, int64_t end); it is passed by
  // reference, never copied (a std::function would allocate for larger captures, and
  // runs allocate nothing).
  template <class Fn> void parallelFor(int64_t n, int64_t grain, int64_t min_per_thread, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(n, grain, min_per_thread, {const_cast<void*>(static_cast<const void*>(&fn)), [](void* f, int t, int64_t b, int64_t e) {
          (*static_cast<F*>(f))(t, b, e);
        }});
  }

 private:
  struct Task {  // a callable by reference
    void* fn;
    void (*call)(void* fn, int thread, int64_t begin, int64_t end);
    void operator()(int thread, int64_t begin, int64_t end) const { call(fn, thread, begin, end); }
  };
  void run(int64_t n, int64_t grain, int64_t min_per_thread, Task fn);
  void workerLoop(int index);
  void runShare(int thread);

  int openmp_threads_ = 0;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  // The current job.
  Task fn_{};
  int64_t n_ = 0, chunk_ = 0;
  int active_ = 0;
};

}  // namespace gkrt::cpu
