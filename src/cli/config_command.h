// `tiresias config` (config_command.cc).
#ifndef TIRESIAS_CLI_CONFIG_COMMAND_H_
#define TIRESIAS_CLI_CONFIG_COMMAND_H_

#include <CLI/CLI.hpp>

namespace tiresias {

void AddConfigCommand(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_CONFIG_COMMAND_H_
