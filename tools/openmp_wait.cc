#include "tools/openmp_wait.h"

#include <climits>
#include <cstdlib>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace gkrt::tools {

void boundOpenMpSpinning(char** argv) {
#if defined(__linux__) && defined(GKRT_HAVE_OPENMP)
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;  // the user's choice
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  if (setenv("GOMP_SPINCOUNT", kOpenMpSpinCount, 0) != 0) return;
  execv(self, argv);  // returns only on failure (e.g. an emulator's binary): go on as we are
#else
  (void)argv;
#endif
}

}  // namespace gkrt::tools
