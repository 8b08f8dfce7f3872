// gkrt info MODEL: inputs, outputs, op histogram, size (a .gguf file: its metadata and
// tensors, tools/gguf/gguf_summary.h).   gkrt info --cpu: the CPU tier.
// gkrt ops: the op table.
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>

#include <sys/stat.h>

#include "backends/cpu/cpu_tier.h"
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"
#include "tools/commands.h"
#include "tools/gguf/gguf_summary.h"
#include "tools/model_source.h"

namespace gkrt::tools {
namespace {

void countOps(const ir::Graph& g, std::map<std::string, int>& hist) {
  for (const ir::Node& n : g.nodes) {
    ++hist[n.op->name];
    if (n.subgraph) countOps(*n.subgraph, hist);
  }
}

std::string describe(const ir::Tensor& t) {
  std::string s = std::string(dtypeName(t.dtype)) + " " + shapeToString(t.shape);
  bool any = false;
  for (const std::string& sym : t.dim_symbols) any = any || !sym.empty();
  if (any) {
    s += " (";
    for (size_t d = 0; d < t.dim_symbols.size(); ++d) s += (d ? "," : "") + (t.dim_symbols[d].empty() ? std::to_string(t.shape[d]) : t.dim_symbols[d]);
    s += ")";
  }
  return s;
}

int info(const std::string& path, const ImportArgs& import, bool tensors) {
  if (gguf::looksLikeGguf(path)) {  // llama.cpp's format: what it holds (gkrt does not run it yet)
    auto f = gguf::GgufFile::open(path);
    if (!f.ok()) {
      std::cerr << "gkrt info: " << f.status().toString() << "\n";
      return 1;
    }
    gguf::printSummary(*f, path, tensors, std::cout);
    return 0;
  }
  auto g = loadAnyModel(path, import);
  if (!g.ok()) {
    std::cerr << "gkrt info: " << g.status().toString() << "\n";
    return 1;
  }
  struct stat st {};
  ::stat(path.c_str(), &st);
  size_t const_bytes = 0, const_count = 0;
  for (const ir::Tensor& t : g->tensors) {
    if (t.isConstant()) { const_bytes += t.constant->size; ++const_count; }
  }
  std::cout << "model: " << path << " (" << st.st_size << " bytes, " << const_count << " constants, " << const_bytes
            << " bytes of weights)\n";
  for (const auto& [k, v] : g->metadata) {
    if (k == kGgufMetadataKey) std::cout << k << ": " << v.size() << " bytes (the GGUF source's metadata: tokenizer, hyper-parameters)\n";
    else std::cout << k << ": " << v << "\n";
  }
  std::cout << "inputs:\n";
  for (int t : g->inputs) std::cout << "  " << g->tensors[t].name << ": " << describe(g->tensors[t]) << "\n";
  std::cout << "outputs:\n";
  for (int t : g->outputs) std::cout << "  " << g->tensors[t].name << ": " << describe(g->tensors[t]) << "\n";
  std::map<std::string, int> hist;
  countOps(*g, hist);
  std::cout << "ops (" << g->nodes.size() << " nodes, " << g->countNodesDeep() << " counting fused subgraphs):\n";
  for (const auto& [name, count] : hist) std::cout << "  " << std::left << std::setw(24) << name << count << "\n";
  return 0;
}

// The CPU tier the cpu backend runs at (backends/cpu/cpu_tier.h).
int cpuInfo() {
  const cpu::CpuTier& t = cpu::cpuTier();
  std::cout << "cpu tier: " << cpu::cpuTierSummary() << "\n";
  std::cout << "  detected:  " << cpu::cpuIsaName(t.detected) << "\n";
  std::cout << "  effective: " << cpu::cpuIsaName(t.effective) << " (" << t.vectorFloats() << " floats a vector";
  if (t.has(cpu::CpuIsa::kAvx2)) std::cout << ", channel blocks of " << t.vectorFloats();
  std::cout << ")\n  GKRT_CPU_ISA takes: native";
  for (cpu::CpuIsa i : t.runnable()) std::cout << ", " << cpu::cpuIsaName(i);
  std::cout << "\n";
  if (!t.cap_error.empty()) {
    std::cerr << "gkrt info: " << t.cap_error << "\n";
    return 1;
  }
  return 0;
}

int listOps() {
  std::cout << std::left << std::setw(34) << "op" << std::setw(13) << "class" << std::setw(8) << "inputs"
            << std::setw(15) << "attributes" << "semantics\n";
  for (const OpDef& op : allOps()) {
    std::string arity = std::to_string(op.min_inputs);
    if (op.max_inputs == kVariadic) arity += "+";
    else if (op.max_inputs != op.min_inputs) arity += "-" + std::to_string(op.max_inputs);
    std::cout << std::setw(34) << op.name << std::setw(13) << opClassName(op.op_class) << std::setw(8) << arity
              << std::setw(15) << attrKindName(op.attr_kind) << op.summary << "\n";
  }
  std::cout << "\naliases:";
  for (const auto& [alias, name] : opAliases()) std::cout << " " << alias << "=" << name;
  std::cout << "\n";
  return 0;
}

}  // namespace

Command addInfoCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto cpu = std::make_shared<bool>(false);
  auto tensors = std::make_shared<bool>(false);
  auto import = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand("info", "show a model's inputs, outputs, op histogram and size; or the CPU tier");
  cmd->add_option("model", *path, "the .gkm model, an .onnx model (converted in memory), or a .gguf file (its metadata and tensors)");
  cmd->add_option("--input-shape", import->input_shapes, "an .onnx model: a shape for an input with dynamic dims, name=1,3,224,224");
  import->addTo(cmd);
  cmd->add_flag("--cpu", *cpu, "print the CPU tier: detected, effective (GKRT_CPU_ISA caps it), oneDNN's ISA");
  cmd->add_flag("--tensors", *tensors, "a .gguf file: list every tensor (name, type, dims, bytes, offset)");
  return [path, cpu, import, tensors]() {
    if (*cpu) return cpuInfo();
    if (path->empty()) {
      std::cerr << "gkrt info: give a .gkm, .onnx or .gguf model, or --cpu for the CPU tier\n";
      return 2;
    }
    return info(*path, *import, *tensors);
  };
}

Command addOpsCommand(CLI::App& app) {
  app.add_subcommand("ops", "list every op gkrt knows, with its class, arity and attributes");
  return []() { return listOps(); };
}

}  // namespace gkrt::tools
