// Benchmark charts as standalone SVG, for `gkrt bench --svg chart.svg`.
//
//   BenchChart c;
//   c.title = "mynet_myop.gkm, 2 threads";
//   c.latency.push_back({"cpu", "fusion on", 0.010, 0.012, 0.020});   // p10, p50, p90 in ms
//   c.kernels.push_back({"cpu: fused_0 (Mul, Pow, Sub, Mul)", 64, 192, 1e-6});  // FLOPs, bytes, seconds
//   c.memory_gbps = 13.2;                                   // triad probe
//   c.peak_gflops = 70.4;                                   // FMA probe
//   std::string svg = benchChartToSvg(c);
//
// Left panel: p50 latency bars with p10-p90 whiskers, one per backend x fusion
// setting, on a log axis when they span more than a factor of 10 (cpu next to
// reference). Right panel: a roofline: each kernel at its arithmetic intensity
// (FLOP/byte) against its achieved GFLOP/s, both log, under the measured memory
// bandwidth and compute ceilings; the kernels are numbered slowest first and listed
// below. Each series is a <g class="series"> carrying data-panel, data-label and its
// numbers, so tests (and scripts) can read them back.
#pragma once

#include <string>
#include <vector>

namespace gkrt::tools {

// A minimal SVG document writer: escapes text, formats numbers, nothing more.
class SvgWriter {
 public:
  SvgWriter(double width, double height);
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& extra = "");
  // anchor: start, middle or end; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 12, const std::string& anchor = "start",
            double rotate = 0, const std::string& extra = "");
  void beginGroup(const std::string& attributes);
  void endGroup();
  std::string finish();

  static std::string escape(const std::string& s);
  static std::string number(double v);

 private:
  std::string body_;
  double width_, height_;
};

struct LatencySeries {
  std::string backend, setting;  // "cpu", "fusion on"
  double p10 = 0, p50 = 0, p90 = 0;  // milliseconds
};

struct KernelPoint {
  std::string label;  // "cpu: fused_0 (Mul, Add)"
  double flops = 0, bytes = 0, seconds = 0;  // per run
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
  double gflops() const { return seconds > 0 ? flops / seconds / 1e9 : 0; }
};

struct BenchChart {
  std::string title;
  std::vector<LatencySeries> latency;
  std::vector<KernelPoint> kernels;  // numbered in the order given
  double memory_gbps = 0;            // 0: no memory ceiling
  double peak_gflops = 0;            // 0: no compute ceiling
  std::string memory_label = "memory bandwidth (triad probe)";
  std::string compute_label = "peak float32 FMA (probe)";
};

std::string benchChartToSvg(const BenchChart& chart);

// A round axis step for values up to `max` with about `ticks` ticks (1, 2 or 5 x 10^k).
double niceStep(double max, int ticks);

}  // namespace gkrt::tools
