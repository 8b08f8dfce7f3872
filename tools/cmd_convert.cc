// gkrt convert MODEL.onnx|MODEL.gguf -o MODEL.gkm [--input-shape name=1,3,224,224 ...] [--fuse-for BACKEND]
//              [--emit-op-list OPS.txt]
#include <iostream>
#include <memory>

#include "fusion/pass_manager.h"
#include "runtime/model_io.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/op_list.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct ConvertArgs {
  std::string model;
  std::string output;
  ImportArgs import;
  std::string fuse_for;
  std::string flags;
  std::string op_list;
};

Status convert(const ConvertArgs& a) {
  ASSIGN_OR_RETURN(ImportOptions o, a.import.parse());
  ASSIGN_OR_RETURN(ir::Graph g, importModel(a.model, o));
  std::string dynamic;  // inputs whose dims were kept dynamic
  for (int t : g.inputs) {
    if (!isStatic(g.tensors[t].shape)) dynamic += (dynamic.empty() ? "" : ", ") + g.tensors[t].name + " " + shapeToString(g.tensors[t].shape);
  }
  if (!dynamic.empty() && (!a.op_list.empty() || !a.fuse_for.empty())) {
    return makeError(StatusCode::kInvalidArgument, !a.fuse_for.empty() ? "--fuse-for" : "--emit-op-list",
                     " needs fixed input sizes (fusion runs on static shapes); the model's inputs ", dynamic,
                     " have dynamic dims: add --input-shape for each");
  }
  if (!a.op_list.empty()) {
    ASSIGN_OR_RETURN(auto ops, opListFor(g));
    RETURN_IF_ERROR(writeOpList(a.op_list, ops));
    std::cout << "wrote " << a.op_list << ": " << ops.size() << " ops the model needs\n";
  }
  size_t fused_kernels = 0;
  if (!a.fuse_for.empty()) {  // save the graph as that backend would run it
    ASSIGN_OR_RETURN(auto backend, createBackend(a.fuse_for));
    ASSIGN_OR_RETURN(FusionOptions fo, fusionOptionsFromArgs(a.flags, ""));
    auto report = runFusionPipeline(g, fo, fo.profile.value_or(backend->fusionColumn()),
                                    [&](const ir::Node& n) { return backend->supports(g, n); });
    if (!report.ok()) return report.status().withContext("--fuse-for " + a.fuse_for);
    g.metadata["fused_for"] = a.fuse_for;
    fused_kernels = report->kernels;
  }
  RETURN_IF_ERROR(saveModelFile(g, a.output));
  std::cout << "wrote " << a.output << ": " << g.inputs.size() << " inputs, " << g.outputs.size() << " outputs, "
            << g.nodes.size() << " nodes";
  if (!dynamic.empty()) std::cout << " (dynamic dims kept: " << dynamic << ")";
  if (!a.fuse_for.empty()) std::cout << " (pre-fused for " << a.fuse_for << ": " << fused_kernels << " kernels)";
  std::cout << "\n";
  return Status::Ok();
}

}  // namespace

Command addConvertCommand(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "convert an ONNX model or a GGUF decoder LLM to .gkm");
  cmd->add_option("model", args->model, "the .onnx model, or a .gguf decoder (llama, qwen2)")->required();
  cmd->add_option("-o,--output", args->output, "the .gkm file to write")->required();
  cmd->add_option("--input-shape", args->import.input_shapes, "a shape for an input with dynamic dims, name=1,3,224,224");
  cmd->add_option("--fuse-for", args->fuse_for, "save the graph pre-fused for this backend (reference, cpu)");
  cmd->add_option("--flags", args->flags, "fusion flags for --fuse-for, MS_DEV_GRAPH_KERNEL_FLAGS syntax");
  cmd->add_option("--emit-op-list", args->op_list,
                  "write the ops the model needs, for a minimal build (cmake -DGKRT_OP_LIST=FILE)");
  cmd->add_option("--freeze", args->import.freeze, "fix a graph input to the values of name=file.npy (shape parameters)");
  cmd->add_option("--dim", args->import.dims, "fix a named dim at a size in every input, name=64 (the others stay dynamic)");
  cmd->add_option("--gguf-activations", args->import.gguf_activations,
                  "a .gguf decoder: its quantized matmuls' activations, int8 per block as llama.cpp (default) or float32");
  return reportingCommand("convert", [args]() { return convert(*args); });
}

}  // namespace gkrt::tools
