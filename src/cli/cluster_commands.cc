#include "cli/cluster_commands.h"

namespace tiresias {

void AddClusterCommands(CLI::App& app, const std::string& command_line,
                        int* exit_code) {
  AddMasterCommand(app, command_line, exit_code);
  AddClientCommands(app, exit_code);
  AddUpCommand(app, exit_code);
  AddDashboardCommand(app, exit_code);
}

}  // namespace tiresias
