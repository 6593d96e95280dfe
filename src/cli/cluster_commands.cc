#include "cli/cluster_commands.h"

namespace tiresias {

void AddClusterCommands(CLI::App& app, const std::string& command_line,
                        int* exit_code) {
  AddMasterCommand(app, command_line, exit_code);
  AddJobCommands(app, exit_code);
  AddNodesCommand(app, exit_code);
  AddStatusCommand(app, exit_code);
  AddLogsCommand(app, exit_code);
  AddUpCommand(app, exit_code);
  AddWatchCommand(app, exit_code);
  AddDashboardCommand(app, exit_code);
}

}  // namespace tiresias
