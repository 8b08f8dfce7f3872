// Subcommands of the `gkrt` tool. Each adds itself to the CLI11 app and returns the
// function that runs it after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "runtime/ir/status.h"

namespace gkrt::tools {

using Command = std::function<int()>;

// A command that runs `body` and, on failure, prints "gkrt NAME: <error>" and exits 1.
template <class Body> Command reportingCommand(const char* name, Body body) {
  return [name, body]() {
    Status s = body();
    if (s.ok()) return 0;
    std::cerr << "gkrt " << name << ": " << s.toString() << "\n";
    return 1;
  };
}

Command addRunCommand(CLI::App& app);
Command addInfoCommand(CLI::App& app);
Command addOpsCommand(CLI::App& app);
Command addDumpCommand(CLI::App& app);
Command addConvertCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);
Command addBenchCommand(CLI::App& app);
Command addBisectCommand(CLI::App& app);
Command addGenerateCommand(CLI::App& app);
Command addTokenizeCommand(CLI::App& app);
Command addShardCommand(CLI::App& app);

}  // namespace gkrt::tools
