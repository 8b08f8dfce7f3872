// A quick STREAM-style triad (a[i] = b[i] + s * c[i], float32, 12 bytes per element)
// on std::threads: the memory bandwidth that `gkrt bench --svg` draws the fused
// kernels' GB/s against. bench/triad.cc is the benchmark suite's longer version.
#pragma once

namespace gkrt::tools {

// Best GB/s over `repeats` passes over three arrays of `elements` floats each, on
// `threads` threads (0 = every core). Arrays are touched once before timing.
double measureTriadGBps(long elements = 4L << 20, int threads = 0, int repeats = 8);

}  // namespace gkrt::tools
