// gkrt dump MODEL [--backend cpu] [--flags "..."] [--fusion-profile gpu] [--input-shape x=1,3] [--json]
//                 [--svg out.svg] [--dot out.dot] [--region NAME] [--radius R] [--collapse N]
//                 [--decode-step [--max-context N]]
// Prints the fused graph and a summary, or (--json) one JSON object for scripts;
// --svg/--dot draw the graph before and after fusion side by side (tools/graph_dot.h);
// --decode-step: a decoder's one-token step as `gkrt generate` compiles it (the KV cache
// rewritten into CachedAttention, runtime/generator.h), with its passes and kernels.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "fusion/graph_text.h"
#include "runtime/ir/op_def.h"
#include "runtime/generator.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "fusion/fusion_tables.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/graph_dot.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct DumpArgs {
  std::string model;
  SessionArgs session;
  ImportArgs import;  // an .onnx model is converted in memory
  bool json = false;
  bool decode_step = false;
  int64_t max_context = 256;
  std::string svg, dot;
  DotOptions picture;
};

std::string extensionOf(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos || path.find('/', dot) != std::string::npos ? "" : path.substr(dot + 1);
}

// --svg (or .png/.pdf by extension) through Graphviz, and/or the DOT text with --dot.
// Without Graphviz the DOT text goes beside the picture's path, with how to render it.
Status drawPicture(const DumpArgs& a, const ir::Graph& model, const Session& session, const SessionOptions& opts) {
  ir::Graph before = ir::cloneGraph(model);
  for (int t : before.inputs) {
    auto it = opts.input_shapes.find(before.tensors[t].name);
    if (it != opts.input_shapes.end()) before.tensors[t].shape = it->second;
  }
  RETURN_IF_ERROR(ir::inferShapes(before));
  FusionPicture pic{before, session.compiledGraph(), opts.backend, {}, session.fusionReport().node_origin_pass, ""};
  for (const Session::KernelInfo& k : session.kernelInfos()) pic.kernel_backends.push_back(k.backend);
  pic.title = a.model + ": graph kernel fusion on " + opts.backend + ", opt_level " +
              std::to_string(opts.fusion->opt_level) + (a.session.flags.empty() ? "" : ", flags " + a.session.flags);
  ASSIGN_OR_RETURN(std::string dot, fusionPictureToDot(pic, a.picture));
  auto write = [&](const std::string& path) -> Status {
    std::ofstream f(path);
    f << dot;
    if (!f) return makeError(StatusCode::kIoError, "cannot write '", path, "'");
    return Status::Ok();
  };
  if (!a.dot.empty()) RETURN_IF_ERROR(write(a.dot));
  if (a.svg.empty()) return Status::Ok();
  std::string format = extensionOf(a.svg);
  if (format != "png" && format != "pdf") format = "svg";
  Status rendered = renderDot(dot, a.svg, format);
  if (rendered.code() != StatusCode::kNotFound) return rendered;
  const std::string dot_path = a.dot.empty() ? a.svg + ".dot" : a.dot;
  if (a.dot.empty()) RETURN_IF_ERROR(write(dot_path));
  std::cerr << "gkrt dump: " << rendered.message() << "; wrote the graph as " << dot_path
            << " instead; render it with: dot -T" << format << " " << dot_path << " -o " << a.svg << "\n";
  return Status::Ok();
}

Status dump(const DumpArgs& a) {
  ImportArgs import = a.import;
  import.input_shapes = a.session.input_shapes;
  ASSIGN_OR_RETURN(ir::Graph model, loadAnyModel(a.model, import));
  ASSIGN_OR_RETURN(SessionOptions opts, a.session.toOptions());
  std::unique_ptr<Session> own;     // the model's session, or
  std::unique_ptr<Generator> gen;   // --decode-step: the generator's decode plan
  if (a.decode_step) {
    if (!a.svg.empty() || !a.dot.empty()) {
      return makeError(StatusCode::kInvalidArgument, "--decode-step draws no picture: drop --svg/--dot, or draw the model without it");
    }
    ASSIGN_OR_RETURN(gen, Generator::create(model, generatorOptionsFrom(opts, a.max_context)));
  } else {
    ASSIGN_OR_RETURN(own, Session::create(model, opts));
  }
  const Session* session = gen ? &gen->session() : own.get();
  const FusionReport& r = session->fusionReport();
  if (!a.svg.empty() || !a.dot.empty()) return drawPicture(a, model, *session, opts);
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["backend"] = opts.backend;
    j["fusion_profile"] = fusionColumnName(r.column);
    j["opt_level"] = opts.fusion->opt_level;
    j["ops_before"] = r.ops_before;
    j["ops_after"] = r.ops_after;
    j["clusters"] = r.clusters;
    j["kernels"] = session->kernelCount();
    j["passes"] = nlohmann::json::array();
    for (const PassRecord& p : r.passes) {
      j["passes"].push_back({{"name", p.name}, {"ran", p.ran}, {"changed", p.changed}, {"microseconds", p.microseconds}});
    }
    // The Appendix 3 pattern passes that rewrote the graph, by bare name.
    j["pattern_passes_fired"] = nlohmann::json::array();
    for (const PassRecord& p : r.passes) {
      const std::string prefix = "fusion_group_";
      if (!p.changed || p.name.rfind(prefix, 0) != 0) continue;
      j["pattern_passes_fired"].push_back(p.name.substr(p.name.find('_', prefix.size()) + 1));
    }
    j["dump_files"] = r.dump_files;
    if (gen) {  // the generator's own rewrite: each layer's attention and its cache as one CachedAttention
      int cached = 0;
      for (const ir::Node& n : session->compiledGraph().nodes) cached += std::string(n.op->name) == "CachedAttention";
      j["decode_step"] = {{"max_context", a.max_context}, {"cached_attention_nodes", cached}};
    }
    // gkrt's own cluster rows in this profile's column (docs/fusion-and-flags.md: gkrt's own fusion rows),
    // which --disable_cluster_ops takes out one by one.
    j["own_cluster_ops"] = nlohmann::json::array();
    for (const FusionTableEntry& e : ownClusterRows()) {
      const bool in_column = r.column == FusionColumn::kCpu ? e.cpu : r.column == FusionColumn::kGpu ? e.gpu : e.ascend;
      if (in_column) j["own_cluster_ops"].push_back(e.op);
    }
    // Every kernel to launch in order; a fused one lists its basic ops (the partition
    // tests/fidelity compares with MindSpore's fused kernels).
    // `output_copies`: its same-shape Reshapes that copy a graph input or graph output
    // into another graph output (each output has its own buffer; MindSpore returns the
    // one tensor twice), which the comparison leaves out.
    const ir::Graph& compiled = session->compiledGraph();
    auto graph_boundary = [&](int t) {
      return std::find(compiled.inputs.begin(), compiled.inputs.end(), t) != compiled.inputs.end() ||
             std::find(compiled.outputs.begin(), compiled.outputs.end(), t) != compiled.outputs.end();
    };
    j["kernel_list"] = nlohmann::json::array();
    for (const ir::Node& n : compiled.nodes) {
      nlohmann::json k = {{"name", n.name}, {"op", n.op->name}, {"ops", nlohmann::json::array()}};
      int copies = 0;
      if (n.subgraph) {
        const ir::Graph& body = *n.subgraph;
        auto outer = [&](int t, const std::vector<int>& body_side, const std::vector<int>& node_side) {
          for (size_t q = 0; q < body_side.size() && q < node_side.size(); ++q) if (body_side[q] == t) return node_side[q];
          return -1;
        };
        for (const ir::Node& inner : body.nodes) {
          k["ops"].push_back(inner.op->name);
          if (std::string(inner.op->name) != "Reshape" || inner.inputs.empty() || inner.outputs.size() != 1) continue;
          const int in = inner.inputs[0], out = inner.outputs[0];
          if (body.tensors[in].shape != body.tensors[out].shape) continue;
          int src = outer(in, body.inputs, n.inputs);
          if (src < 0) src = outer(in, body.outputs, n.outputs);
          const int dst = outer(out, body.outputs, n.outputs);
          if (src >= 0 && dst >= 0 && graph_boundary(src) && graph_boundary(dst)) ++copies;
        }
      }
      k["output_copies"] = copies;
      j["kernel_list"].push_back(k);
    }
    std::cout << j.dump(2) << "\n";
    return Status::Ok();
  }
  std::cout << graphToText(session->compiledGraph());
  std::cout << "ops before fusion: " << r.ops_before << ", after: " << r.ops_after << ", clusters: " << r.clusters
            << ", kernels to launch: " << session->kernelCount() << " (" << opts.backend << ", "
            << fusionColumnName(r.column) << " table, opt_level " << opts.fusion->opt_level << ")\n";
  for (const PassRecord& p : r.passes) {
    std::cout << "  " << (p.ran ? (p.changed ? "changed " : "ran     ") : "disabled") << " " << p.name;
    if (p.ran) std::cout << " (" << p.microseconds << " us)";
    std::cout << "\n";
  }
  return Status::Ok();
}

}  // namespace

Command addDumpCommand(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  CLI::App* cmd = app.add_subcommand("dump", "print a model's graph after graph kernel fusion, with a summary");
  cmd->add_option("model", args->model, "the .gkm model, or an .onnx model (converted in memory)")->required();
  args->session.addTo(cmd);
  args->import.addTo(cmd);
  cmd->add_flag("--json", args->json, "print the summary as one JSON object");
  cmd->add_flag("--decode-step", args->decode_step,
                "a decoder LLM: its one-token decode step as `gkrt generate` compiles it (KV cache as CachedAttention)");
  cmd->add_option("--max-context", args->max_context, "with --decode-step: the cache's positions (default 256)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--svg", args->svg, "draw the graph before (left) and after (right) fusion with Graphviz (.svg; .png, .pdf by extension)");
  cmd->add_option("--dot", args->dot, "write that picture as Graphviz DOT text");
  cmd->add_option("--region", args->picture.region, "picture: only the ops within --radius edges of this node or tensor");
  cmd->add_option("--radius", args->picture.region_radius, "picture: edges around --region (default 3)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--collapse", args->picture.collapse_chains, "picture: chains of more ops than this become one box (0 = never; default 8)")->check(CLI::NonNegativeNumber);
  return reportingCommand("dump", [args]() { return dump(*args); });
}

}  // namespace gkrt::tools
