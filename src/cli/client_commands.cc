// AddClientCommands, apart from AddClusterCommands (cluster_commands.cc) so
// that the front binary links none of the daemons' commands.
#include "cli/cluster_commands.h"

namespace tiresias {

void AddClientCommands(CLI::App& app, int* exit_code) {
  AddJobCommands(app, exit_code);
  AddJobControlCommands(app, exit_code);
  AddUpdateCommand(app, exit_code);
  AddHistoryCommand(app, exit_code);
  AddNodesCommand(app, exit_code);
  AddNodeCommand(app, exit_code);
  AddStatusCommand(app, exit_code);
  AddLogsCommand(app, exit_code);
  AddRunCommand(app, exit_code);
  AddPortForwardCommand(app, exit_code);
  AddWatchCommand(app, exit_code);
  AddVcCommands(app, exit_code);
  AddQosCommands(app, exit_code);
  AddReportCommand(app, exit_code);
  AddCompleteCommand(app, exit_code);
}

}  // namespace tiresias
