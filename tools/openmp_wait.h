// How long the CLI's OpenMP threads spin before they sleep. libgomp (the OpenMP runtime
// oneDNN and the cpu backend share, backends/cpu/thread_pool.h) spins 300,000 rounds
// after each parallel region unless told otherwise; on a machine with other work that
// spinning takes the cores the next region needs: `gkrt bench` at 2 threads on a loaded
// 2-core machine ran DenseNet-121 3-20x slower than at 1 thread (README: Threads and
// OpenMP). A short spin still covers the gap between two kernels of a run.
//
// libgomp reads its environment once, while it is loaded, before main() (and glibc
// rebuilds the environment after an executable's pre-initialisers), so the CLI sets
// GOMP_SPINCOUNT and executes itself again, once, first thing in main(). A value the
// user set (GOMP_SPINCOUNT or OMP_WAIT_POLICY) wins and nothing is re-executed. An
// application embedding gkrt sets these in its own environment.
#pragma once

namespace gkrt::tools {

constexpr const char* kOpenMpSpinCount = "1000";

void boundOpenMpSpinning(char** argv);

}  // namespace gkrt::tools
