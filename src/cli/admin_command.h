// `tiresias admin`: offline administration of the cluster's security, run
// by an operator on the machine that keeps the CA key. One file per group
// of commands: admin_cert_command.cc holds `ca init` and the `*-cert issue`
// commands; a later file adds `admin token ...` through the same `admin`
// App, registered in AddAdminCommands (admin_command.cc).
#ifndef TIRESIAS_CLI_ADMIN_COMMAND_H_
#define TIRESIAS_CLI_ADMIN_COMMAND_H_

#include <CLI/CLI.hpp>

namespace tiresias {

// Adds `admin` and every admin command group to `app`. Each callback stores
// the process exit code in *exit_code (0 on success, 1 after printing one
// "tiresias: " line on stderr).
void AddAdminCommands(CLI::App& app, int* exit_code);

// The `admin` subcommand itself (it requires one of its subcommands).
CLI::App* AddAdminGroup(CLI::App& app);

// `admin ca init`, `admin master-cert issue`, `admin agent-cert issue`,
// `admin user-cert issue` (admin_cert_command.cc).
void AddAdminCertCommands(CLI::App* admin, int* exit_code);
// `admin notify-key --user NAME`: a user's webhook key, from the master's
// notify key file (admin_cert_command.cc).
void AddAdminNotifyKeyCommand(CLI::App* admin, int* exit_code);

// `admin token create|list|revoke` and `admin audit`: the master's Admin
// API, with an admin's credentials (admin_token_command.cc).
void AddAdminTokenCommands(CLI::App* admin, int* exit_code);

// `admin vc create|set|remove`: virtual clusters (vc_command.cc).
void AddAdminVcCommands(CLI::App* admin, int* exit_code);
// `admin qos create|set|remove` (qos_command.cc).
void AddAdminQosCommands(CLI::App* admin, int* exit_code);
// `admin tuning set` (tuning_command.cc).
void AddAdminTuningCommands(CLI::App* admin, int* exit_code);

// `tiresias whoami` (admin_token_command.cc).
void AddWhoAmICommand(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_ADMIN_COMMAND_H_
