// gkrt compare MODEL.onnx [--input name=x.npy ...] [--input-shape ...] [--backend cpu] [--flags ...] [--precision bf16] [--python PY]
// Runs the model through gkrt and through onnxruntime (via a Python that can import
// it) on the same inputs, and prints per output the max abs error, max rel error and
// cosine similarity.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>

#include <unistd.h>

#include "backends/cpu/cpu_tier.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/npy.h"
#include "tools/onnx/onnx_import.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct CompareArgs {
  std::string model;
  std::vector<std::string> inputs;
  SessionArgs session;
  std::string python;
};

// onnxruntime, run in a child Python: model, input npys -> output npys in `dir`.
const char* kOrtScript = R"(
import sys, numpy as np, onnxruntime as ort
model, out_dir, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feeds = {k: np.load(v) for k, v in (x.split("=", 1) for x in specs)}
for i, (o, v) in enumerate(zip(s.get_outputs(), s.run(None, feeds))):
    np.save(f"{out_dir}/{i}.npy", v)
)";

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string findPython(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("GKRT_PYTHON")) return env;
  if (std::filesystem::exists(".venv/bin/python")) return ".venv/bin/python";
  return "python3";
}

// One row: max abs error, max rel error and cosine similarity of got against want.
void printErrorRow(const std::string& name, const HostTensor& got, const HostTensor& want) {
  const auto g = got.toFloats(), w = want.toFloats();
  double max_abs = 0, max_rel = 0, dot = 0, ng = 0, nw = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(static_cast<double>(g[i]) - w[i]);
    max_abs = std::max(max_abs, d);
    max_rel = std::max(max_rel, d / (std::fabs(w[i]) + 1e-6));
    dot += static_cast<double>(g[i]) * w[i];
    ng += static_cast<double>(g[i]) * g[i];
    nw += static_cast<double>(w[i]) * w[i];
  }
  const double cosine = ng > 0 && nw > 0 ? dot / std::sqrt(ng * nw) : (ng == nw ? 1.0 : 0.0);
  std::cout << std::setw(24) << name << std::setw(16) << max_abs << std::setw(16) << max_rel << cosine << "\n";
}

// --precision bf16: the accuracy cost, the bf16 session's outputs against the same
// model in float32 on the same backend and inputs.
Status reportBf16Cost(const ir::Graph& g, SessionOptions opts, const std::vector<std::pair<std::string, HostTensor>>& fed,
                      Session& bf16) {
  opts.backend_options.precision = Precision::kFloat32;
  ASSIGN_OR_RETURN(auto f32, Session::create(g, opts));
  for (const auto& [name, t] : fed) RETURN_IF_ERROR(f32->setInput(name, t));
  RETURN_IF_ERROR(f32->run());
  const bool native = opts.backend == "cpu" && cpu::cpuTier().has(cpu::CpuIsa::kAvx512Bf16);
  std::cout << "bf16 accuracy cost (against gkrt float32" << (native ? "" : "; this backend or CPU has no native bf16, "
            "so bf16 ran as float32 and the cost is 0") << "):\n";
  for (const TensorInfo& out : bf16.outputs()) {
    ASSIGN_OR_RETURN(HostTensor got, bf16.output(out.name));
    ASSIGN_OR_RETURN(HostTensor want, f32->output(out.name));
    printErrorRow(out.name, got, want);
  }
  return Status::Ok();
}

Status compare(const CompareArgs& a) {
  ASSIGN_OR_RETURN(SessionOptions opts, a.session.toOptions());
  OnnxImportOptions import_options;
  import_options.input_shapes = opts.input_shapes;
  ASSIGN_OR_RETURN(auto given, readInputArgs(a.inputs));
  for (const auto& [name, t] : given) import_options.input_shapes[name] = t.shape();
  auto g = importOnnxFile(a.model, import_options);
  if (!g.ok()) return g.status().withContext(a.model);
  ASSIGN_OR_RETURN(auto session, Session::create(*g, opts));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gkrt_compare_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937 rng(1234);
  std::vector<std::string> specs;
  std::vector<std::pair<std::string, HostTensor>> fed;
  for (const TensorInfo& in : session->inputs()) {
    HostTensor t = given.count(in.name) ? given[in.name] : HostTensor(in.dtype, in.shape);
    if (!given.count(in.name)) {  // random inputs: normal floats, small integers, random bools
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < t.size(); ++i) {
        if (isFloat(in.dtype)) ops::storeF(t.data(), t.dtype(), i, normal(rng));
        else ops::storeF(t.data(), t.dtype(), i, static_cast<float>(rng() % (in.dtype == DType::kBool ? 2 : 4)));
      }
      std::cout << "input " << in.name << ": random " << dtypeName(in.dtype) << " " << shapeToString(in.shape) << "\n";
    }
    RETURN_IF_ERROR(session->setInput(in.name, t));
    fed.emplace_back(in.name, t);
    const std::string path = (dir / ("in_" + std::to_string(specs.size()) + ".npy")).string();
    RETURN_IF_ERROR(writeNpy(path, t));
    specs.push_back(in.name + "=" + path);
  }
  RETURN_IF_ERROR(session->run());
  const std::string python = findPython(a.python);
  std::string cmd = shellQuote(python) + " -c " + shellQuote(kOrtScript) + " " + shellQuote(a.model) + " " +
                    shellQuote(dir.string());
  for (const std::string& s : specs) cmd += " " + shellQuote(s);
  const bool have_ort = std::system((shellQuote(python) + " -c 'import onnxruntime' 2>/dev/null").c_str()) == 0;
  if (!have_ort || std::system(cmd.c_str()) != 0) {
    std::filesystem::remove_all(dir);
    std::cout << "onnxruntime is not importable by " << python << " (pip install onnxruntime, or --python PY); "
              << "gkrt ran the model on " << opts.backend << " with " << session->kernelCount() << " kernels\n";
    return Status::Ok();
  }
  std::cout << std::left << std::setw(24) << "output" << std::setw(16) << "max abs err" << std::setw(16)
            << "max rel err" << "cosine\n";
  for (size_t k = 0; k < session->outputs().size(); ++k) {
    const std::string& name = session->outputs()[k].name;
    ASSIGN_OR_RETURN(HostTensor got, session->output(name));
    ASSIGN_OR_RETURN(HostTensor want, readNpy((dir / (std::to_string(k) + ".npy")).string()));
    if (got.size() != want.size()) {
      std::cout << std::setw(24) << name << "shape " << shapeToString(got.shape()) << " vs onnxruntime "
                << shapeToString(want.shape()) << "\n";
      continue;
    }
    printErrorRow(name, got, want);
  }
  if (opts.backend_options.precision == Precision::kBFloat16) RETURN_IF_ERROR(reportBf16Cost(*g, opts, fed, *session));
  std::filesystem::remove_all(dir);
  return Status::Ok();
}

}  // namespace

Command addCompareCommand(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "run an ONNX model in gkrt and onnxruntime and compare the outputs");
  cmd->add_option("model", args->model, "the .onnx model")->required();
  cmd->add_option("--input", args->inputs, "an input as name=file.npy (others are random)");
  args->session.addTo(cmd);
  cmd->add_option("--python", args->python, "Python with onnxruntime (default: $GKRT_PYTHON, .venv/bin/python, python3)");
  return reportingCommand("compare", [args]() { return compare(*args); });
}

}  // namespace gkrt::tools
