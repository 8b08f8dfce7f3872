// The two ceilings of the roofline `gkrt bench --svg` draws, measured on this machine:
// a quick STREAM-style triad (a[i] = b[i] + s * c[i], float32, 12 bytes per element) for
// memory bandwidth, and a fused multiply-add loop at the CPU tier's vector width for
// peak float32 compute; both on std::threads. bench/triad.cc is the benchmark suite's
// longer triad.
#pragma once

namespace gkrt::tools {

// Best GB/s over `repeats` passes over three arrays of `elements` floats each, on
// `threads` threads (0 = every core). Arrays are touched once before timing.
double measureTriadGBps(long elements = 4L << 20, int threads = 0, int repeats = 8);
// Best GFLOP/s (a multiply-add counts two) of independent FMA chains in registers, on
// `threads` threads (0 = every core), at the vector width of the effective CPU tier.
double measurePeakGflops(int threads = 0, int repeats = 5);

}  // namespace gkrt::tools
