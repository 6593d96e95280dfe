#include "cli/master_flags.h"

#include <pthread.h>
#include <signal.h>

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cli/sweep.h"
#include "core/status_macros.h"

namespace tiresias {

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
  if (f.max_gpus_per_node < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-gpus-per-node ", f.max_gpus_per_node,
                     ": expected a positive number"));
  }
  o.max_gpus_per_node = f.max_gpus_per_node;
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

void AddMasterFlags(CLI::App* cmd, MasterFlags* flags) {
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
                  "Seconds of agent silence before its node is declared lost "
                  "and its jobs rerun elsewhere; must exceed an agent's "
                  "--grace by its lease (see `tiresias agent --help`)")
      ->capture_default_str();
  cmd->add_option("--max-gpus-per-node", f.max_gpus_per_node,
                  "Refuse agents that report more GPUs than this")
      ->capture_default_str();
  cmd->add_option("--http-listen", f.http_listen,
                  "host:port to serve /metrics (Prometheus) and /healthz on "
                  "(port 0 picks a free one; default: not served)");
}

void RunningMaster::Shutdown() {
  if (http) http->Shutdown();
  if (server) server->Shutdown();
}

absl::StatusOr<RunningMaster> StartMaster(const MasterFlags& f,
                                          master::Clock* clock) {
  ASSIGN_OR_RETURN(MasterOptions options, ToOptions(f));
  std::error_code ec;
  std::filesystem::create_directories(f.state_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--state-dir ", f.state_dir, ": cannot create: ", ec.message()));
  }
  RunningMaster m;
  absl::StatusOr<std::unique_ptr<MasterState>> state =
      MasterState::Open(options, clock);
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        absl::StrCat("cannot open the master state in ",
                                     f.state_dir, ": ",
                                     state.status().message()));
  }
  m.state = std::move(*state);
  absl::StatusOr<std::unique_ptr<MasterServer>> server =
      MasterServer::Start(m.state.get(), clock, f.listen);
  if (!server.ok()) {
    return server.status();  // names the address and the likely cause
  }
  m.server = std::move(*server);
  m.address = BoundAddress(f.listen, m.server->port());
  if (!f.http_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MasterHttpServer>> http =
        MasterHttpServer::Start(m.state.get(), f.http_listen);
    if (!http.ok()) {
      m.server->Shutdown();
      return absl::Status(http.status().code(),
                          absl::StrCat("--http-listen ", f.http_listen, ": ",
                                       http.status().message()));
    }
    m.http = std::move(*http);
    m.http_address = BoundAddress(f.http_listen, m.http->port());
  }
  return m;
}

namespace {
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

const char* StopSignalWithin(std::chrono::milliseconds timeout) {
  sigset_t set = StopSignals();
  struct timespec ts = {
      static_cast<time_t>(timeout.count() / 1000),
      static_cast<long>((timeout.count() % 1000) * 1000000)};
  const int signal_number = sigtimedwait(&set, nullptr, &ts);
  if (signal_number <= 0) return nullptr;
  return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

const char* WaitForStopSignal() {
  sigset_t set = StopSignals();
  int signal_number = 0;
  sigwait(&set, &signal_number);
  return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace tiresias
