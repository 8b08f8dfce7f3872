// gkrt run MODEL(.gkm|.onnx) [--input name=file.npy ...] [--random-inputs] [--input-shape name=1,3,224,224]
//          [--freeze name=file.npy] [--dim name=64] [--backend cpu] [--print] [--output-dir DIR]
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <set>

#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tools/array_print.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/npy.h"
#include "tools/output_names.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  SessionArgs session;
  ImportArgs import;  // an .onnx model is converted in memory
  bool random_inputs = false;
  unsigned seed = 0;
  bool print = false;
  std::string output_dir;
};

Status run(const RunArgs& a) {
  ImportArgs import = a.import;
  import.input_shapes = a.session.input_shapes;
  ASSIGN_OR_RETURN(ir::Graph model, loadAnyModel(a.model, import));
  ASSIGN_OR_RETURN(SessionOptions opts, a.session.toOptions());
  ASSIGN_OR_RETURN(auto given, readInputArgs(a.inputs));
  for (const auto& [name, t] : given) {
    if (!opts.input_shapes.count(name)) opts.input_shapes[name] = t.shape();
  }
  for (int t : model.inputs) {  // inputs with no file are an error, unless --random-inputs
    if (!given.count(model.tensors[t].name) && !a.random_inputs) {
      return makeError(StatusCode::kInvalidArgument, "input '", model.tensors[t].name, "' (",
                       dtypeName(model.tensors[t].dtype), " ", shapeToString(model.tensors[t].shape),
                       ") is not given; pass --input ", model.tensors[t].name, "=file.npy, or --random-inputs");
    }
  }
  for (const auto& [name, t] : given) {
    if (model.findTensor(name) < 0 || std::find(model.inputs.begin(), model.inputs.end(), model.findTensor(name)) == model.inputs.end()) {
      std::string valid;
      for (int i : model.inputs) valid += (valid.empty() ? "" : ", ") + model.tensors[i].name;
      return makeError(StatusCode::kNotFound, "--input names '", name, "', the model's inputs are: ", valid);
    }
  }
  ASSIGN_OR_RETURN(auto session, Session::create(model, opts));
  for (const auto& [name, t] : given) {
    ASSIGN_OR_RETURN(HostTensor typed, npyToModelType(t, model.tensors[model.findTensor(name)].dtype, name));
    RETURN_IF_ERROR(session->setInput(name, typed));
  }
  std::mt19937 rng(a.seed);
  for (const TensorInfo& in : session->inputs()) {  // --random-inputs: floats in [-1, 1), others 0
    if (given.count(in.name)) continue;
    ASSIGN_OR_RETURN(HostTensor t, randomInput(in, rng));
    std::cout << "input " << in.name << ": random " << dtypeName(in.dtype) << " " << shapeToString(in.shape) << "\n";
    RETURN_IF_ERROR(session->setInput(in.name, t));
  }
  RETURN_IF_ERROR(session->run());
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec) {
      return makeError(StatusCode::kIoError, "--output-dir: cannot create '", a.output_dir, "': ", ec.message(),
                       "; give a directory you can write to");
    }
  }
  std::set<std::string> written;
  for (const TensorInfo& info : session->outputs()) {
    ASSIGN_OR_RETURN(HostTensor out, session->output(info.name));
    if (a.print || a.output_dir.empty()) std::cout << info.name << ": " << formatArray(out) << "\n";
    if (!a.output_dir.empty()) {  // names are never paths: "gpu_0/softmax" -> gpu_0_softmax.npy
      const std::string file_name = outputFileName(info.name, written);
      written.insert(file_name);
      const std::filesystem::path file = std::filesystem::path(a.output_dir) / file_name;
      if (file_name != info.name + ".npy") std::cout << "output '" << info.name << "' written as " << file.string() << "\n";
      if (Status w = writeNpy(file.string(), out); !w.ok()) {
        return makeError(w.code(), "--output-dir: ", w.message(), "; give a directory you can write to, with free space");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Command addRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "run a .gkm or .onnx model on inputs from .npy files");
  cmd->add_option("model", args->model, "the .gkm model, or an .onnx model (converted in memory)")->required();
  cmd->add_option("--input", args->inputs, "an input as name=file.npy (repeatable)");
  cmd->add_flag("--random-inputs", args->random_inputs, "inputs not given by --input are random (floats in [-1, 1), others 0)");
  cmd->add_option("--seed", args->seed, "the seed of --random-inputs (default 0)");
  args->session.addTo(cmd);
  args->import.addTo(cmd);
  cmd->add_flag("--print", args->print, "print each output numpy-style (default when no --output-dir)");
  cmd->add_option("--output-dir", args->output_dir, "write each output as DIR/<output name>.npy");
  return reportingCommand("run", [args]() { return run(*args); });
}

}  // namespace gkrt::tools
