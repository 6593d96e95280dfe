// AgentDaemon: its start and stop, the converge loop, and the thread that
// keeps the WatchDesiredState stream open. The reports, Register,
// Heartbeat and applying the desired state are in agent_protocol.cc; the
// state directory and recovery in agent_recovery.cc; tasks in
// agent_tasks.cc.
#include "agent/agent_daemon.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/agent_daemon_internal.h"
#include "agent/agent_dependencies.h"
#include "agent/file_store.h"
#include "agent/image_store.h"
#include "agent/log_service.h"
#include "agent/run_as.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"
#include "security/private_files.h"

namespace tiresias {

namespace {

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

// "host" of "host", "host:port", "[v6]:port" or "v6".
std::string AddressHost(const std::string& address) {
  if (address.starts_with('[')) {
    return address.substr(0, address.find(']') + 1);
  }
  const size_t colon = address.find(':');
  if (colon != std::string::npos &&
      address.find(':', colon + 1) == std::string::npos) {
    return address.substr(0, colon);
  }
  return address.find(':') == std::string::npos
             ? address
             : absl::StrCat("[", address, "]");
}

// `wait`, give or take 20%: the agents of one master, cut off together,
// do not all retry in step.
std::chrono::milliseconds Jittered(std::chrono::milliseconds wait) {
  thread_local std::minstd_rand gen(std::random_device{}());
  std::uniform_real_distribution<double> factor(0.8, 1.2);
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(wait.count()) * factor(gen)));
}

}  // namespace

AgentDaemon::AgentDaemon(AgentOptions options, AgentDependencies deps)
    : options_(std::move(options)),
      deps_(std::make_unique<AgentDependencies>(std::move(deps))) {
  if (options_.node_name.empty()) options_.node_name = Hostname();
}

AgentDaemon::~AgentDaemon() {
  Stop();
  images_.reset();  // before mu_ goes: its callback takes it
}

void AgentDaemon::Log(std::string_view line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "tiresias agent: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  }
}

absl::Status AgentDaemon::Start() {
  if (options_.state_dir.empty()) {
    return absl::InvalidArgumentError("state dir: must not be empty");
  }
  // Users' fallback checkpoints are theirs: left as they are.
  absl::StatusOr<security::PrivateDir> state_dir = security::EnsurePrivateDir(
      options_.state_dir, 0711, {"checkpoints", "images", "containers"});
  if (!state_dir.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("state dir: ", state_dir.status().message()));
  }
  if (!state_dir->tightened.empty()) {
    Log(security::DescribeTightened(options_.state_dir, *state_dir));
  }
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(options_.state_dir) / "logs", ec);
  if (!ec) {  // the agent's alone: it serves each log to its job's owner
    std::filesystem::permissions(
        std::filesystem::path(options_.state_dir) / "logs",
        std::filesystem::perms::owner_all, ec);
  }
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", options_.state_dir, ": cannot create: ", ec.message()));
  }
  if (absl::Status s = LockStateDir(); !s.ok()) return s;
  PosixLauncherOptions launcher_options;
  launcher_options.checkpoint_fallback_dir =
      options_.checkpoint_fallback_dir.empty()
          ? options_.state_dir + "/checkpoints"
          : options_.checkpoint_fallback_dir;
  launcher_options.run_as.allow_root_tasks = options_.allow_root_tasks;
  launcher_options.container_runtime = options_.container_runtime;
  launcher_options.container_dir = options_.state_dir + "/containers";
  launcher_options.gpu_device_dir = options_.gpu_device_dir;
  if (!options_.user_map_file.empty()) {
    absl::StatusOr<UserMap> map = UserMap::Load(options_.user_map_file);
    if (!map.ok()) {
      return absl::Status(map.status().code(),
                          absl::StrCat("user map: ", map.status().message()));
    }
    launcher_options.run_as.user_map = *std::move(map);
  }
  run_as_ = launcher_options.run_as;
  if (absl::Status s = LoadOrCreateToken(); !s.ok()) return s;
  if (absl::StatusOr<std::optional<std::string>> boot =
          deps_->files->Read("/proc/sys/kernel/random/boot_id");
      boot.ok() && boot->has_value()) {
    boot_id_ = std::string(absl::StripAsciiWhitespace(**boot));
  }
  DiscoveryOptions discovery;
  discovery.emulate = options_.emulate_gpus;
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(discovery);
  if (!gpus.ok() && absl::IsNotFound(gpus.status()) &&
      options_.spare_cpus > 0) {
    // Found none, and told to keep CPUs for CPU-only jobs: a node for them
    // alone (the master places no GPU job here).
    Log(absl::StrCat(gpus.status().message(),
                     "; a node for CPU-only jobs alone (--spare-cpus)"));
    gpus = std::vector<GpuInfo>{};
  }
  if (!gpus.ok()) return gpus.status();
  gpus_ = *std::move(gpus);
  if (gpus_.empty() && options_.spare_cpus <= 0) {
    return absl::InvalidArgumentError(
        "no GPU (--gpus 0): a node without GPUs takes only CPU-only jobs, "
        "so it must keep CPUs for them (--spare-cpus N)");
  }
  absl::StatusOr<TaskRecord> record =
      TaskRecord::Open(options_.state_dir + "/tasks.json", deps_->files);
  if (!record.ok()) return record.status();
  record_.emplace(*std::move(record));
  const std::string host = AddressHost(options_.advertised_address);
  // A write to a pipe or socket a task closed (its stdin, a forwarded
  // port) is an error, never the end of the agent.
  signal(SIGPIPE, SIG_IGN);
  io_sessions_ = std::make_unique<TaskIoRegistry>();
  // An image prepared: start what waited for it at once.
  images_ = std::make_unique<ImageStore>(
      ImageStoreOptions{.podman = options_.podman,
                        .dir = options_.state_dir + "/images",
                        .folders = options_.image_folders,
                        .allow = options_.image_allow},
      [this] {
        MutexLock lock(&mu_);
        poked_ = true;
        cv_.SignalAll();
      });
  absl::StatusOr<std::unique_ptr<AgentLogServer>> logs = AgentLogServer::Start(
      options_.log_listen.empty() ? absl::StrCat(host, ":0")
                                  : options_.log_listen,
      options_.state_dir + "/logs", options_.tls,
      TaskIoHooks{.sessions = io_sessions_.get(),
                  .running_pgid = [this](const TaskKey& key) {
                    return RunningPgid(key);
                  }});
  if (!logs.ok()) return logs.status();
  log_server_ = *std::move(logs);
  log_address_ = absl::StrCat(host, ":", log_server_->port());
  Log(DescribeRunAs(launcher_options.run_as));
  if (absl::Status s = CheckSpareCpus(); !s.ok()) return s;
  if (absl::Status s = SetUpCgroups(launcher_options); !s.ok()) return s;
  MeasureResources(launcher_options);
  launcher_ = deps_->make_launcher(std::move(launcher_options));
  stub_ = std::make_unique<AgentStub>(deps_->make_master_stub(options_));
  Log(absl::StrCat("node ", options_.node_name, ": ", gpus_.size(),
                   " GPU(s), master ", options_.master_address));
  AdoptRecorded();
  RemoveStaleFiles();
  RemoveStaleCgroups();
  LoadSession();
  thread_ = std::thread([this] { Loop(); });
  watch_thread_ = std::thread([this] { WatchLoop(); });
  return absl::OkStatus();
}

void AgentDaemon::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  log_server_.reset();
  RemoveCgroupParent();
  if (lock_fd_ >= 0) {  // the next agent on this state dir may start
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

void AgentDaemon::BeginDrain() {
  MutexLock lock(&mu_);
  if (draining_) return;
  draining_ = true;
  Log("shutting down: handing this node's jobs back to the master");
  // The master hears first (the next heartbeat says `leaving`): it
  // preempts the node's launches, all their ranks on every node at once,
  // and the answer tells this agent to stop its tasks. Stopping them here
  // first would let a rank on another node fail on its lost peer before
  // the master knew why. If the master cannot be reached, the loop stops
  // them itself (StopAllForShutdown).
  cv_.SignalAll();
}

void AgentDaemon::StopAllForShutdown() {
  MutexLock lock(&mu_);
  for (auto& [key, task] : tasks_) {
    if (!task.ended && !task.stop_reason) {
      RequestStop(key, task, v1::STOP_REASON_SHUTDOWN);
    }
  }
}

absl::Status AgentDaemon::WaitDrained(std::chrono::milliseconds timeout) {
  bool done;
  {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (!drained_) {
      if (cv_.WaitUntil(&mu_, deadline)) break;
    }
    done = drained_;
  }
  Stop();
  if (done) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat(
      "the master did not acknowledge every task's end within ",
      timeout.count(), " ms; the next agent on ", options_.state_dir,
      " reports them"));
}

absl::Status AgentDaemon::Drain(std::chrono::milliseconds timeout) {
  BeginDrain();
  return WaitDrained(timeout);
}

int AgentDaemon::task_count() const {
  MutexLock lock(&mu_);
  return static_cast<int>(tasks_.size());
}

bool AgentDaemon::Sleep(std::chrono::milliseconds d) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  MutexLock lock(&mu_);
  while (!stopping_ && !poked_) {
    if (cv_.WaitUntil(&mu_, deadline)) break;
  }
  return !stopping_;
}

void AgentDaemon::Loop() {
  std::chrono::milliseconds backoff = options_.min_backoff;
  bool registered;
  auto next_backoff = [&] {
    backoff = std::min(backoff * 2, options_.max_backoff);
    // Registered, an unreachable master is retried at heartbeat cadence at
    // least: a retry that overshot the lease would fence every task for a
    // master that came back in time.
    if (registered) backoff = std::min(backoff, heartbeat_interval_);
  };
  // A saved session is tried with a heartbeat first (see the header).
  {
    MutexLock lock(&mu_);
    registered = session_ != 0;
  }
  auto last_beat = std::chrono::steady_clock::time_point{};
  bool changed = true;
  while (true) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (!registered) {
      {
        MutexLock lock(&mu_);
        if (draining_ && tasks_.empty()) {  // nothing to hand back
          drained_ = true;
          cv_.SignalAll();
          return;
        }
      }
      {
        MutexLock lock(&mu_);
        if (draining_ && !tasks_.empty()) {
          for (auto& [key, task] : tasks_) {
            if (!task.ended && !task.stop_reason) {
              RequestStop(key, task, v1::STOP_REASON_SHUTDOWN);
            }
          }
        }
      }
      if (Register(backoff)) {
        registered = true;
        backoff = options_.min_backoff;
        last_beat = std::chrono::steady_clock::now();
        changed = true;  // tell the master at once what Register started
      } else {
        if (!Sleep(Jittered(backoff))) return;
        next_backoff();
        continue;
      }
    }
    if (PollExits()) changed = true;
    if (ReadRunningProfiles()) changed = true;
    ReadTaskUsage();
    bool leaving_untold;
    {
      MutexLock lock(&mu_);
      // A push: the desired state changed; report at once and act on the
      // answer (never on the pushed copy, which may be late).
      if (std::exchange(poked_, false)) changed = true;
      leaving_untold = draining_ && !leaving_told_;
    }
    const auto now = std::chrono::steady_clock::now();
    if (changed || leaving_untold || now - last_beat >= heartbeat_interval_) {
      absl::StatusOr<bool> s = Heartbeat();
      if (s.ok()) {
        backoff = options_.min_backoff;
        last_beat = now;
        changed = *s;
        MutexLock lock(&mu_);
        if (drained_) return;
      } else if (absl::IsNotFound(s.status())) {
        Log(absl::StrCat("master does not know node ", node_id_.load(),
                         " (this session): registering again"));
        registered = false;
        continue;
      } else {
        bool draining;
        {
          MutexLock lock(&mu_);
          draining = draining_;
        }
        // Shutting down and the master cannot be told: stop the tasks here
        // (they checkpoint); their ends are reported when it can be.
        if (draining) StopAllForShutdown();
        Log(absl::StrCat("heartbeat to ", options_.master_address,
                         " failed (tasks keep running until the lease "
                         "lapses; retry in ",
                         backoff.count(), " ms): ", s.status().ToString()));
        if (!Sleep(Jittered(backoff))) return;
        next_backoff();
        continue;
      }
    }
    const auto to_beat = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_beat + heartbeat_interval_ - std::chrono::steady_clock::now());
    if (!Sleep(std::clamp(to_beat, std::chrono::milliseconds(1),
                          options_.poll_interval))) {
      return;
    }
  }
}

void AgentDaemon::WatchLoop() {
  std::chrono::milliseconds backoff = options_.min_backoff;
  while (true) {
    v1::WatchDesiredStateRequest req;
    {
      MutexLock lock(&mu_);
      // Only once the master has confirmed the session: a task started
      // from a push before that would have no lease renewed yet.
      while (!stopping_ && !session_confirmed_) cv_.Wait(&mu_);
      if (stopping_) return;
      req.set_node_id(node_id_.load());
      req.set_session(session_);
      req.set_after_version(applied_version_);
    }
    grpc::ClientContext ctx;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      watch_ctx_ = &ctx;
    }
    std::unique_ptr<grpc::ClientReaderInterface<v1::DesiredState>> reader =
        stub_->get().WatchDesiredState(&ctx, req);
    v1::DesiredState message;
    while (reader->Read(&message)) {
      backoff = options_.min_backoff;
      MutexLock lock(&mu_);
      if (message.session() != session_ ||
          message.version() <= applied_version_) {
        continue;  // nothing new
      }
      poked_ = true;
      cv_.SignalAll();
    }
    // Why it ended does not matter: cancelled for a new session, the master
    // away, or the session over (the loop registers again).
    reader->Finish();
    MutexLock lock(&mu_);
    watch_ctx_ = nullptr;
    if (stopping_) return;
    if (req.session() != session_) continue;  // registered again: reopen now
    const auto deadline = std::chrono::steady_clock::now() + Jittered(backoff);
    while (!stopping_ && req.session() == session_) {
      if (cv_.WaitUntil(&mu_, deadline)) break;
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace tiresias
