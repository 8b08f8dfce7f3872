#include "tools/openmp_wait.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <time.h>
#include <unistd.h>
#endif

namespace gkrt::tools {

const char* openMpSpinCountFor(int others, int cpus) {
  return others < std::max(1, cpus / 4) ? kOpenMpSpinCountIdle : kOpenMpSpinCountBusy;
}

namespace {

#if defined(__linux__)
// Runnable processes besides this one: the fewest of three samples (a process that
// just started or is about to sleep does not count), or -1 when /proc is not there.
int otherRunnable() {
  int fewest = INT_MAX;
  for (int k = 0; k < 3; ++k) {
    if (k) {
      const timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
    }
    FILE* f = std::fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double l1, l5, l15;
    int running = 0, total = 0;
    const int got = std::fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total);
    std::fclose(f);
    if (got != 5) return -1;
    fewest = std::min(fewest, running - 1);
  }
  return std::max(fewest, 0);
}
#endif

}  // namespace

void boundOpenMpSpinning(char** argv) {
#if defined(__linux__) && defined(GKRT_HAVE_OPENMP)
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;  // the user's choice
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  const int others = otherRunnable();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const char* spin = others < 0 ? kOpenMpSpinCountBusy : openMpSpinCountFor(others, cpus > 0 ? int(cpus) : 1);
  if (setenv("GOMP_SPINCOUNT", spin, 0) != 0) return;
  execv(self, argv);  // returns only on failure (e.g. an emulator's binary): go on as we are
#else
  (void)argv;
#endif
}

}  // namespace gkrt::tools
