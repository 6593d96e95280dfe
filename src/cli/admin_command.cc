#include "cli/admin_command.h"

namespace tiresias {

CLI::App* AddAdminGroup(CLI::App& app) {
  CLI::App* admin = app.add_subcommand(
      "admin",
      "Administration of the cluster's security: its certificate authority "
      "(CA) and the certificates it signs (offline, where the CA key is), "
      "and the master's tokens and audit log (an admin token).");
  admin->require_subcommand(1);
  return admin;
}

void AddAdminCommands(CLI::App& app, int* exit_code) {
  CLI::App* admin = AddAdminGroup(app);
  AddAdminCertCommands(admin, exit_code);
  AddAdminNotifyKeyCommand(admin, exit_code);
  AddAdminTokenCommands(admin, exit_code);
  AddAdminVcCommands(admin, exit_code);
  AddAdminQosCommands(admin, exit_code);
  AddAdminTuningCommands(admin, exit_code);
}

}  // namespace tiresias
