#include "tools/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gkrt::tools {

SvgWriter::SvgWriter(double width, double height) : width_(width), height_(height) {}

std::string SvgWriter::escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string SvgWriter::number(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void SvgWriter::rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra) {
  body_ += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(std::max(0.0, w)) + "\" height=\"" +
           number(std::max(0.0, h)) + "\" fill=\"" + escape(fill) + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
}

void SvgWriter::circle(double cx, double cy, double r, const std::string& fill, const std::string& extra) {
  body_ += "<circle cx=\"" + number(cx) + "\" cy=\"" + number(cy) + "\" r=\"" + number(r) + "\" fill=\"" + escape(fill) + "\"" +
           (extra.empty() ? "" : " " + extra) + "/>\n";
}

void SvgWriter::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                     const std::string& extra) {
  body_ += "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" + number(y2) +
           "\" stroke=\"" + escape(stroke) + "\" stroke-width=\"" + number(width) + "\"" +
           (extra.empty() ? "" : " " + extra) + "/>\n";
}

void SvgWriter::text(double x, double y, const std::string& s, double size, const std::string& anchor, double rotate,
                     const std::string& extra) {
  body_ += "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" + number(size) + "\" text-anchor=\"" +
           anchor + "\"";
  if (rotate != 0) body_ += " transform=\"rotate(" + number(rotate) + " " + number(x) + " " + number(y) + ")\"";
  body_ += (extra.empty() ? "" : " " + extra) + ">" + escape(s) + "</text>\n";
}

void SvgWriter::beginGroup(const std::string& attributes) { body_ += "<g " + attributes + ">\n"; }
void SvgWriter::endGroup() { body_ += "</g>\n"; }

std::string SvgWriter::finish() {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         number(width_) + "\" height=\"" + number(height_) + "\" viewBox=\"0 0 " + number(width_) + " " +
         number(height_) + "\" font-family=\"Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         body_ + "</svg>\n";
}

double niceStep(double max, int ticks) {
  if (!(max > 0) || ticks < 1) return 1;
  const double raw = max / ticks, base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) if (raw <= m * base) return m * base;
  return 10 * base;
}

namespace {

struct Box {
  double left, top, right, bottom;
};

std::string attr(const std::string& name, const std::string& value) { return name + "=\"" + SvgWriter::escape(value) + "\""; }

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// An axis tick: as many decimals as the step needs.
std::string tickText(double v, double step) {
  const int digits = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fixed(v, digits);
}

std::string shortNumber(double v) { return fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3); }

std::string colourOf(const std::string& setting) {
  if (setting == "fusion on") return "#1a73e8";
  if (setting == "fusion off") return "#f29900";
  return "#5f6368";
}

// A value axis, linear from 0 or log10 over whole decades.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  double frac(double v) const {  // 0 at lo, 1 at hi
    if (log) return (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return std::min(v, hi) / hi;
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      for (double d = lo; d <= hi * 1.0001; d *= 10) t.push_back(d);
    } else {
      const double step = niceStep(hi, 5);
      for (double v = 0; v <= hi + step / 2; v += step) t.push_back(v);
    }
    return t;
  }
  std::string tick(double v) const {
    if (!log) return tickText(v, niceStep(hi, 5));
    return v >= 1 ? fixed(v, 0) : fixed(v, static_cast<int>(std::ceil(-std::log10(v) - 1e-9)));
  }
};

Axis logAxis(double lo, double hi) {
  Axis a;
  a.log = true;
  lo = lo > 0 ? lo : 1e-3;
  hi = std::max(hi, lo * 10);
  a.lo = std::pow(10.0, std::floor(std::log10(lo)));
  a.hi = std::pow(10.0, std::ceil(std::log10(hi)));
  return a;
}

void latencyPanel(SvgWriter& w, const Box& b, const std::vector<LatencySeries>& series) {
  double max = 0, min = 1e300;
  for (const LatencySeries& s : series) {
    max = std::max({max, s.p90, s.p50});
    if (s.p50 > 0) min = std::min(min, s.p10 > 0 ? s.p10 : s.p50);
  }
  Axis axis;  // backends far apart (cpu 12 ms, reference 3,870 ms): decades, so every bar shows
  if (min < 1e300 && max > 10 * min) {
    axis = logAxis(min, max);
  } else {
    const double step = niceStep(max * 1.05, 5);
    axis.hi = std::max(step, std::ceil(max * 1.05 / step) * step);
  }
  auto y = [&](double v) { return b.bottom - (b.bottom - b.top) * axis.frac(v); };
  for (double v : axis.ticks()) {
    w.line(b.left, y(v), b.right, y(v), "#e0e0e0");
    w.text(b.left - 6, y(v) + 4, axis.tick(v), 11, "end");
  }
  w.line(b.left, b.top, b.left, b.bottom, "#3c4043");
  w.line(b.left, b.bottom, b.right, b.bottom, "#3c4043");
  w.text(b.left - 52, (b.top + b.bottom) / 2,
         std::string("latency per run (ms") + (axis.log ? ", log scale" : "") + "): p50 bar, p10-p90 whisker", 13, "middle", -90);
  w.text((b.left + b.right) / 2, b.bottom + 58, "backend, fusion setting", 13, "middle");
  const double slot = (b.right - b.left) / std::max<size_t>(1, series.size()), bar = std::min(70.0, slot * 0.55);
  for (size_t i = 0; i < series.size(); ++i) {
    const LatencySeries& s = series[i];
    const double cx = b.left + slot * (i + 0.5);
    w.beginGroup("class=\"series\" " + attr("data-panel", "latency") + " " + attr("data-label", s.backend + " " + s.setting) +
                 " " + attr("data-p10-ms", SvgWriter::number(s.p10)) + " " + attr("data-p50-ms", SvgWriter::number(s.p50)) +
                 " " + attr("data-p90-ms", SvgWriter::number(s.p90)));
    w.rect(cx - bar / 2, y(s.p50), bar, b.bottom - y(s.p50), colourOf(s.setting));
    w.line(cx, y(s.p90), cx, y(s.p10), "#202124", 1.5);
    w.line(cx - bar / 4, y(s.p90), cx + bar / 4, y(s.p90), "#202124", 1.5);
    w.line(cx - bar / 4, y(s.p10), cx + bar / 4, y(s.p10), "#202124", 1.5);
    w.text(cx, y(s.p90) - 6, shortNumber(s.p50) + " ms", 11, "middle");
    w.text(cx, b.bottom + 18, s.backend, 12, "middle");
    w.text(cx, b.bottom + 34, s.setting, 11, "middle");
    w.endGroup();
  }
}

std::string backendColour(const std::string& label) {
  static const char* colours[] = {"#1a73e8", "#d93025", "#188038", "#9334e6", "#e37400"};
  static std::vector<std::string> seen;
  const std::string backend = label.substr(0, label.find(':'));
  auto at = std::find(seen.begin(), seen.end(), backend);
  if (at == seen.end()) at = seen.insert(seen.end(), backend);
  return colours[(at - seen.begin()) % 5];
}

// Kernels at (FLOP/byte, GFLOP/s) under the bandwidth roof (GB/s x FLOP/byte) and the
// compute roof; a kernel on the slanted roof is memory-bound, on the flat one compute-bound.
void rooflinePanel(SvgWriter& w, const Box& b, const std::vector<KernelPoint>& kernels, const BenchChart& c) {
  double ai_lo = 1e300, ai_hi = 0, g_lo = 1e300, g_hi = std::max(c.peak_gflops, 0.0);
  for (const KernelPoint& k : kernels) {
    if (k.intensity() <= 0 || k.gflops() <= 0) continue;
    ai_lo = std::min(ai_lo, k.intensity()), ai_hi = std::max(ai_hi, k.intensity());
    g_lo = std::min(g_lo, k.gflops()), g_hi = std::max(g_hi, k.gflops());
  }
  const double ridge = c.memory_gbps > 0 && c.peak_gflops > 0 ? c.peak_gflops / c.memory_gbps : 0;
  if (ai_hi == 0) ai_lo = 0.1, ai_hi = 10, g_lo = std::max(0.1, g_hi / 1000), g_hi = std::max(g_hi, 1.0);
  const Axis ax = logAxis(std::min(ai_lo, ridge > 0 ? ridge : ai_lo) / 2, std::max(ai_hi, ridge) * 2);
  const Axis ay = logAxis(std::min(g_lo, c.memory_gbps > 0 ? c.memory_gbps * ax.lo : g_lo) / 1.5, g_hi * 1.5);
  auto x = [&](double v) { return b.left + (b.right - b.left) * ax.frac(v); };
  auto y = [&](double v) { return b.bottom - (b.bottom - b.top) * ay.frac(v); };
  for (double v : ax.ticks()) {
    w.line(x(v), b.top, x(v), b.bottom, "#e0e0e0");
    w.text(x(v), b.bottom + 16, ax.tick(v), 11, "middle");
  }
  for (double v : ay.ticks()) {
    w.line(b.left, y(v), b.right, y(v), "#e0e0e0");
    w.text(b.left - 6, y(v) + 4, ay.tick(v), 11, "end");
  }
  w.line(b.left, b.top, b.left, b.bottom, "#3c4043");
  w.line(b.left, b.bottom, b.right, b.bottom, "#3c4043");
  w.text((b.left + b.right) / 2, b.bottom + 36, "arithmetic intensity (FLOP/byte, log)", 13, "middle");
  w.text(b.left - 46, (b.top + b.bottom) / 2, "achieved GFLOP/s (log)", 13, "middle", -90);
  if (c.memory_gbps > 0) {  // slanted roof up to the ridge (or the panel's edge)
    const double end = ridge > 0 ? ridge : ax.hi;
    const double start = std::max(ax.lo, ay.lo / c.memory_gbps);
    w.beginGroup("class=\"series\" " + attr("data-panel", "roofline") + " " + attr("data-label", c.memory_label) + " " +
                 attr("data-gbps", SvgWriter::number(c.memory_gbps)));
    w.line(x(start), y(c.memory_gbps * start), x(end), y(std::min(c.memory_gbps * end, ay.hi)), "#d93025", 2,
           "stroke-dasharray=\"6 4\"");
    w.text(x(start) + 4, y(c.memory_gbps * start) - 8, c.memory_label + ": " + shortNumber(c.memory_gbps) + " GB/s", 11,
           "start", 0, "fill=\"#d93025\"");
    w.endGroup();
  }
  if (c.peak_gflops > 0) {
    w.beginGroup("class=\"series\" " + attr("data-panel", "roofline") + " " + attr("data-label", c.compute_label) + " " +
                 attr("data-gflops", SvgWriter::number(c.peak_gflops)));
    w.line(x(ridge > 0 ? ridge : ax.lo), y(c.peak_gflops), b.right, y(c.peak_gflops), "#5f6368", 2, "stroke-dasharray=\"6 4\"");
    w.text(b.right - 4, y(c.peak_gflops) - 6, c.compute_label + ": " + shortNumber(c.peak_gflops) + " GFLOP/s", 11, "end", 0,
           "fill=\"#5f6368\"");
    w.endGroup();
  }
  if (kernels.empty()) w.text((b.left + b.right) / 2, (b.top + b.bottom) / 2, "no kernel timings in this run", 13, "middle");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelPoint& k = kernels[i];
    const std::string colour = backendColour(k.label);
    w.beginGroup("class=\"series\" " + attr("data-panel", "roofline") + " " + attr("data-label", k.label) + " " +
                 attr("data-intensity", SvgWriter::number(k.intensity())) + " " +
                 attr("data-gflops", SvgWriter::number(k.gflops())) + " " + attr("data-ms", SvgWriter::number(k.seconds * 1e3)));
    if (k.intensity() > 0 && k.gflops() > 0) {
      w.circle(x(k.intensity()), y(k.gflops()), 5, colour, "fill-opacity=\"0.8\"");
      w.text(x(k.intensity()) + 7, y(k.gflops()) + 4, std::to_string(i + 1), 10);
    }
    std::string line = std::to_string(i + 1) + ". " + k.label;
    if (line.size() > 78) line = line.substr(0, 75) + "...";
    w.text(b.left - 40, b.bottom + 62 + 14 * i, line + "  " + shortNumber(k.seconds * 1e3) + " ms, " +
           shortNumber(k.gflops()) + " GFLOP/s, " + shortNumber(k.bytes / std::max(k.seconds, 1e-12) / 1e9) + " GB/s",
           10, "start", 0, "fill=\"" + colour + "\"");
    w.endGroup();
  }
}

}  // namespace

std::string benchChartToSvg(const BenchChart& c) {
  const double width = 1160, height = 560 + 14 * static_cast<double>(c.kernels.size());
  SvgWriter w(width, height);
  w.text(width / 2, 28, c.title, 16, "middle", 0, "font-weight=\"bold\"");
  double lx = 90;  // legend
  for (const char* setting : {"fusion on", "fusion off"}) {
    w.rect(lx, 44, 12, 12, colourOf(setting));
    w.text(lx + 18, 54, setting, 12);
    lx += 100;
  }
  w.line(lx + 6, 44, lx + 6, 56, "#202124", 1.5);
  w.text(lx + 14, 54, "whisker: p10-p90", 12);
  latencyPanel(w, {100, 90, 520, 440}, c.latency);
  rooflinePanel(w, {660, 90, 1130, 440}, c.kernels, c);
  return w.finish();
}

}  // namespace gkrt::tools
