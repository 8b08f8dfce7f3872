// Test-only fault injection (docs/errors.md). $GKRT_FAULT names fault
// points, comma-separated; each makes one kind of I/O fail the way a broken machine does,
// so tests check gkrt's messages and fallbacks without root rights, a full disk or a
// missing driver:
//   cache_read_only  program-cache writes fail as in a read-only directory (EROFS)
//   cache_full       program-cache writes stop half way with ENOSPC, as on a full disk
//   output_full      output files (`gkrt run --output-dir`, writeNpy) stop half way with ENOSPC
// (a half-written file is really left on disk, so the tests check that gkrt removes it).
// The missing-driver faults need no hook: OCL_ICD_VENDORS=/nonexistent hides every OpenCL
// platform from the ICD loader, GKRT_CUDA_DRIVER=/nonexistent.so every CUDA driver.
// Read at every call (the points are on slow paths), so a test may setenv() it.
#pragma once

#include <cstdio>
#include <string_view>

namespace gkrt {

bool faultInjected(std::string_view point);

// fwrite, except that under the fault `full_point` it writes half of the bytes and fails
// with errno ENOSPC, as a disk that fills up during the write.
size_t writeOrFault(const void* data, size_t bytes, std::FILE* f, std::string_view full_point);

}  // namespace gkrt
