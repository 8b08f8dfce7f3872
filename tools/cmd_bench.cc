// gkrt bench MODEL [--backend cpu,opencl,reference] [--threads N] [--warmup W] [--iterations I]
//                  [--fusion on,off] [--patterns on,off] [--input name=file.npy ...] [--json out.json] [--profile]
//                  [--device D] [--svg chart.svg]
// Session compile is timed cold (empty program cache) and warm (second start).
// --patterns off: the fusion-on rows again with every Appendix 3 pattern pass, gkrt's
// own (rotary_embedding_fusion, sibling_matmul_merge) and the exporter-pattern
// recogniser switched off ("on, no patterns"): what the pattern kernels gain over
// generic fusion.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fusion/pass_manager.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "runtime/ir/op_def.h"
#include "tools/bandwidth_probe.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/parse_args.h"
#include "tools/kernel_flops.h"
#include "tools/svg_chart.h"

namespace gkrt::tools {
namespace {

struct BenchArgs {
  std::string model;
  std::string backends = "cpu";
  std::string fusion = "on";
  std::string patterns = "on";
  int threads = 0;
  std::string precision = "f32";
  int warmup = 5;
  int iterations = 50;
  std::vector<std::string> inputs;
  ImportArgs import;  // --input-shape, --freeze, --dim; an .onnx model is converted in memory
  std::string json;
  std::string svg;
  bool profile = false;
  std::string device;
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) if (!item.empty()) out.push_back(item);
  return out;
}

std::string makeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "gkrt_bench_XXXXXX").string();
  return mkdtemp(tmpl.data()) ? tmpl : std::string();
}
void removeDir(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

struct Row {
  std::string backend, fusion;
  int threads = 0;
  double p10 = 0, p50 = 0, p90 = 0, min = 0, compile_ms = 0, warm_compile_ms = 0;
  size_t kernels = 0, peak = 0, unplanned = 0, fused_bytes = 0;
  double fused_gbps = 0;
  std::vector<Session::KernelInfo> infos;
  std::vector<double> kernel_seconds;
  std::vector<std::string> kernel_ops;    // per kernel: the ops it runs, "Mul, Add"
  std::vector<std::string> kernel_names;  // per kernel: its node's name, "fused_0"
  std::vector<double> kernel_flops;       // per kernel: estimated FLOPs a run (tools/kernel_flops.h)
};

std::string opsOf(const ir::Node& n) {
  if (!n.subgraph) return n.op->name;
  std::string s;
  for (const ir::Node& m : n.subgraph->nodes) s += (s.empty() ? "" : ", ") + opsOf(m);
  return s;
}

// The kernels of the fusion-on rows (every row's where none is on), the slowest of each
// backend (at most `limit` in all, shared between the backends), as roofline points.
std::vector<KernelPoint> slowestKernels(const std::vector<Row>& rows, size_t limit) {
  bool any_on = false;
  for (const Row& r : rows) any_on = any_on || r.fusion == "on";
  std::vector<std::vector<KernelPoint>> per_row;
  for (const Row& r : rows) {
    if (any_on && r.fusion != "on") continue;
    std::vector<KernelPoint> all;
    for (size_t k = 0; k < r.infos.size() && k < r.kernel_seconds.size() && k < r.kernel_flops.size(); ++k) {
      const double s = r.kernel_seconds[k];
      if (s <= 0) continue;
      std::string ops = r.kernel_ops[k];
      if (ops.size() > 40) ops = ops.substr(0, 37) + "...";
      all.push_back({r.backend + ": " + r.kernel_names[k] + " (" + ops + ")", r.kernel_flops[k],
                     static_cast<double>(r.infos[k].bytes_moved), s});
    }
    std::stable_sort(all.begin(), all.end(), [](const KernelPoint& a, const KernelPoint& b) { return a.seconds > b.seconds; });
    per_row.push_back(std::move(all));
  }
  std::vector<KernelPoint> out;
  const size_t each = per_row.empty() ? 0 : std::max<size_t>(1, limit / per_row.size());
  for (const auto& all : per_row) out.insert(out.end(), all.begin(), all.begin() + std::min(each, all.size()));
  return out;
}

Status writeChart(const BenchArgs& a, const std::vector<Row>& rows) {
  BenchChart chart;
  chart.title = a.model + ": " + std::to_string(a.iterations) + " runs, threads " +
                (a.threads > 0 ? std::to_string(a.threads) : "all");
  for (const Row& r : rows) chart.latency.push_back({r.backend, "fusion " + r.fusion, r.p10, r.p50, r.p90});
  chart.kernels = slowestKernels(rows, 12);
  chart.memory_gbps = measureTriadGBps(4L << 20, a.threads);
  chart.memory_label = "host memory, triad probe";
  chart.peak_gflops = measurePeakGflops(a.threads);
  chart.compute_label = "host float32 FMA peak, probe";
  std::ofstream f(a.svg);
  f << benchChartToSvg(chart);
  if (!f) return makeError(StatusCode::kIoError, "cannot write '", a.svg, "'");
  std::cout << "chart: " << a.svg << " (triad probe " << std::fixed << std::setprecision(1) << chart.memory_gbps
            << " GB/s, FMA probe " << chart.peak_gflops << " GFLOP/s)\n";
  return Status::Ok();
}

void progress(int done, int total) {
  if (total < 20 || !isatty(2)) return;
  const int width = 30, filled = done * width / total;
  std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done << "/" << total
            << (done == total ? "\r" + std::string(width + 20, ' ') + "\r" : "") << std::flush;
}

// One row's fusion: on (the profile's defaults), off, or on without the pattern passes.
struct FusionSetting {
  bool fused = true, patterns = true;
  std::string label() const { return !fused ? "off" : patterns ? "on" : "on, no patterns"; }
  std::string flags() const {
    if (!fused) return "--opt_level=0";
    if (patterns) return "";
    std::string off = "RecognizeExportedPatterns,rotary_embedding_fusion,sibling_matmul_merge";  // and gkrt's own pattern passes
    for (const std::string& p : ascendPatternPassNames()) off += "," + p;
    return "--disable_pass=" + off;
  }
};

StatusOr<Row> benchOne(const ir::Graph& model, const BenchArgs& a, const std::string& backend, const FusionSetting& setting,
                       const std::map<std::string, HostTensor>& given) {
  SessionArgs sa;
  sa.backend = backend;
  sa.flags = setting.flags();
  sa.input_shapes = a.import.input_shapes;
  sa.precision = a.precision;
  ASSIGN_OR_RETURN(SessionOptions opts, sa.toOptions());
  opts.backend_options.num_threads = a.threads;
  opts.backend_options.device = a.device;
  for (const auto& [name, t] : given) opts.input_shapes[name] = t.shape();
  // Session compile twice: cold (an empty program cache) and warm (the cache it filled).
  const std::string cache = makeTempDir();
  opts.backend_options.program_cache_dir = cache;
  Row r;
  std::unique_ptr<Session> session;
  for (double* ms : {&r.compile_ms, &r.warm_compile_ms}) {
    session.reset();  // no device state carries over from the cold start
    const auto c0 = std::chrono::steady_clock::now();
    auto s = Session::create(model, opts);
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    if (!s.ok()) {
      removeDir(cache);
      return s.status();
    }
    session = std::move(s).value();
  }
  removeDir(cache);
  std::mt19937 rng(1);
  for (const TensorInfo& in : session->inputs()) {
    auto it = given.find(in.name);
    if (it != given.end()) {
      RETURN_IF_ERROR(session->setInput(in.name, it->second));
    } else {
      ASSIGN_OR_RETURN(HostTensor t, randomInput(in, rng));
      RETURN_IF_ERROR(session->setInput(in.name, t));
    }
  }
  for (int i = 0; i < a.warmup; ++i) RETURN_IF_ERROR(session->run());
  std::vector<double> ms;
  for (int i = 0; i < a.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(session->run());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    progress(i + 1, a.iterations);
  }
  std::sort(ms.begin(), ms.end());
  r.backend = backend;
  r.fusion = setting.label();
  r.threads = a.threads;
  r.p10 = ms[ms.size() / 10];
  r.p50 = ms[ms.size() / 2];
  r.p90 = ms[std::min(ms.size() - 1, ms.size() * 9 / 10)];
  r.min = ms.front();
  r.kernels = session->kernelCount();
  r.peak = session->peakBytes();
  r.unplanned = session->tensorBytes();
  r.infos = session->kernelInfos();
  for (const ir::Node& n : session->compiledGraph().nodes) {
    r.kernel_ops.push_back(opsOf(n));
    r.kernel_names.push_back(n.name);
    r.kernel_flops.push_back(kernelFlops(session->compiledGraph(), n));
  }
  for (const auto& k : r.infos) if (k.fused) r.fused_bytes += k.bytes_moved;
  if (a.profile || r.fused_bytes || !a.svg.empty()) {  // fused kernels' own time, for their GB/s
    std::vector<double> best;
    for (int i = 0; i < std::max(3, a.iterations / 5); ++i) {
      RETURN_IF_ERROR(session->runProfiled(&r.kernel_seconds));
      if (best.empty()) best = r.kernel_seconds;
      for (size_t k = 0; k < best.size(); ++k) best[k] = std::min(best[k], r.kernel_seconds[k]);
    }
    r.kernel_seconds = best;
    double fused_s = 0;
    for (size_t k = 0; k < r.infos.size(); ++k) if (r.infos[k].fused) fused_s += best[k];
    r.fused_gbps = fused_s > 0 ? r.fused_bytes / fused_s / 1e9 : 0;
  }
  return r;
}

Status bench(const BenchArgs& a) {
  ASSIGN_OR_RETURN(ir::Graph model, loadAnyModel(a.model, a.import));
  if (a.warmup < 0 || a.iterations < 1) {
    return makeError(StatusCode::kInvalidArgument, "--iterations must be >= 1 and --warmup >= 0");
  }
  ASSIGN_OR_RETURN(auto given, readInputArgs(a.inputs));
  std::vector<bool> pattern_states;
  for (const std::string& p : splitList(a.patterns)) {
    if (p != "on" && p != "off") return makeError(StatusCode::kInvalidArgument, "--patterns takes on, off or on,off; got '", p, "'");
    pattern_states.push_back(p == "on");
  }
  if (pattern_states.empty()) return makeError(StatusCode::kInvalidArgument, "--patterns takes on, off or on,off");
  std::vector<FusionSetting> settings;
  for (const std::string& f : splitList(a.fusion)) {
    if (f != "on" && f != "off") return makeError(StatusCode::kInvalidArgument, "--fusion takes on, off or on,off; got '", f, "'");
    if (f == "off") settings.push_back({false, true});
    else for (bool p : pattern_states) settings.push_back({true, p});
  }
  std::vector<Row> rows;
  for (const std::string& backend : splitList(a.backends)) {
    for (const FusionSetting& setting : settings) {
      auto r = benchOne(model, a, backend, setting, given);
      if (!r.ok()) return r.status().withContext(backend + ", fusion " + setting.label());
      rows.push_back(std::move(r).value());
    }
  }
  size_t label_width = 7;
  for (const Row& r : rows) label_width = std::max(label_width, r.fusion.size() + 1);
  std::cout << a.model << ": " << a.iterations << " iterations after " << a.warmup << " warm-up, threads "
            << (a.threads > 0 ? std::to_string(a.threads) : "all") << "\n";
  std::cout << std::left << std::setw(10) << "backend" << std::setw(int(label_width)) << "fusion" << std::right << std::setw(10)
            << "p50 ms" << std::setw(10) << "p90 ms" << std::setw(10) << "min ms" << std::setw(9) << "kernels"
            << std::setw(12) << "arena MiB" << std::setw(14) << "unplanned MiB" << std::setw(16) << "fused MiB/run" << std::setw(11) << "fused GB/s"
            << std::setw(17) << "cold compile ms" << std::setw(17) << "warm compile ms" << "\n";
  std::cout << std::fixed;
  for (const Row& r : rows) {
    std::cout << std::left << std::setw(10) << r.backend << std::setw(int(label_width)) << r.fusion << std::right << std::setprecision(3)
              << std::setw(10) << r.p50 << std::setw(10) << r.p90 << std::setw(10) << r.min << std::setw(9) << r.kernels
              << std::setprecision(2) << std::setw(12) << r.peak / 1048576.0 << std::setw(14) << r.unplanned / 1048576.0 << std::setw(16)
              << r.fused_bytes / 1048576.0 << std::setw(11) << r.fused_gbps << std::setw(17) << r.compile_ms << std::setw(17) << r.warm_compile_ms << "\n";
  }
  if (a.profile) {
    for (const Row& r : rows) {
      double total = 0;
      for (double s : r.kernel_seconds) total += s;
      std::cout << "\nper kernel, " << r.backend << ", fusion " << r.fusion << ":\n";
      std::cout << std::setw(10) << "ms" << std::setw(8) << "share" << std::setw(11) << "MiB moved" << std::setw(9)
                << "GB/s" << "  " << std::left << std::setw(11) << "backend" << "kernel: ops\n" << std::right;
      for (size_t k = 0; k < r.infos.size(); ++k) {
        const double s = r.kernel_seconds[k];
        std::cout << std::setprecision(3) << std::setw(10) << s * 1e3 << std::setprecision(1) << std::setw(7)
                  << (total > 0 ? 100 * s / total : 0) << "%" << std::setprecision(3) << std::setw(11)
                  << r.infos[k].bytes_moved / 1048576.0 << std::setprecision(2) << std::setw(9)
                  << (s > 0 ? r.infos[k].bytes_moved / s / 1e9 : 0) << "  " << std::left << std::setw(11)
                  << r.infos[k].backend << std::right << r.infos[k].name << ": " << r.kernel_ops[k]
                  << (r.infos[k].detail.empty() ? "" : " [" + r.infos[k].detail + "]")
                  << (r.infos[k].slow_path ? " [slow path]" : "") << "\n";
      }
      int reorders = 0;
      for (const auto& info : r.infos) reorders += info.reorders;
      std::cout << "layout reorders per run: " << reorders << "\n";
    }
  }
  if (!a.svg.empty()) RETURN_IF_ERROR(writeChart(a, rows));
  if (!a.json.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows) {
      j.push_back({{"backend", r.backend}, {"fusion", r.fusion}, {"threads", r.threads}, {"p50_ms", r.p50},
                   {"p90_ms", r.p90}, {"min_ms", r.min}, {"kernels", r.kernels}, {"peak_arena_bytes", r.peak},
                   {"unplanned_bytes", r.unplanned},
                   {"fused_bytes_per_run", r.fused_bytes}, {"fused_gbps", r.fused_gbps}, {"compile_ms", r.compile_ms},
                   {"warm_compile_ms", r.warm_compile_ms}, {"p10_ms", r.p10}});
      if (!a.profile) continue;
      double total = 0;
      for (double s : r.kernel_seconds) total += s;
      nlohmann::json kernels = nlohmann::json::array();
      for (size_t k = 0; k < r.infos.size(); ++k) {
        const double s = r.kernel_seconds[k];
        kernels.push_back({{"name", r.infos[k].name}, {"ops", r.kernel_ops[k]}, {"backend", r.infos[k].backend},
                           {"fused", r.infos[k].fused}, {"detail", r.infos[k].detail},
                           {"reorders", r.infos[k].reorders}, {"slow_path", r.infos[k].slow_path}, {"ms", s * 1e3}, {"share", total > 0 ? s / total : 0},
                           {"bytes_moved", r.infos[k].bytes_moved}, {"gbps", s > 0 ? r.infos[k].bytes_moved / s / 1e9 : 0}});
      }
      j.back()["kernels"] = kernels;
    }
    std::ofstream f(a.json);
    if (!f) return makeError(StatusCode::kIoError, "cannot write '", a.json, "'");
    f << j.dump(2) << "\n";
  }
  return Status::Ok();
}

}  // namespace

Command addBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "time a model: latency, kernels, memory, fused-kernel bandwidth");
  cmd->add_option("model", args->model, "the .gkm model, or an .onnx model (converted in memory)")->required();
  cmd->add_option("--backend", args->backends, "backends, comma-separated (cpu,opencl,reference)");
  cmd->add_option("--device", args->device, "opencl: platform:device indices or part of the device name");
  cmd->add_option("--fusion", args->fusion, "on, off or on,off");
  cmd->add_option("--patterns", args->patterns, "on, off or on,off: the fusion-on rows with the Appendix 3 pattern passes "
                  "(and the exporter-pattern recogniser) as the profile has them, or all switched off");
  cmd->add_option("--threads", args->threads, "threads of the cpu backend (0 = every core)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--precision", args->precision, "GEMM precision: f32 (default); bf16 on cpu (where the CPU has it) and cuda; "
                  "tf32 or fp16 on cuda");
  cmd->add_option("--warmup", args->warmup, "untimed runs first");
  cmd->add_option("--iterations", args->iterations, "timed runs");
  cmd->add_option("--input", args->inputs, "an input from name=file.npy (others are random)");
  cmd->add_option("--input-shape", args->import.input_shapes, "a shape for an input with dynamic dims, name=1,3,224,224");
  args->import.addTo(cmd);
  cmd->add_option("--json", args->json, "also write the table as JSON");
  cmd->add_flag("--profile", args->profile, "per-kernel table: ops fused, time, share, bytes moved, GB/s (also in --json)");
  cmd->add_option("--svg", args->svg, "also draw a chart: latency p50 (p10-p90) per backend and fusion setting (log axis when they are far apart), and a roofline of the slowest kernels under measured bandwidth and FMA ceilings");
  return reportingCommand("bench", [args]() { return bench(*args); });
}

}  // namespace gkrt::tools
