// gkrt bisect MODEL [--backend X] [--reference reference|cpu] [--tolerance T] [--input name=file.npy ...]
//                   [--flags "..."] [--input-shape x=1,3]
// Finds which fusion pass, expander or cluster rule makes the fused outputs differ from
// the unfused reference, and prints the MS_DEV_GRAPH_KERNEL_FLAGS that avoid it
// (tools/fusion_bisect.h). Exit 0 when the outputs match or a verified fix was found.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "runtime/model_io.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/fusion_bisect.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

struct BisectArgs {
  std::string model;
  SessionArgs session;
  ImportArgs import;  // an .onnx model is converted in memory
  std::string reference = "reference";
  double tolerance = 1e-4;
  std::vector<std::string> inputs;
};

Status bisect(const BisectArgs& a, int* exit_code) {
  ImportArgs import = a.import;
  import.input_shapes = a.session.input_shapes;
  ASSIGN_OR_RETURN(ir::Graph model, loadAnyModel(a.model, import));
  if (!a.session.profile.empty()) {
    return makeError(StatusCode::kInvalidArgument, "gkrt bisect takes the fusion column as a flag: --flags \"--fusion_profile=",
                     a.session.profile, "\"");
  }
  ASSIGN_OR_RETURN(SessionOptions opts, a.session.toOptions());  // checks the flags and shapes once
  if (!(a.tolerance >= 0)) return makeError(StatusCode::kInvalidArgument, "--tolerance must be >= 0");
  BisectOptions o;
  o.backend = opts.backend;
  o.reference_backend = a.reference;
  o.flags = a.session.flags;
  o.tolerance = a.tolerance;
  o.backend_options = opts.backend_options;
  o.input_shapes = opts.input_shapes;
  ASSIGN_OR_RETURN(o.inputs, readInputArgs(a.inputs));
  const bool tty = isatty(2);
  if (tty) {
    o.progress = [](const std::string& line) { std::cerr << "\r\033[K[bisect] " << line << std::flush; };
  }
  auto result = bisectFusion(model, o);
  if (tty) std::cerr << "\r\033[K" << std::flush;
  if (!result.ok()) return result.status();
  std::cout << formatBisectReport(*result);
  *exit_code = result->matched || (result->fusion_explains && result->fix_verified) ? 0 : 1;
  return Status::Ok();
}

}  // namespace

Command addBisectCommand(CLI::App& app) {
  auto args = std::make_shared<BisectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bisect", "find the fusion pass, expander or cluster op that changes a model's outputs, and the flags that avoid it");
  cmd->add_option("model", args->model, "the .gkm model, or an .onnx model (converted in memory)")->required();
  args->session.addTo(cmd);
  args->import.addTo(cmd);
  cmd->add_option("--reference", args->reference, "backend of the unfused reference run (reference or cpu)")
      ->check(CLI::IsMember({"reference", "cpu"}));
  cmd->add_option("--tolerance", args->tolerance, "an element matches when |fused - reference| <= T * (1 + |reference|) (default 1e-4)");
  cmd->add_option("--input", args->inputs, "an input from name=file.npy (others are random)");
  return [args]() {
    int code = 1;
    Status s = bisect(*args, &code);
    if (s.ok()) return code;
    std::cerr << "gkrt bisect: " << s.toString() << "\n";
    return 2;
  };
}

}  // namespace gkrt::tools
