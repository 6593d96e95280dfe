// `tiresias master`: the master daemon. Opens the state dir, serves the
// client API and the agent protocol until SIGINT or SIGTERM, then stops
// serving (in-flight calls finish) and exits 0.
#include <pthread.h>
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/sweep.h"
#include "core/status_macros.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "place/placement.h"
#include "sched/policy.h"

namespace tiresias {
namespace {

struct MasterFlags {
  std::string listen = "127.0.0.1:50051";
  std::string state_dir = "./tiresias-state";
  std::string policy = "tiresias-l";
  std::string thresholds = "3600";
  std::string promote_knob = "inf";
  std::string placement;
  double node_timeout_seconds = 30;
};

absl::StatusOr<MasterOptions> ToOptions(const MasterFlags& f) {
  MasterOptions o;
  o.state_dir = f.state_dir;
  o.policy = f.policy;
  o.placement = f.placement;
  auto queues = QueueConfig::Parse(f.thresholds);
  if (!queues.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--thresholds ", f.thresholds, ": ",
                     queues.status().message()));
  }
  o.queues = *queues;
  ASSIGN_OR_RETURN(o.promote_knob, ParseKnob(f.promote_knob));
  if (!(f.node_timeout_seconds > 0) ||
      !std::isfinite(f.node_timeout_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-timeout ", f.node_timeout_seconds,
                     ": expected a positive number of seconds"));
  }
  o.node_timeout = Seconds{f.node_timeout_seconds};
  return o;
}

// The address to print: the host the user gave with the port bound (which
// differs from the one given when it was 0).
std::string BoundAddress(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  const std::string host =
      colon == std::string::npos ? listen : listen.substr(0, colon);
  return absl::StrCat(host, ":", port);
}

int RunMaster(const MasterFlags& f) {
  absl::StatusOr<MasterOptions> options = ToOptions(f);
  if (!options.ok()) return cli::Fail(std::string(options.status().message()));
  std::error_code ec;
  std::filesystem::create_directories(f.state_dir, ec);
  if (ec) {
    return cli::Fail(absl::StrCat("--state-dir ", f.state_dir,
                                  ": cannot create: ", ec.message()));
  }
  // Block the stop signals before any thread starts (gRPC's and the
  // scheduling thread inherit the mask), so that only sigwait below sees
  // them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  master::RealClock clock;
  absl::StatusOr<std::unique_ptr<MasterState>> state =
      MasterState::Open(*options, &clock);
  if (!state.ok()) {
    return cli::Fail(absl::StrCat("cannot open the master state in ",
                                  f.state_dir, ": ",
                                  state.status().message()));
  }
  absl::StatusOr<std::unique_ptr<MasterServer>> server =
      MasterServer::Start(state->get(), &clock, f.listen);
  if (!server.ok()) {
    return cli::Fail(absl::StrCat("cannot listen on ", f.listen, ": ",
                                  server.status().message()));
  }
  std::printf("tiresias master: listening on %s (state dir %s, policy %s)\n",
              BoundAddress(f.listen, (*server)->port()).c_str(),
              f.state_dir.c_str(), f.policy.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "tiresias master: %s received, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Shutdown();
  server->reset();
  state->reset();
  return 0;
}

}  // namespace

void AddMasterCommand(CLI::App& app, const std::string& /*command_line*/,
                      int* exit_code) {
  auto flags = std::make_shared<MasterFlags>();
  CLI::App* cmd = app.add_subcommand(
      "master",
      "Run the master daemon: schedules jobs on the agents' GPUs, keeps its "
      "state in --state-dir, runs until SIGINT or SIGTERM.\nPolicies: " +
          absl::StrJoin(PolicyNames(), ", ") +
          ".\nPlacements: " + absl::StrJoin(PlacerNames(), ", ") + ".");
  MasterFlags& f = *flags;
  cmd->add_option("--listen", f.listen,
                  "host:port to serve on (port 0 picks a free one; the "
                  "address is printed)")->capture_default_str();
  cmd->add_option("--state-dir", f.state_dir,
                  "Folder for state.db and default checkpoints (created if "
                  "missing)")->capture_default_str();
  cmd->add_option("--policy", f.policy, "Scheduling policy")
      ->capture_default_str();
  cmd->add_option("--thresholds", f.thresholds,
                  "Queue bounds in GPU-seconds: 3600 (K=2) or 3250,7200 (K=3)")
      ->capture_default_str();
  cmd->add_option("--promote-knob", f.promote_knob,
                  "PROMOTEKNOB: a number, or inf to turn promotion off")
      ->capture_default_str();
  cmd->add_option("--placement", f.placement,
                  "Placement scheme (default: the policy's own)");
  cmd->add_option("--node-timeout", f.node_timeout_seconds,
                  "Seconds of agent silence before its node is marked down")
      ->capture_default_str();
  cmd->callback([flags, exit_code] { *exit_code = RunMaster(*flags); });
}

}  // namespace tiresias
