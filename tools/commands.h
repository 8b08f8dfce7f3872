// Subcommands of the `gkrt` tool. Each adds itself to the CLI11 app and returns the
// function that runs it after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace gkrt::tools {

using Command = std::function<int()>;

Command addRunCommand(CLI::App& app);
Command addInfoCommand(CLI::App& app);
Command addOpsCommand(CLI::App& app);
Command addDumpCommand(CLI::App& app);
Command addConvertCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);

}  // namespace gkrt::tools
