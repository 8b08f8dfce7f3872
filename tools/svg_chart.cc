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

void latencyPanel(SvgWriter& w, const Box& b, const std::vector<LatencySeries>& series) {
  double max = 0;
  for (const LatencySeries& s : series) max = std::max({max, s.p90, s.p50});
  const double step = niceStep(max * 1.05, 5), top = std::max(step, std::ceil(max * 1.05 / step) * step);
  auto y = [&](double v) { return b.bottom - (b.bottom - b.top) * std::min(v, top) / top; };
  for (double v = 0; v <= top + step / 2; v += step) {
    w.line(b.left, y(v), b.right, y(v), "#e0e0e0");
    w.text(b.left - 6, y(v) + 4, tickText(v, step), 11, "end");
  }
  w.line(b.left, b.top, b.left, b.bottom, "#3c4043");
  w.line(b.left, b.bottom, b.right, b.bottom, "#3c4043");
  w.text(b.left - 52, (b.top + b.bottom) / 2, "latency per run (ms): p50 bar, p10-p90 whisker", 13, "middle", -90);
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

void bandwidthPanel(SvgWriter& w, const Box& b, const std::vector<KernelBandwidth>& kernels, double memory,
                    const std::string& memory_label) {
  double max = memory;
  for (const KernelBandwidth& k : kernels) max = std::max(max, k.gbps);
  const double step = niceStep(max * 1.1, 5), right = std::max(step, std::ceil(max * 1.1 / step) * step);
  auto x = [&](double v) { return b.left + (b.right - b.left) * std::min(v, right) / right; };
  for (double v = 0; v <= right + step / 2; v += step) {
    w.line(x(v), b.top, x(v), b.bottom, "#e0e0e0");
    w.text(x(v), b.bottom + 16, tickText(v, step), 11, "middle");
  }
  w.line(b.left, b.top, b.left, b.bottom, "#3c4043");
  w.line(b.left, b.bottom, b.right, b.bottom, "#3c4043");
  w.text((b.left + b.right) / 2, b.bottom + 40, "achieved bandwidth of the slowest fused kernels (GB/s)", 13, "middle");
  if (kernels.empty()) w.text((b.left + b.right) / 2, (b.top + b.bottom) / 2, "no fused kernels in this run", 13, "middle");
  const double row = std::min(40.0, (b.bottom - b.top) / std::max<size_t>(1, kernels.size()));
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelBandwidth& k = kernels[i];
    const double ty = b.top + row * i;
    w.beginGroup("class=\"series\" " + attr("data-panel", "bandwidth") + " " + attr("data-label", k.label) + " " +
                 attr("data-gbps", SvgWriter::number(k.gbps)));
    w.text(b.left + 4, ty + row * 0.36, k.label, 10);
    w.rect(b.left, ty + row * 0.45, x(k.gbps) - b.left, row * 0.42, "#34a853");
    w.text(x(k.gbps) + 4, ty + row * 0.8, shortNumber(k.gbps), 10);
    w.endGroup();
  }
  if (memory > 0) {
    w.beginGroup("class=\"series\" " + attr("data-panel", "bandwidth") + " " + attr("data-label", memory_label) + " " +
                 attr("data-gbps", SvgWriter::number(memory)));
    w.line(x(memory), b.top - 8, x(memory), b.bottom, "#d93025", 2, "stroke-dasharray=\"6 4\"");
    w.text(x(memory), b.top - 12, memory_label + ": " + shortNumber(memory) + " GB/s", 11,
           x(memory) > (b.left + b.right) / 2 ? "end" : "start", 0, "fill=\"#d93025\"");
    w.endGroup();
  }
}

}  // namespace

std::string benchChartToSvg(const BenchChart& c) {
  const double width = 1160, height = 540;
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
  bandwidthPanel(w, {600, 90, 1130, 440}, c.kernels, c.memory_gbps, c.memory_label);
  return w.finish();
}

}  // namespace gkrt::tools
