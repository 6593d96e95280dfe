// `tiresias tune` (tune_command.cc).
#ifndef TIRESIAS_CLI_TUNE_COMMAND_H_
#define TIRESIAS_CLI_TUNE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace tiresias {

void AddTuneCommand(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_TUNE_COMMAND_H_
