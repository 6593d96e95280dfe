#include "cli/admin_command.h"

namespace tiresias {

CLI::App* AddAdminGroup(CLI::App& app) {
  CLI::App* admin = app.add_subcommand(
      "admin",
      "Offline administration of the cluster's security: its certificate "
      "authority (CA) and the certificates it signs.");
  admin->require_subcommand(1);
  return admin;
}

void AddAdminCommands(CLI::App& app, int* exit_code) {
  CLI::App* admin = AddAdminGroup(app);
  AddAdminCertCommands(admin, exit_code);
}

}  // namespace tiresias
