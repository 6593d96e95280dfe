#include "cli/agent_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/agent_daemon.h"
#include "cli/agent_flags.h"
#include "cli/cluster_client.h"
#include "cli/config_file.h"
#include "cli/master_flags.h"
#include "core/memory_size.h"
#include "core/node_filter.h"
#include "security/private_files.h"
#include "security/tls.h"

namespace tiresias {
namespace {

int RunAgent(const AgentFlags& f) {
  // Its state (tokens, task logs) is its own; tasks set their own umask.
  security::MakeFilesPrivateByDefault();
  // An operator's shell may hold their token: the agent has no use for it,
  // and nothing it starts may inherit it (its tasks never see its
  // environment at all: task_env.h).
  if (const std::string dropped = cli::DropClientCredentials("tiresias agent");
      !dropped.empty()) {
    std::fprintf(stderr, "%s\n", dropped.c_str());
  }
  absl::StatusOr<AgentOptions> checked = ToAgentOptions(f);
  if (!checked.ok()) {
    std::fprintf(stderr, "tiresias agent: %s\n",
                 std::string(checked.status().message()).c_str());
    return 2;
  }
  AgentOptions options = *std::move(checked);
  if (!f.insecure) {
    absl::StatusOr<security::TlsConfig> tls =
        security::LoadTlsDir(f.tls_dir, "agent");
    if (!tls.ok()) {
      std::fprintf(stderr, "tiresias: agent: --tls-dir %s: %s\n",
                   f.tls_dir.c_str(),
                   std::string(tls.status().message()).c_str());
      return 1;
    }
    options.tls = *std::move(tls);
  } else {
    std::fprintf(stderr,
                 "tiresias agent: WARNING: --insecure: no TLS; anyone who "
                 "reaches this machine's log port may read task logs\n");
  }
  // Blocked before any thread starts, so that every thread inherits the
  // mask and only this thread takes them. Tasks get an empty mask
  // (spawn.h).
  BlockStopSignals();
  BlockHangupSignal();
  AgentDaemon agent(options);
  absl::Status status = agent.Start();
  if (!status.ok()) {
    std::fprintf(stderr, "tiresias: agent: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  if (const std::string closed = security::FirstClosedFolder(f.state_dir);
      geteuid() == 0 && !closed.empty()) {
    std::fprintf(stderr,
                 "tiresias agent: WARNING: other users cannot traverse %s: "
                 "their tasks cannot be profiled, nor checkpoint by default "
                 "when their account has no usable home (they fall back to "
                 "%s/checkpoints/<account>); give --state-dir a folder "
                 "whose parents others may traverse\n",
                 closed.c_str(), f.state_dir.c_str());
  }
  const char* signal_name = nullptr;
  while ((signal_name = StopSignalWithin(std::chrono::milliseconds(100))) ==
         nullptr) {
    if (HangupPending()) {
      std::fprintf(stderr,
                   "tiresias agent: SIGHUP: the agent reads its flags and "
                   "--config file only when it starts; restart it to apply "
                   "a change (its tasks keep running with --keep-tasks)\n");
    }
    if (absl::Status fatal = agent.fatal(); !fatal.ok()) {
      std::fprintf(stderr, "tiresias: agent: %s\n",
                   std::string(fatal.message()).c_str());
      agent.Stop();
      return 1;
    }
  }
  if (f.keep_tasks) {
    std::fprintf(stderr,
                 "tiresias agent: %s: stopping; tasks keep running for the "
                 "next agent on %s (until their lease lapses)\n",
                 signal_name, f.state_dir.c_str());
    agent.Stop();
    return 0;
  }
  std::fprintf(stderr,
               "tiresias agent: %s: handing this node's jobs back to the "
               "master (they checkpoint and resume elsewhere); again to stop "
               "at once\n",
               signal_name);
  agent.BeginDrain();
  const auto give_up = std::chrono::steady_clock::now() + options.grace +
                       std::chrono::seconds(10);
  while (!agent.drained() && std::chrono::steady_clock::now() < give_up) {
    if (StopSignalWithin(std::chrono::milliseconds(100)) != nullptr) {
      std::fprintf(stderr,
                   "tiresias agent: stopping at once; tasks being stopped "
                   "are reported by the next agent on %s\n",
                   f.state_dir.c_str());
      break;
    }
  }
  absl::Status drained = agent.WaitDrained(std::chrono::milliseconds(0));
  if (!drained.ok()) {
    std::fprintf(stderr, "tiresias agent: %s\n",
                 std::string(drained.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<AgentFlags>(DefaultAgentFlags());
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run the node agent: register this machine's GPUs with the master and "
      "run the tasks it assigns, until SIGINT/SIGTERM, which hands the "
      "node's jobs back (they checkpoint and resume elsewhere). Run as "
      "root, the agent runs each task as its job owner's Unix account "
      "(see --user-map, --allow-root-tasks); otherwise every task runs as "
      "the agent's own user.");
  AddAgentFlags(cmd, flags.get());
  auto config = std::make_shared<std::string>();
  cli::AddConfigFlag(cmd, config.get());
  cmd->callback([flags, config, cmd, exit_code] {
    if (absl::Status s = cli::LoadAndCheckConfig(
            *config, "agent", cmd,
            [&] { return ToAgentOptions(*flags).status(); });
        !s.ok()) {
      std::fprintf(stderr, "tiresias agent: %s\n",
                   std::string(s.message()).c_str());
      *exit_code = 2;
      return;
    }
    *exit_code = RunAgent(*flags);
  });
}

}  // namespace tiresias
