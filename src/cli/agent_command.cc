#include "cli/agent_command.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent_daemon.h"

namespace tiresias {
namespace {

struct AgentFlags {
  std::string master;
  std::optional<int> gpus;
  std::string name;
  std::string address = "127.0.0.1";
  std::string state_dir;
  std::string log_listen;
  double grace_seconds = 30;
};

std::string DefaultMaster() {
  const char* env = std::getenv("TIRESIAS_MASTER");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:50051";
}

std::string DefaultStateDir() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : "/tmp") +
         "/.tiresias/agent";
}

int RunAgent(const AgentFlags& f) {
  if (f.grace_seconds < 0) {
    std::fprintf(stderr, "tiresias: --grace: expected >= 0 seconds, got %g\n",
                 f.grace_seconds);
    return 1;
  }
  AgentOptions options;
  options.master_address = f.master;
  options.node_name = f.name;
  options.advertised_address = f.address;
  options.emulate_gpus = f.gpus;
  options.state_dir = f.state_dir;
  options.log_listen = f.log_listen;
  options.grace = std::chrono::milliseconds(
      static_cast<int64_t>(f.grace_seconds * 1000));
  // Blocked before any thread starts, so that every thread inherits the
  // mask and sigwait below is the only receiver. Tasks get an empty mask
  // (spawn.h).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  AgentDaemon agent(options);
  absl::Status status = agent.Start();
  if (!status.ok()) {
    std::fprintf(stderr, "tiresias: agent: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr,
               "tiresias agent: %s: stopping (tasks keep running)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  agent.Stop();
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<AgentFlags>();
  flags->master = DefaultMaster();
  flags->state_dir = DefaultStateDir();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run the node agent: register this machine's GPUs with the master and "
      "run the tasks it assigns, until SIGINT/SIGTERM (tasks keep running).");
  AgentFlags& f = *flags;
  cmd->add_option("--master", f.master,
                  "Master host:port (default $TIRESIAS_MASTER, else "
                  "127.0.0.1:50051)")
      ->capture_default_str();
  cmd->add_option("--gpus", f.gpus,
                  "Emulate N GPUs instead of discovering them")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--name", f.name, "Node name (default: hostname)");
  cmd->add_option("--address", f.address,
                  "Host other nodes' job processes reach this one at")
      ->capture_default_str();
  cmd->add_option("--state-dir", f.state_dir,
                  "Task record and job logs (logs/job-ID-attempt-A-rank-R.log)")
      ->capture_default_str();
  cmd->add_option("--log-listen", f.log_listen,
                  "host:port where the master reads task logs from this agent "
                  "(default: the --address host, a free port)");
  cmd->add_option("--grace", f.grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when stopping a task")
      ->capture_default_str();
  cmd->callback([flags, exit_code] { *exit_code = RunAgent(*flags); });
}

}  // namespace tiresias
