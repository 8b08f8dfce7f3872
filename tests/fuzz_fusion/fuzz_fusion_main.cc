// fuzz_fusion: the differential fusion fuzzer. Each seed makes one random graph
// (random_graph.h); it runs unfused (--opt_level=0) on the reference backend, the
// oracle, then on every backend asked for at every opt_level and the flag sets of
// fuzz_configs.h. A fused run that errors, or whose outputs differ from the oracle's
// beyond the tolerance, is a failure: the seed, the backend, the flags and the command
// that repeats it are printed, and the graph and its inputs are written to --out
// (`gkrt bisect` then names the pass at fault).
//
//   fuzz_fusion --seed 1 --count 500 --backends reference,cpu,opencl --out fuzz_failures
//   fuzz_fusion --seed 4711 --count 1 --backends cpu --flags "--opt_level=3" --print-graph
//
// Tolerance: float32 |got - want| <= 1e-4 * max(1, max|want|) + 1e-3 * |want|; float16
// the same with 1e-2 and 1e-2; integers and bools bit-exact; NaN matches NaN.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "fusion/graph_text.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tests/fuzz_fusion/fuzz_configs.h"
#include "tests/fuzz_fusion/pattern_graph.h"
#include "tests/fuzz_fusion/random_graph.h"
#include "tools/npy.h"

namespace gkrt::fuzz {
namespace {

struct Args {
  uint64_t seed = 1;
  int count = 100;
  std::string backends = "reference,cpu,opencl";
  std::string out = "fuzz_failures";
  std::string flags;  // only this flag set (repeating a failure)
  int threads = 0;    // 0: 1 or 2 by seed
  int max_failures = 5;
  bool print_graph = false;
  int opencl_sets = 0;  // flag sets per graph on opencl; 0: all
  bool patterns = false;  // graphs of pattern-pass motifs (pattern_graph.h)
};

StatusOr<std::vector<HostTensor>> runOnce(const RandomGraph& rg, const std::string& backend, const std::string& flags,
                                          int threads, size_t* kernels, std::map<std::string, int>* fired = nullptr) {
  SessionOptions opts;
  opts.backend = backend;
  ASSIGN_OR_RETURN(opts.fusion, parseFusionFlags(flags));
  opts.backend_options.num_threads = threads;
  ASSIGN_OR_RETURN(auto session, Session::create(rg.graph, opts));
  for (size_t k = 0; k < rg.inputs.size(); ++k) RETURN_IF_ERROR(session->setInput(session->inputs()[k].name, rg.inputs[k]));
  RETURN_IF_ERROR(session->run());
  if (kernels) *kernels = session->kernelCount();
  if (fired) {  // the Appendix 3 pattern passes that rewrote the graph
    for (const PassRecord& p : session->fusionReport().passes) {
      if (p.changed && p.name.rfind("fusion_group_", 0) == 0) ++(*fired)[p.name.substr(p.name.find('_', 13) + 1)];
    }
  }
  std::vector<HostTensor> outs;
  for (const TensorInfo& o : session->outputs()) {
    ASSIGN_OR_RETURN(HostTensor t, session->output(o.name));
    outs.push_back(std::move(t));
  }
  return outs;
}

// Empty when `got` matches `want` within the tolerance (file comment), else why not.
std::string mismatch(const HostTensor& got, const HostTensor& want) {
  if (got.dtype() != want.dtype()) return std::string("dtype ") + dtypeName(got.dtype()) + " != " + dtypeName(want.dtype());
  if (got.shape() != want.shape()) return "shape " + shapeToString(got.shape()) + " != " + shapeToString(want.shape());
  const std::vector<float> g = got.toFloats(), w = want.toFloats();
  const bool f16 = got.dtype() == DType::kFloat16;
  const bool exact = !isFloat(got.dtype());
  double scale = 1.0;
  for (float x : w) if (std::isfinite(x)) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  const double atol = (f16 ? 1e-2 : 1e-4) * scale, rtol = f16 ? 1e-2 : 1e-3;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    const bool ok = exact ? g[i] == w[i]
                          : (g[i] == w[i] || std::fabs(static_cast<double>(g[i]) - w[i]) <= atol + rtol * std::fabs(w[i]));
    if (!ok) {
      std::ostringstream s;
      s << "element " << i << " of " << g.size() << ": got " << g[i] << ", want " << w[i] << " (atol " << atol
        << ", rtol " << rtol << ")";
      return s.str();
    }
  }
  return "";
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// Writes the graph and its inputs; returns the `gkrt bisect` command line.
std::string writeRepro(const Args& a, uint64_t seed, const RandomGraph& rg, const std::string& backend,
                       const std::string& flags) {
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  const std::string base = a.out + "/seed_" + std::to_string(seed);
  Status s = saveModelFile(rg.graph, base + ".gkm");
  std::string cmd = "gkrt bisect " + base + ".gkm --backend " + backend + " --flags " + quoted(flags);
  for (size_t k = 0; k < rg.inputs.size() && s.ok(); ++k) {
    const std::string path = base + "_" + rg.graph.tensors[rg.graph.inputs[k]].name + ".npy";
    s = writeNpy(path, rg.inputs[k]);
    cmd += " --input " + rg.graph.tensors[rg.graph.inputs[k]].name + "=" + path;
  }
  if (!s.ok()) return "(could not write the repro files: " + s.toString() + ")";
  return cmd;
}

struct Totals {
  int graphs = 0, runs = 0, failures = 0;
  std::map<std::string, int> runs_per_backend;
  size_t kernels_fused = 0, kernels_unfused = 0;
  std::map<std::string, int> pattern_passes_fired;  // over every fused run
};

void reportFailure(const Args& a, uint64_t seed, const RandomGraph& rg, const std::string& backend,
                   const std::string& flags, const std::string& what, Totals* t) {
  ++t->failures;
  std::cout << "FAIL seed " << seed << " backend " << backend << " flags " << quoted(flags) << ": " << what << "\n"
            << "  ops: ";
  for (const std::string& op : rg.ops) std::cout << op << " ";
  std::cout << "\n  reproduce: fuzz_fusion" << (a.patterns ? " --patterns" : "") << " --seed " << seed << " --count 1 --backends " << backend << " --flags "
            << quoted(flags) << " --print-graph\n  bisect:    " << writeRepro(a, seed, rg, backend, flags) << "\n";
}

bool fuzzOne(const Args& a, uint64_t seed, const std::vector<std::string>& backends, Totals* t) {
  auto rg = a.patterns ? makePatternGraph(seed) : makeRandomGraph(seed);
  if (!rg.ok()) {  // the generator must only make valid graphs
    ++t->failures;
    std::cout << "FAIL seed " << seed << ": the generator made an invalid graph: " << rg.status().toString() << "\n";
    return false;
  }
  if (a.print_graph) std::cout << "seed " << seed << ":\n" << graphToText(rg->graph) << "\n";
  const int threads = a.threads > 0 ? a.threads : 1 + static_cast<int>(seed % 2);
  size_t unfused_kernels = 0;
  auto oracle = runOnce(*rg, "reference", "--opt_level=0", 1, &unfused_kernels);
  if (!oracle.ok()) {
    reportFailure(a, seed, *rg, "reference", "--opt_level=0", "the unfused reference fails: " + oracle.status().toString(), t);
    return false;
  }
  ++t->graphs;
  bool ok = true;
  for (const std::string& backend : backends) {
    std::vector<std::string> sets = a.flags.empty() ? fuzzFlagSets(*rg, seed) : std::vector<std::string>{a.flags};
    if (backend == "opencl" && a.flags.empty() && a.opencl_sets > 0 && a.opencl_sets < static_cast<int>(sets.size())) {
      // Each new OpenCL kernel is a program build (~0.5 s on PoCL): K sets per graph,
      // consecutive seeds taking the next ones, so a run covers them all.
      std::vector<std::string> some;
      for (int k = 0; k < a.opencl_sets; ++k) some.push_back(sets[(seed * a.opencl_sets + k) % sets.size()]);
      sets = some;
    }
    for (const std::string& flags : sets) {
      if (backend == "reference" && flags == "--opt_level=0") continue;  // the oracle itself
      size_t kernels = 0;
      auto out = runOnce(*rg, backend, flags, threads, &kernels, &t->pattern_passes_fired);
      ++t->runs;
      ++t->runs_per_backend[backend];
      if (!out.ok()) {
        reportFailure(a, seed, *rg, backend, flags, "fails where the unfused reference runs: " + out.status().toString(), t);
        ok = false;
        continue;
      }
      if (flags == "--opt_level=2") {
        t->kernels_fused += kernels;
        t->kernels_unfused += unfused_kernels;
      }
      for (size_t k = 0; k < out->size(); ++k) {
        const std::string why = mismatch((*out)[k], (*oracle)[k]);
        if (!why.empty()) {
          reportFailure(a, seed, *rg, backend, flags, "output " + rg->graph.tensors[rg->graph.outputs[k]].name + " " + why, t);
          ok = false;
          break;
        }
      }
    }
  }
  return ok;
}

int fuzzMain(const Args& a) {
  std::vector<std::string> backends;
  std::stringstream list(a.backends);
  for (std::string b; std::getline(list, b, ',');) {
    if (b.empty()) continue;
    if (b != "reference") {
      auto probe = createBackend(b);
      if (!probe.ok()) {  // e.g. no OpenCL platform: skipped, and said so
        std::cout << "skipping backend " << b << ": " << probe.status().message() << "\n";
        continue;
      }
    }
    backends.push_back(b);
  }
  if (backends.empty()) {
    std::cout << "fuzz_fusion: none of the backends " << a.backends << " is available here; nothing to fuzz\n";
    return 77;  // ctest's SKIP_RETURN_CODE
  }
  if (!a.flags.empty()) {
    auto parsed = parseFusionFlags(a.flags);
    if (!parsed.ok()) {
      std::cerr << "fuzz_fusion: --flags: " << parsed.status().message() << "\n";
      return 2;
    }
  }
  Totals t;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < a.count && t.failures < a.max_failures; ++i) fuzzOne(a, a.seed + static_cast<uint64_t>(i), backends, &t);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fuzz_fusion: seeds " << a.seed << ".." << a.seed + a.count - 1 << ": " << t.graphs << " graphs, "
            << t.runs << " fused runs (";
  for (const auto& [b, n] : t.runs_per_backend) std::cout << b << " " << n << " ";
  std::cout << "), " << t.failures << " failures, " << seconds << " s";
  if (t.kernels_unfused > 0) {
    std::cout << "; kernels at opt_level 2: " << t.kernels_fused << " vs " << t.kernels_unfused << " unfused";
  }
  std::cout << "\n";
  if (a.patterns) {
    std::cout << "pattern passes that rewrote a graph (fused runs):";
    for (const auto& [name, n] : t.pattern_passes_fired) std::cout << " " << name << " " << n;
    std::cout << "\n";
  }
  return t.failures == 0 && t.graphs > 0 ? 0 : 1;
}

}  // namespace
}  // namespace gkrt::fuzz

int main(int argc, char** argv) {
  gkrt::fuzz::Args a;
  CLI::App app{"Differential fusion fuzzer: random graphs, fused on every backend vs unfused on reference"};
  app.add_option("--seed", a.seed, "first seed (seeds seed..seed+count-1)");
  app.add_option("--count", a.count, "number of graphs")->check(CLI::PositiveNumber);
  app.add_option("--backends", a.backends, "comma-separated: reference,cpu,opencl (one missing is skipped, with the reason)");
  app.add_option("--out", a.out, "folder for the failing graphs (.gkm) and their inputs (.npy)");
  app.add_option("--flags", a.flags, "run only this flag set (MS_DEV_GRAPH_KERNEL_FLAGS syntax)");
  app.add_option("--threads", a.threads, "backend threads (default: 1 or 2 by seed)")->check(CLI::NonNegativeNumber);
  app.add_option("--max-failures", a.max_failures, "stop after this many failures")->check(CLI::PositiveNumber);
  app.add_flag("--print-graph", a.print_graph, "print each graph before running it");
  app.add_flag("--patterns", a.patterns, "graphs of the Appendix 3 pattern passes' motifs (attention, add+norm, FFN, SwiGLU) and near-misses");
  app.add_option("--opencl-sets", a.opencl_sets, "flag sets per graph on opencl, taken in turn by seed (0: all)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  return gkrt::fuzz::fuzzMain(a);
}
