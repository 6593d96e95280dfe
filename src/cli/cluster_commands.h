// The cluster subcommands of `tiresias`: `master` (the daemon) and the
// client commands that talk to it over gRPC (`submit`, `jobs`, `job`,
// `nodes`, `cancel`, `logs`, `watch`). One file per subcommand; this header is what
// main.cc calls.
#ifndef TIRESIAS_CLI_CLUSTER_COMMANDS_H_
#define TIRESIAS_CLI_CLUSTER_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <string>

namespace tiresias {

// Adds every cluster subcommand to `app`. Each callback stores the process
// exit code in *exit_code (0 on success, 1 on an error it printed as one
// "tiresias: " line on stderr). `command_line` is the full invocation, for
// the master's startup line.
void AddClusterCommands(CLI::App& app, const std::string& command_line,
                        int* exit_code);

// Only the client subcommands, those that talk to a master (`submit`,
// `jobs`, `job`, `cancel`, `nodes`, `node`, `logs`, `watch`): what the small
// `tiresias` front binary runs itself (front_main.cc). In
// client_commands.cc.
void AddClientCommands(CLI::App& app, int* exit_code);

// The pieces, one per file (master_command.cc, job_commands.cc,
// nodes_command.cc, logs_command.cc).
void AddMasterCommand(CLI::App& app, const std::string& command_line,
                      int* exit_code);
void AddJobCommands(CLI::App& app, int* exit_code);  // submit jobs job
// cancel hold release requeue (jobctl_commands.cc)
void AddJobControlCommands(CLI::App& app, int* exit_code);
void AddUpdateCommand(CLI::App& app, int* exit_code);  // update_command.cc
// `__complete jobs|nodes`, hidden (complete_command.cc).
void AddCompleteCommand(CLI::App& app, int* exit_code);
void AddSubmitCommand(CLI::App& app, int* exit_code);  // submit_command.cc
void AddHistoryCommand(CLI::App& app, int* exit_code);  // history_command.cc
void AddNodesCommand(CLI::App& app, int* exit_code);
// `tiresias vc list|show` (vc_command.cc).
void AddVcCommands(CLI::App& app, int* exit_code);
// `tiresias qos list` (qos_command.cc).
void AddQosCommands(CLI::App& app, int* exit_code);
// `tiresias report usage` (report_command.cc).
void AddReportCommand(CLI::App& app, int* exit_code);
void AddNodeCommand(CLI::App& app, int* exit_code);  // node drain|resume
void AddStatusCommand(CLI::App& app, int* exit_code);  // nodes_command.cc
void AddLogsCommand(CLI::App& app, int* exit_code);
// `run` and `attach` (run_command.cc); `port-forward`
// (port_forward_command.cc).
void AddRunCommand(CLI::App& app, int* exit_code);
void AddPortForwardCommand(CLI::App& app, int* exit_code);
void AddUpCommand(CLI::App& app, int* exit_code);  // up_command.cc
void AddWatchCommand(CLI::App& app, int* exit_code);  // watch_command.cc
void AddDashboardCommand(CLI::App& app, int* exit_code);  // dashboard_command.cc
// `replay` and `compare` (replay_command.cc).
void AddReplayCommands(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_CLUSTER_COMMANDS_H_
