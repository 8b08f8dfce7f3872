// gkrt: run, inspect and (in later subcommands) convert, fuse and benchmark models.
#include <iostream>
#include <map>

#include "runtime/base/log.h"
#include "tools/openmp_wait.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  gkrt::tools::boundOpenMpSpinning(argv);
  CLI::App app{"gkrt: an embedded inference runtime built around graph kernel fusion"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what the runtime does (same as GKRT_LOG=info)");
  std::map<CLI::App*, gkrt::tools::Command> commands;
  auto add = [&](gkrt::tools::Command (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    gkrt::tools::Command cmd = adder(app);
    commands[app.get_subcommands({})[before]] = cmd;
  };
  add(gkrt::tools::addRunCommand);
  add(gkrt::tools::addInfoCommand);
  add(gkrt::tools::addOpsCommand);
  add(gkrt::tools::addDumpCommand);
  add(gkrt::tools::addBenchCommand);
  add(gkrt::tools::addBisectCommand);
  add(gkrt::tools::addGenerateCommand);
  add(gkrt::tools::addTokenizeCommand);
  add(gkrt::tools::addShardCommand);
  add(gkrt::tools::addConvertCommand);  // .gguf always; .onnx with ONNX import
#ifdef GKRT_HAVE_ONNX
  add(gkrt::tools::addCompareCommand);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (verbose) gkrt::setLogLevel(gkrt::LogLevel::kInfo);
  for (auto& [sub, cmd] : commands) {
    if (sub->parsed()) return cmd();
  }
  return 1;
}
