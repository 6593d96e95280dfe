// `tiresias agent`: the node agent daemon (src/agent/agent_daemon.h) as a
// command. Runs until SIGINT or SIGTERM, then stops heartbeating and exits,
// leaving its tasks running for a restarted agent to re-attach to.
#ifndef TIRESIAS_CLI_AGENT_COMMAND_H_
#define TIRESIAS_CLI_AGENT_COMMAND_H_

#include <CLI/CLI.hpp>

namespace tiresias {

// Adds the subcommand to `app`; its callback runs the agent and stores the
// process exit code in *exit_code (1 if the agent could not start).
void AddAgentCommand(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_AGENT_COMMAND_H_
