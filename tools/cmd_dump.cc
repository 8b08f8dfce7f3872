// gkrt dump MODEL [--backend cpu] [--flags "..."] [--fusion-profile gpu] [--input-shape x=1,3] [--json]
// Prints the fused graph and a summary, or (--json) one JSON object for scripts.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "fusion/graph_text.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct DumpArgs {
  std::string model;
  SessionArgs session;
  bool json = false;
};

Status dump(const DumpArgs& a) {
  ASSIGN_OR_RETURN(ir::Graph model, loadModelFile(a.model));
  ASSIGN_OR_RETURN(SessionOptions opts, a.session.toOptions());
  ASSIGN_OR_RETURN(auto session, Session::create(model, opts));
  const FusionReport& r = session->fusionReport();
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
    j["dump_files"] = r.dump_files;
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
  cmd->add_option("model", args->model, "the .gkm model")->required();
  args->session.addTo(cmd);
  cmd->add_flag("--json", args->json, "print the summary as one JSON object");
  return reportingCommand("dump", [args]() { return dump(*args); });
}

}  // namespace gkrt::tools
