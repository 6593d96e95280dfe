// `tiresias-full`: the `tiresias` command with every subcommand, the
// daemons and the simulator included. Users type `tiresias`, whose small
// front binary (front_main.cc) runs the client subcommands itself and execs
// this one for everything else (cli/app.h). One file per subcommand.
#include <CLI/CLI.hpp>
#include <string>

#include "absl/synchronization/mutex.h"
#include "cli/admin_command.h"
#include "cli/agent_command.h"
#include "cli/app.h"
#include "cli/cluster_commands.h"
#include "cli/config_command.h"
#include "cli/profile_command.h"
#include "cli/shell_help.h"
#include "cli/simulate.h"
#include "cli/tune_command.h"

int main(int argc, char** argv) {
#ifdef NDEBUG
  // Debian's Abseil checks every Mutex acquisition for lock-order cycles
  // (its default when Abseil itself is built without NDEBUG): 9% of an idle
  // master's CPU at 2,000 agents. Tests keep the check (they do not run
  // this main).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  tiresias::cli::QuietGrpcLogs();
  CLI::App app{tiresias::cli::kAppDescription};
  app.set_version_flag("--version", TIRESIAS_VERSION);
  app.require_subcommand(1);
  const std::string command_line = tiresias::cli::CommandLine(argc, argv);
  int exit_code = 0;
  tiresias::AddSimulateCommand(app, command_line, &exit_code);
  tiresias::AddTuneCommand(app, &exit_code);
  tiresias::AddClusterCommands(app, command_line, &exit_code);
  tiresias::AddAgentCommand(app, &exit_code);
  tiresias::AddConfigCommand(app, &exit_code);
  tiresias::AddAdminCommands(app, &exit_code);
  tiresias::AddWhoAmICommand(app, &exit_code);
  tiresias::AddProfileCommand(app, &exit_code);
  tiresias::AddReplayCommands(app, &exit_code);
  tiresias::cli::AddShellHelpCommands(app, TIRESIAS_VERSION, &exit_code);
  return tiresias::cli::ParseAndRun(app, argc, argv, exit_code);
}
