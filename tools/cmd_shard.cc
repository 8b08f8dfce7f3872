// gkrt shard MODEL --ranks N -o PREFIX [--input-shape name=1,128,256 ...]
// Writes PREFIX.rank0.gkm ... PREFIX.rank{N-1}.gkm: the model split Megatron-style for N
// tensor-parallel ranks (fusion/tensor_parallel_shard.h). Each rank's process loads its
// file and runs it with that rank's communicator (runtime/base/mpi_communicator.h under
// mpirun, or NCCL on GPUs); every rank ends with the whole model's outputs.
#include <iostream>
#include <memory>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/model_io.h"
#include "tools/commands.h"
#include "tools/model_source.h"

namespace gkrt::tools {
namespace {

struct ShardArgs {
  std::string model;
  std::string prefix;
  int ranks = 2;
  ImportArgs import;
};

Status shard(const ShardArgs& a) {
  ASSIGN_OR_RETURN(ir::Graph g, loadAnyModel(a.model, a.import));
  for (int r = 0; r < a.ranks; ++r) {
    ShardReport report;
    ASSIGN_OR_RETURN(ir::Graph part, shardForRank(g, r, a.ranks, &report));
    const std::string path = a.prefix + ".rank" + std::to_string(r) + ".gkm";
    RETURN_IF_ERROR(saveModelFile(part, path));
    std::cout << "wrote " << path << ": rank " << r << " of " << a.ranks << "\n";
    if (r > 0) continue;
    std::cout << "  by columns (" << report.column_split.size() << "):";
    for (const std::string& n : report.column_split) std::cout << " " << n;
    std::cout << "\n  by rows, each then summed by AllReduce (" << report.row_split.size() << "):";
    for (const std::string& n : report.row_split) std::cout << " " << n;
    std::cout << "\n";
    for (const std::string& why : report.kept_whole) std::cout << "  kept whole: " << why << "\n";
  }
  return Status::Ok();
}

}  // namespace

Command addShardCommand(CLI::App& app) {
  auto args = std::make_shared<ShardArgs>();
  CLI::App* cmd = app.add_subcommand("shard", "split a model for N tensor-parallel ranks (one .gkm per rank)");
  cmd->add_option("model", args->model, "the model (.gkm or .onnx) with static shapes")->required();
  cmd->add_option("--ranks", args->ranks, "how many ranks (2 or more)")->required();
  cmd->add_option("-o,--output-prefix", args->prefix, "write PREFIX.rankK.gkm for each rank K")->required();
  cmd->add_option("--input-shape", args->import.input_shapes, "a shape for an input with dynamic dims, name=1,128,256");
  return reportingCommand("shard", [args]() { return shard(*args); });
}

}  // namespace gkrt::tools
