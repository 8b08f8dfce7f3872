#include "tools/op_list.h"

#include <fstream>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"

namespace gkrt::tools {

void collectOps(const ir::Graph& g, std::set<std::string>& ops) {
  for (const ir::Node& n : g.nodes) {
    ops.insert(n.op->name);
    if (n.subgraph) collectOps(*n.subgraph, ops);
    for (const auto& sub : n.subgraphs) collectOps(*sub, ops);
  }
}

namespace {

// Fuses `g` for every backend and opt level, collecting the ops; control-flow
// subgraphs too, as sessions fuse them when they compile them.
Status collectFusedOps(const ir::Graph& g, std::set<std::string>& ops) {
  for (const std::string& name : availableBackends()) {
    ASSIGN_OR_RETURN(auto backend, createBackend(name));
    for (const char* level : {"--opt_level=1", "--opt_level=2", "--opt_level=3"}) {
      ir::Graph fused = ir::cloneGraph(g);
      ASSIGN_OR_RETURN(FusionOptions fo, parseFusionFlags(level));
      auto report = runFusionPipeline(fused, fo, backend->fusionColumn(),
                                      [&](const ir::Node& n) { return backend->supports(fused, n); });
      if (!report.ok()) return report.status().withContext(std::string("fusing for ") + name + " at " + level);
      collectOps(fused, ops);
    }
  }
  for (const ir::Node& n : g.nodes) {
    for (const auto& sub : n.subgraphs) RETURN_IF_ERROR(collectFusedOps(*sub, ops));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::set<std::string>> opListFor(const ir::Graph& g) {
  std::set<std::string> ops;
  collectOps(g, ops);
  RETURN_IF_ERROR(collectFusedOps(g, ops));
  return ops;
}

Status writeOpList(const std::string& path, std::set<std::string> ops) {
  ops.insert("Fused");
  ops.insert("Reshape");
  for (const auto& [twin, of] : opTwins()) {
    if (ops.count(twin)) ops.insert(of);
  }
  std::ofstream f(path);
  if (!f) return makeError(StatusCode::kIoError, "cannot write '", path, "'");
  f << "# ops for a minimal gkrt build: cmake --preset minimal -DGKRT_OP_LIST=" << path << "\n";
  for (const std::string& op : ops) f << op << "\n";
  if (!f) return makeError(StatusCode::kIoError, "writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace gkrt::tools
