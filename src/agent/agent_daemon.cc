// AgentDaemon: the register / heartbeat / converge loop, and the thread
// that keeps the WatchDesiredState stream open.
#include "agent/agent_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/file_store.h"
#include "agent/log_service.h"
#include "agent/proc_table.h"
#include "agent/run_as.h"
#include "nlohmann/json.hpp"
#include "profiler/profiler.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// The gRPC stub, kept out of the header.
class AgentStub {
 public:
  AgentStub(const std::string& address, const security::TlsConfig& tls)
      : stub_(v1::AgentRegistry::NewStub(security::Dial(address, tls))) {}
  v1::AgentRegistry::Stub& get() { return *stub_; }

 private:
  std::unique_ptr<v1::AgentRegistry::Stub> stub_;
};

namespace {

// Exit code reported for a task whose command could not be started (as a
// shell reports "command not found").
constexpr int kStartFailedExitCode = 127;

double UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

// CUDA_VISIBLE_DEVICES of a running process, read from /proc/<pid>/environ:
// the task record does not hold GPU indexes, the task's environment does.
std::vector<int> GpusOfProcess(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int> gpus;
  for (absl::string_view entry : absl::StrSplit(text.str(), '\0')) {
    if (!absl::StartsWith(entry, "CUDA_VISIBLE_DEVICES=")) continue;
    entry.remove_prefix(absl::string_view("CUDA_VISIBLE_DEVICES=").size());
    for (absl::string_view g : absl::StrSplit(entry, ',', absl::SkipEmpty())) {
      int index;
      if (absl::SimpleAtoi(g, &index)) gpus.push_back(index);
    }
  }
  return gpus;
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

// Kills what is left of a recorded task's process group once its leader
// (the shim) is gone: processes the task started would otherwise keep its
// GPUs after the master gives them to another job. Only while no other
// process holds the leader's pid, so the group cannot be someone else's.
void SweepDeadTaskGroup(const TaskHandle& h) {
  absl::StatusOr<std::optional<ProcStat>> leader =
      RealProcessTable()->Stat(h.pgid);
  if (!leader.ok()) return;
  const bool ours = !leader->has_value() ||
                    ((*leader)->exited() &&
                     (*leader)->start_ticks == h.proc_start_ticks);
  if (ours) killpg(h.pgid, SIGKILL);
}

std::string TaskName(int64_t job, int attempt, int rank) {
  return absl::StrCat("job ", job, " attempt ", attempt, " rank ", rank);
}

// The launcher's stop for a protocol stop reason: cancel for what will not
// resume here, preempt for what checkpoints and resumes.
StopReason LauncherReason(int reason) {
  return reason == v1::STOP_REASON_CANCEL || reason == v1::STOP_REASON_ORPHAN
             ? StopReason::kCancel
             : StopReason::kPreempt;
}

std::string ReasonName(int reason) {
  std::string name = v1::StopReason_Name(static_cast<v1::StopReason>(reason));
  if (name.starts_with("STOP_REASON_")) name.erase(0, 12);
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

}  // namespace

AgentDaemon::AgentDaemon(AgentOptions options) : options_(std::move(options)) {
  if (options_.node_name.empty()) options_.node_name = Hostname();
}

AgentDaemon::~AgentDaemon() { Stop(); }

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
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(options_.state_dir) / "logs", ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", options_.state_dir, ": cannot create: ", ec.message()));
  }
  if (absl::Status s = LockStateDir(); !s.ok()) return s;
  PosixLauncherOptions launcher_options;
  launcher_options.run_as.allow_root_tasks = options_.allow_root_tasks;
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
          RealFileStore()->Read("/proc/sys/kernel/random/boot_id");
      boot.ok() && boot->has_value()) {
    boot_id_ = std::string(absl::StripAsciiWhitespace(**boot));
  }
  DiscoveryOptions discovery;
  discovery.emulate = options_.emulate_gpus;
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(discovery);
  if (!gpus.ok()) return gpus.status();
  gpus_ = *std::move(gpus);
  absl::StatusOr<TaskRecord> record =
      TaskRecord::Open(options_.state_dir + "/tasks.json");
  if (!record.ok()) return record.status();
  record_.emplace(*std::move(record));
  const std::string host = AddressHost(options_.advertised_address);
  absl::StatusOr<std::unique_ptr<AgentLogServer>> logs = AgentLogServer::Start(
      options_.log_listen.empty() ? absl::StrCat(host, ":0")
                                  : options_.log_listen,
      options_.state_dir + "/logs", options_.tls);
  if (!logs.ok()) return logs.status();
  log_server_ = *std::move(logs);
  log_address_ = absl::StrCat(host, ":", log_server_->port());
  Log(DescribeRunAs(launcher_options.run_as));
  launcher_ = std::make_unique<PosixLauncher>(std::move(launcher_options));
  stub_ = std::make_unique<AgentStub>(options_.master_address, options_.tls);
  Log(absl::StrCat("node ", options_.node_name, ": ", gpus_.size(),
                   " GPU(s), master ", options_.master_address));
  AdoptRecorded();
  RemoveStaleFiles();
  LoadSession();
  thread_ = std::thread([this] { Loop(); });
  watch_thread_ = std::thread([this] { WatchLoop(); });
  return absl::OkStatus();
}

void AgentDaemon::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  log_server_.reset();
  if (lock_fd_ >= 0) {  // the next agent on this state dir may start
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

void AgentDaemon::BeginDrain() {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return;
  draining_ = true;
  Log("shutting down: handing this node's jobs back to the master");
  // The master hears first (the next heartbeat says `leaving`): it
  // preempts the node's launches, all their ranks on every node at once,
  // and the answer tells this agent to stop its tasks. Stopping them here
  // first would let a rank on another node fail on its lost peer before
  // the master knew why. If the master cannot be reached, the loop stops
  // them itself (StopAllForShutdown).
  cv_.notify_all();
}

void AgentDaemon::StopAllForShutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, task] : tasks_) {
    if (!task.ended && !task.stop_reason) {
      RequestStop(key, task, v1::STOP_REASON_SHUTDOWN);
    }
  }
}

absl::Status AgentDaemon::WaitDrained(std::chrono::milliseconds timeout) {
  bool done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done = cv_.wait_for(lock, timeout, [this] { return drained_; });
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
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(tasks_.size());
}

bool AgentDaemon::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_ || poked_; });
  return !stopping_;
}

absl::Status AgentDaemon::LockStateDir() {
  const std::string path = options_.state_dir + "/lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", options_.state_dir, " is in use by another agent",
        n > 0 ? absl::StrCat(" (pid ", absl::StripAsciiWhitespace(pid), ")")
              : std::string(),
        ": two agents on one state dir would adopt and stop each other's "
        "tasks; give this one its own --state-dir"));
  }
  const std::string text = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, text.data(), text.size(), 0) !=
          static_cast<ssize_t>(text.size())) {
    Log(absl::StrCat(path, ": cannot record this agent's pid"));
  }
  lock_fd_ = fd;  // held (and the lock with it) until the agent is gone
  return absl::OkStatus();
}

absl::Status AgentDaemon::LoadOrCreateToken() {
  const std::string path = options_.state_dir + "/agent-token";
  absl::StatusOr<std::optional<std::string>> text =
      RealFileStore()->Read(path);
  if (!text.ok()) return text.status();
  if (text->has_value()) {
    token_ = std::string(absl::StripAsciiWhitespace(**text));
    if (token_.size() >= 32) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(
        path, ": expected this agent's token (32 or more hex digits); "
              "remove the file to make a new identity"));
  }
  std::random_device random;
  std::string bytes(16, '\0');
  for (char& b : bytes) b = static_cast<char>(random() & 0xff);
  token_ = absl::BytesToHexString(bytes);
  // Written with mode 0600 before anything else can read it.
  const mode_t old_mask = umask(077);
  absl::Status written =
      RealFileStore()->WriteAtomically(path, token_ + "\n");
  umask(old_mask);
  return written;
}

uint64_t AgentDaemon::NextReportSeq() {
  // Boot time orders the reports of every agent process of this boot (a
  // restarted agent's come after its predecessor's); +1 keeps two reports
  // built in the same nanosecond apart.
  last_report_seq_ = std::max<uint64_t>(last_report_seq_ + 1, BootTimeNs());
  return last_report_seq_;
}

std::string AgentDaemon::LeasePath(const TaskKey& key) const {
  return absl::StrCat(options_.state_dir, "/leases/job-", std::get<0>(key),
                      "-attempt-", std::get<1>(key), "-rank-",
                      std::get<2>(key));
}

std::string AgentDaemon::ProfilePath(const TaskKey& key) const {
  return absl::StrCat(options_.state_dir, "/profiles/job-", std::get<0>(key),
                      "-attempt-", std::get<1>(key), "-rank-",
                      std::get<2>(key), ".prof");
}

bool AgentDaemon::AddProfiler(const TaskKey& key, TaskSpec& spec) {
  const std::string name =
      TaskName(std::get<0>(key), std::get<1>(key), std::get<2>(key));
  absl::StatusOr<std::string> library = profiler::FindProfilerLibrary();
  if (!library.ok()) {
    Log(absl::StrCat(name, ": not profiled: ", library.status().message()));
    return false;
  }
  const std::string path = ProfilePath(key);
  std::error_code ignored;
  std::filesystem::create_directories(options_.state_dir + "/profiles",
                                      ignored);
  std::filesystem::remove(path, ignored);  // a previous agent's, half written
  // A task that runs as its owner's account cannot create a file in the
  // agent's folder: its file is made here, empty, and handed to that
  // account (the folder only traversable by others, never listable).
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount(spec.owner, run_as_);
  if (!account.ok()) return false;  // the launcher refuses the task
  if (account->has_value()) {
    std::filesystem::permissions(
        options_.state_dir + "/profiles",
        std::filesystem::perms::owner_all |
            std::filesystem::perms::group_exec |
            std::filesystem::perms::others_exec,
        ignored);
    const int fd =
        open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
             0600);
    const bool handed =
        fd >= 0 && fchown(fd, (*account)->ids.uid, (*account)->ids.gid) == 0;
    const int err = errno;
    if (fd >= 0) close(fd);
    if (!handed) {
      std::filesystem::remove(path, ignored);
      Log(absl::StrCat(name, ": not profiled: ", path, ": ",
                       std::strerror(err)));
      return false;
    }
  }
  auto user_preload = spec.env.find("LD_PRELOAD");
  const std::string existing = user_preload != spec.env.end()
                                   ? user_preload->second
                                   : std::string(getenv("LD_PRELOAD") != nullptr
                                                     ? getenv("LD_PRELOAD")
                                                     : "");
  for (auto& [k, v] : profiler::ProfilerEnvironment(
           *library, path, profiler::RecordingLimits{},
           existing.empty() ? nullptr : existing.c_str())) {
    spec.env[k] = v;
  }
  return true;
}

namespace {

// The profile in `path` for the master; nullopt if there is none or it
// cannot be read (only the profile is lost).
std::optional<v1::TrafficProfile> ReadTaskProfile(const std::string& path) {
  absl::StatusOr<profiler::Profile> p = profiler::ProfileFromFile(path);
  if (!p.ok()) return std::nullopt;
  v1::TrafficProfile out;
  out.set_periodic(p->periodic);
  if (p->periodic) {
    if (p->tensor_skew) out.set_tensor_skew(*p->tensor_skew);
    if (p->iteration_s) out.set_iteration_s(*p->iteration_s);
    if (p->bytes_per_iteration) {
      out.set_bytes_per_iteration(*p->bytes_per_iteration);
    }
    if (p->messages_per_iteration) {
      out.set_messages_per_iteration(*p->messages_per_iteration);
    }
  }
  return out;
}

}  // namespace

void AgentDaemon::AdoptRecorded() {
  std::vector<RecoveredTask> found =
      CheckRecordedTasks(record_->entries(), *RealProcessTable(),
                         std::chrono::system_clock::now());
  std::lock_guard<std::mutex> lock(mu_);
  for (const RecoveredTask& r : found) {
    const TaskHandle& h = r.entry.handle;
    const TaskKey key{h.job_id, h.attempt, h.rank};
    Task task;
    task.handle = h;
    task.start_time = UnixSeconds(h.start_time);
    if (r.entry.stop_requested) {
      task.stop_reason = *r.entry.stop_requested == StopReason::kCancel
                             ? v1::STOP_REASON_CANCEL
                             : v1::STOP_REASON_PREEMPT;
    }
    const std::string name = TaskName(h.job_id, h.attempt, h.rank);
    if (r.alive()) {
      // Records older than the task shim lack the GPUs; the task's own
      // environment says (the shim's is the agent's).
      task.gpus = h.gpus.empty() ? GpusOfProcess(h.pid) : h.gpus;
      absl::Status s = launcher_->Adopt(h, r.entry.stop_requested,
                                        options_.grace);
      if (!s.ok()) {
        Log(absl::StrCat(name, ": cannot adopt pid ", h.pid, ": ",
                         s.ToString()));
        continue;  // stays in the record; retried by the next agent
      }
      // Renewed with the others from the next heartbeat that succeeds.
      absl::StatusOr<std::unique_ptr<LeaseFile>> lease =
          LeaseFile::Open(LeasePath(key));
      if (lease.ok()) task.lease = *std::move(lease);
      Log(absl::StrCat(name, ": adopted running pid ", h.pid));
    } else {
      SweepDeadTaskGroup(h);
      task.ended = true;
      task.gpus = h.gpus;
      if (r.exit->fenced && !task.stop_reason) {
        task.stop_reason = v1::STOP_REASON_FENCED;
      }
      if (r.exit->outcome == TaskOutcome::kUnknown && !task.stop_reason) {
        task.stop_reason = v1::STOP_REASON_LOST;  // see PollExits
      }
      if (r.exit->signal) {
        task.exit_code = 128 + *r.exit->signal;
      } else {
        task.exit_code = r.exit->exit_code;
      }
      task.end_time = UnixSeconds(r.exit->end_time);
      Log(absl::StrCat(name, ": exited while no agent ran (",
                       r.exit->Describe(), ")"));
    }
    tasks_[key] = std::move(task);
  }
}

// An exit or lease file no recorded task names was left by a crash between
// forgetting its task and removing it. A lease that has not lapsed yet is
// kept: it may belong to a task started just before a crash and never
// recorded (StartTask waits for it to lapse before starting that task).
void AgentDaemon::RemoveStaleFiles() {
  std::set<std::string> recorded;
  for (const TaskRecordEntry& e : record_->entries()) {
    if (!e.handle.exit_path.empty()) recorded.insert(e.handle.exit_path);
    recorded.insert(LeasePath({e.handle.job_id, e.handle.attempt,
                               e.handle.rank}));
  }
  std::error_code ec;
  const std::filesystem::path base(options_.state_dir);
  for (const auto& entry :
       std::filesystem::directory_iterator(base / "exits", ec)) {
    std::string path = entry.path().string();
    if (path.ends_with(".tmp")) path.resize(path.size() - 4);  // being written
    if (entry.is_regular_file(ec) && !recorded.contains(path)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  const int64_t now = BootTimeNs();
  for (const auto& entry :
       std::filesystem::directory_iterator(base / "leases", ec)) {
    const std::string path = entry.path().string();
    if (recorded.contains(path)) continue;
    absl::StatusOr<std::unique_ptr<LeaseFile>> lease = LeaseFile::Open(path);
    int64_t job = 0;
    int attempt = 0, rank = 0;
    const bool named =
        std::sscanf(entry.path().filename().c_str(), "job-%ld-attempt-%d-rank-%d",
                    &job, &attempt, &rank) == 3;
    if (!lease.ok() || !named || (*lease)->deadline_ns() == kNoLease ||
        now > FencedBy((*lease)->deadline_ns())) {
      std::filesystem::remove(entry.path(), ec);
      continue;
    }
    // A copy of a task a crashed agent started but never recorded may run
    // until its shim fences it: reported as a live task (holding its
    // GPUs, so nothing else is started there and its job's next attempt
    // waits) until then, then as fenced.
    Task ghost;
    ghost.gpus = (*lease)->gpus();
    ghost.stop_reason = v1::STOP_REASON_FENCED;
    ghost.lease = *std::move(lease);
    Log(absl::StrCat(TaskName(job, attempt, rank),
                     ": an unrecorded copy may run until its lease lapses"));
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.emplace(TaskKey{job, attempt, rank}, std::move(ghost));
  }
}

int64_t AgentDaemon::FencedBy(int64_t deadline_ns) const {
  // The shim sees the lapse within a tick, SIGKILLs after the grace.
  return deadline_ns + std::chrono::nanoseconds(options_.grace).count() +
         1'000'000'000;
}

// session.json: {"node_id": N, "session": S, "heartbeat_interval_ms": H,
// "lease_ms": L, "grace_ms": G}.
void AgentDaemon::LoadSession() {
  absl::StatusOr<std::optional<std::string>> text =
      RealFileStore()->Read(options_.state_dir + "/session.json");
  if (!text.ok() || !text->has_value()) return;
  nlohmann::json json = nlohmann::json::parse(**text, nullptr, false);
  if (!json.is_object()) return;  // an older format: register again
  const int64_t id = json.value("node_id", int64_t{0});
  const uint64_t session = json.value("session", uint64_t{0});
  const int64_t interval_ms = json.value("heartbeat_interval_ms", int64_t{0});
  const int64_t lease_ms = json.value("lease_ms", int64_t{0});
  // A lease is granted for a grace: with another --grace, lease + grace
  // might pass the node timeout, so register again for a new lease.
  const int64_t grace_ms = json.value("grace_ms", int64_t{-1});
  if (grace_ms != options_.grace.count()) return;
  if (id > 0 && session > 0 && interval_ms > 0 && lease_ms > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    node_id_ = id;
    session_ = session;
    heartbeat_interval_ = std::chrono::milliseconds(interval_ms);
    lease_ns_ = lease_ms * 1'000'000;
  }
}

void AgentDaemon::SaveSession() {
  nlohmann::json json;
  {
    std::lock_guard<std::mutex> lock(mu_);
    json["node_id"] = node_id_.load();
    json["session"] = session_;
    json["heartbeat_interval_ms"] = heartbeat_interval_.count();
    json["lease_ms"] = lease_ns_ / 1'000'000;
    json["grace_ms"] = options_.grace.count();
  }
  absl::Status s = RealFileStore()->WriteAtomically(
      options_.state_dir + "/session.json", json.dump() + "\n");
  if (!s.ok()) Log(absl::StrCat("cannot save the session: ", s.ToString()));
}

std::vector<v1::TaskStatus> AgentDaemon::Statuses() const {
  std::vector<v1::TaskStatus> out;
  for (const auto& [key, task] : tasks_) {
    v1::TaskStatus s;
    s.mutable_task()->set_job_id(std::get<0>(key));
    s.mutable_task()->set_attempt(std::get<1>(key));
    s.mutable_task()->set_rank(std::get<2>(key));
    if (!task.ended) {
      s.set_state(task.stop_reason ? v1::TASK_STATE_EXITING
                                   : v1::TASK_STATE_RUNNING);
    } else {
      s.set_state(task.stop_reason ? v1::TASK_STATE_PREEMPTED
                                   : v1::TASK_STATE_EXITED);
    }
    if (task.stop_reason) {
      s.set_stop_reason(static_cast<v1::StopReason>(*task.stop_reason));
    }
    for (int g : task.gpus) s.add_gpu_indexes(g);
    if (task.exit_code) s.set_exit_code(*task.exit_code);
    if (task.start_time) s.set_start_time(*task.start_time);
    if (task.profile) *s.mutable_profile() = *task.profile;
    if (task.end_time) {
      // The start is read after exec returns, the end by the shim: a task
      // that ends at once can end "before" it started by microseconds.
      // The master refuses an end before the start.
      s.set_end_time(task.start_time ? std::max(*task.end_time, *task.start_time)
                                     : *task.end_time);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void AgentDaemon::RenewLeases(int64_t sent_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lease_ns_ <= 0) return;
  lease_deadline_ns_ = sent_ns + lease_ns_;
  for (auto& [key, task] : tasks_) {
    if (!task.ended && task.lease) task.lease->Renew(lease_deadline_ns_);
  }
}

void AgentDaemon::Acknowledge(const TaskKey& key) {
  auto it = tasks_.find(key);
  if (it == tasks_.end() || !it->second.ended) return;
  Task& task = it->second;
  if (task.handle) {
    absl::Status removed = record_->Remove(*task.handle);
    if (!removed.ok()) {
      Log(absl::StrCat("task record: ", removed.ToString()));
      return;  // reported again; removal retried on the next ack
    }
    if (!task.handle->exit_path.empty()) {
      std::error_code ignored;
      std::filesystem::remove(task.handle->exit_path, ignored);
    }
  }
  {
    // Also a record the agent could not read, or one whose task ended
    // while no agent ran (its profile is lost).
    std::error_code ignored;
    std::filesystem::remove(ProfilePath(key), ignored);
  }
  if (task.lease) task.lease->Remove();
  tasks_.erase(it);
  if (ended_keys_.insert(key).second) {
    ended_order_.push_back(key);
    if (ended_order_.size() > kMaxRememberedEnds) {
      ended_keys_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
}

bool AgentDaemon::Register(std::chrono::milliseconds retry_in) {
  v1::RegisterRequest req;
  req.set_name(options_.node_name);
  req.set_address(options_.advertised_address);
  req.set_log_address(log_address_);
  req.set_gpus(static_cast<int>(gpus_.size()));
  req.set_agent_token(token_);
  req.set_grace_seconds(
      std::chrono::duration<double>(options_.grace).count());
  req.set_boot_id(boot_id_);
  req.set_report_seq(NextReportSeq());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::RegisterResponse resp;
  const int64_t sent_ns = BootTimeNs();
  grpc::Status s = stub_->get().Register(&ctx, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      // This agent, as configured, can never register with this master:
      // say so and stop, rather than retry forever.
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = absl::FailedPreconditionError(
          absl::StrCat("the master at ", options_.master_address,
                       " refuses this agent: ", s.error_message()));
      stopping_ = true;
      cv_.notify_all();
      return false;
    }
    Log(absl::StrCat("register with ", options_.master_address,
                     " failed (retry in ", retry_in.count(),
                     " ms): ", FromGrpc(s).ToString()));
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    node_id_ = resp.node_id();
    session_ = resp.session();
    session_confirmed_ = true;
    applied_version_ = 0;
    poked_ = false;
    if (resp.heartbeat_interval_seconds() > 0) {
      heartbeat_interval_ = std::chrono::milliseconds(static_cast<int64_t>(
          resp.heartbeat_interval_seconds() * 1000));
    }
    lease_ns_ = static_cast<int64_t>(resp.lease_seconds() * 1e9);
    // The stream reopens for the new session.
    if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
    for (const v1::TaskRef& ref : resp.acknowledged()) {
      Acknowledge({ref.job_id(), ref.attempt(), ref.rank()});
    }
  }
  cv_.notify_all();
  SaveSession();
  RenewLeases(sent_ns);
  for (const v1::TaskReportError& e : resp.rejected()) {
    Log(absl::StrCat("the master refused a report: ", e.message()));
  }
  Log(absl::StrCat("registered as node ", resp.node_id(), " with ",
                   req.tasks_size(), " task(s); heartbeat every ",
                   heartbeat_interval_.count(), " ms, lease ",
                   resp.lease_seconds(), " s"));
  if (ApplyDesired(resp.desired(), sent_ns)) {
    std::lock_guard<std::mutex> lock(mu_);
    poked_ = true;  // report what it started at once
  }
  return true;
}

absl::StatusOr<bool> AgentDaemon::Heartbeat() {
  v1::HeartbeatRequest req;
  req.set_node_id(node_id_.load());
  req.set_log_address(log_address_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    req.set_session(session_);
    req.set_leaving(draining_);
    req.set_boot_id(boot_id_);
    req.set_report_seq(NextReportSeq());
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::HeartbeatResponse resp;
  const int64_t sent_ns = BootTimeNs();
  grpc::Status s = stub_->get().Heartbeat(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s);
  RenewLeases(sent_ns);
  bool again = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    session_confirmed_ = true;
    for (const v1::TaskRef& ref : resp.acknowledged()) {
      Acknowledge({ref.job_id(), ref.attempt(), ref.rank()});
    }
    leaving_told_ = leaving_told_ || req.leaving();
    if (req.leaving() && req.tasks_size() == 0 && tasks_.empty()) {
      // Leaving, and the master heard that nothing runs here any more: it
      // has taken the node out.
      drained_ = true;
    } else if (draining_ && tasks_.empty()) {
      again = true;  // tell it so at once
    }
  }
  cv_.notify_all();
  for (const v1::TaskReportError& e : resp.rejected()) {
    Log(absl::StrCat("the master refused a report: ", e.message()));
  }
  return ApplyDesired(resp.desired(), sent_ns) || again;
}

bool AgentDaemon::ApplyDesired(const v1::DesiredState& desired,
                               int64_t sent_ns) {
  std::set<TaskKey> wanted;
  std::map<std::pair<int64_t, int>, int> stopping;
  std::vector<const v1::StartTask*> to_start;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (desired.session() != session_ || desired.version() < applied_version_) {
      return false;  // of another session, or older than what we applied
    }
    applied_version_ = desired.version();
    for (const v1::StopTask& stop : desired.stop()) {
      stopping[{stop.job_id(), stop.attempt()}] = stop.reason();
    }
    for (const v1::StartTask& run : desired.run()) {
      const TaskKey key{run.task().job_id(), run.task().attempt(),
                        run.task().rank()};
      wanted.insert(key);
      // Never twice: not while it runs here, nor once it has ended.
      if (!draining_ && !tasks_.contains(key) && !ended_keys_.contains(key)) {
        to_start.push_back(&run);
      }
    }
  }
  bool changed = false;
  for (const v1::StartTask* run : to_start) {
    // Only while the answer is fresh: an agent stopped (SIGSTOP) or slowed
    // down after sending its report must not start what the master may
    // have cancelled since. A stale answer asks for another report.
    if (BootTimeNs() - sent_ns >
        std::chrono::nanoseconds(options_.max_answer_age).count()) {
      Log(absl::StrCat("the master's answer is ",
                       (BootTimeNs() - sent_ns) / 1'000'000,
                       " ms old: reporting again before starting anything"));
      changed = true;
      break;
    }
    changed |= StartTask(*run);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, task] : tasks_) {
    if (task.ended || task.stop_reason) continue;
    auto stop = stopping.find({std::get<0>(key), std::get<1>(key)});
    if (stop != stopping.end()) {
      RequestStop(key, task, stop->second);
      changed = true;
    } else if (!wanted.contains(key)) {
      RequestStop(key, task, v1::STOP_REASON_ORPHAN);
      changed = true;
    }
  }
  return changed;
}

bool AgentDaemon::StartTask(const v1::StartTask& st) {
  const TaskKey key{st.task().job_id(), st.task().attempt(), st.task().rank()};
  const std::string name =
      TaskName(st.task().job_id(), st.task().attempt(), st.task().rank());
  // A lease file that has not lapsed belongs to a copy of this task that a
  // previous agent started and crashed before recording: it may still run,
  // until its shim fences it. Start it only after that.
  const std::string lease_path = LeasePath(key);
  if (absl::StatusOr<std::unique_ptr<LeaseFile>> old =
          LeaseFile::Open(lease_path);
      old.ok()) {
    const int64_t lapsed = (*old)->deadline_ns() == kNoLease
                               ? kNoLease
                               : (*old)->deadline_ns() +
                                     std::chrono::nanoseconds(options_.grace)
                                         .count() +
                                     1'000'000'000;
    if (BootTimeNs() < lapsed && (*old)->deadline_ns() != kNoLease) {
      Log(absl::StrCat(name, ": an unrecorded copy may still run; starting "
                             "it once that copy's lease has lapsed"));
      return false;
    }
    (*old)->Remove();
  }
  TaskSpec spec;
  spec.job_id = st.task().job_id();
  spec.attempt = st.task().attempt();
  spec.rank = st.task().rank();
  spec.world_size = st.world_size();
  spec.local_rank = st.local_rank();
  spec.gpus.assign(st.gpu_indexes().begin(), st.gpu_indexes().end());
  spec.argv.assign(st.command().begin(), st.command().end());
  spec.env.insert(st.env().begin(), st.env().end());
  spec.checkpoint_dir = st.checkpoint_dir();
  spec.restart_count = st.restart_count();
  spec.owner = st.owner();
  spec.master_addr = st.master_addr();
  spec.master_port = st.master_port();
  spec.worker_addrs.assign(st.worker_addresses().begin(),
                           st.worker_addresses().end());
  spec.node_name = options_.node_name;
  spec.working_dir = st.workdir();
  spec.output_path = st.output();
  spec.error_path = st.error();
  spec.log_path = TaskLogPath(options_.state_dir + "/logs", spec.job_id,
                              spec.attempt, spec.rank);
  spec.exit_path =
      absl::StrCat(options_.state_dir, "/exits/job-", spec.job_id,
                   "-attempt-", spec.attempt, "-rank-", spec.rank, ".exit");
  spec.fence_grace = options_.grace;
  Task task;
  task.gpus = spec.gpus;
  if (st.profile()) task.profiled = AddProfiler(key, spec);
  int64_t deadline;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deadline = lease_deadline_ns_;
  }
  if (deadline != kNoLease && BootTimeNs() >= deadline) {
    // Not heard from the master for a whole lease: the node may be
    // declared lost already. Started once a heartbeat renews the lease.
    Log(absl::StrCat(name, ": not started: the lease has lapsed"));
    return false;
  }
  absl::StatusOr<std::unique_ptr<LeaseFile>> lease =
      LeaseFile::Create(lease_path, deadline, spec.gpus);
  absl::StatusOr<TaskHandle> handle = absl::UnknownError("not started");
  if (lease.ok()) {
    spec.lease = (*lease)->word();
    handle = launcher_->Start(spec);
  } else {
    handle = lease.status();
  }
  if (absl::IsAborted(handle.status())) {
    // The shim found the lease lapsed and did not start it (spawn.h):
    // not a failed start; it starts once the lease is renewed.
    (*lease)->Remove();
    Log(absl::StrCat(name, ": not started: ", handle.status().message()));
    return false;
  }
  if (handle.ok()) {
    task.handle = *handle;
    task.lease = *std::move(lease);
    task.start_time = UnixSeconds(handle->start_time);
    Log(absl::StrCat(name, ": started pid ", handle->pid,
                     handle->uid ? absl::StrCat(" as uid ", *handle->uid) : "",
                     " on GPUs ", absl::StrJoin(spec.gpus, ","), ", log ",
                     spec.log_path));
  } else {
    // Reported as a task that exited with a failure; the user finds why in
    // the job's log.
    if (lease.ok()) (*lease)->Remove();
    Log(absl::StrCat(name, ": cannot start: ", handle.status().ToString()));
    std::ofstream(spec.log_path, std::ios::app)
        << "tiresias agent: cannot start the task: "
        << handle.status().message() << "\n";
    const double now = UnixSeconds(std::chrono::system_clock::now());
    task.ended = true;
    task.exit_code = kStartFailedExitCode;
    task.start_time = now;
    task.end_time = now;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Task& stored = tasks_[key] = std::move(task);
  if (stored.handle) {
    // Recorded before it is reported running, so that a restarted agent
    // knows about every task the master may think runs here (a copy that
    // a crash left unrecorded is covered by its lease: RemoveStaleFiles).
    absl::Status put =
        record_->Put(TaskRecordEntry{*stored.handle, std::nullopt});
    if (!put.ok()) {
      // Unrecorded, it would be invisible to the next agent: not run.
      Log(absl::StrCat(name, ": task record: ", put.ToString(),
                       "; stopping it"));
      RequestStop(key, stored, v1::STOP_REASON_LOST);
    }
  }
  return true;
}

void AgentDaemon::RequestStop(const TaskKey& key, Task& task, int reason) {
  task.stop_reason = reason;
  if (!task.handle) return;
  const std::string name =
      TaskName(std::get<0>(key), std::get<1>(key), std::get<2>(key));
  const StopReason how = LauncherReason(reason);
  // Recorded before signalling (see task_record.h).
  absl::Status marked = record_->MarkStopRequested(*task.handle, how);
  if (!marked.ok()) {
    Log(absl::StrCat(name, ": task record: ", marked.ToString()));
  }
  absl::Status s = launcher_->RequestStop(*task.handle, how, options_.grace);
  Log(absl::StrCat(name, ": stopping (", ReasonName(reason),
                   s.ok() ? "" : absl::StrCat(": ", s.ToString()), ")"));
}

bool AgentDaemon::PollExits() {
  std::vector<TaskExit> exits = launcher_->PollAll();
  // Analysed outside the lock (up to 50,000 records per process). Only a
  // task this agent started under the profiler has a file there.
  std::map<TaskKey, v1::TrafficProfile> profiles;
  for (const TaskExit& e : exits) {
    const TaskKey key{e.handle.job_id, e.handle.attempt, e.handle.rank};
    std::error_code ignored;
    if (!std::filesystem::exists(ProfilePath(key), ignored)) continue;
    if (std::optional<v1::TrafficProfile> p =
            ReadTaskProfile(ProfilePath(key))) {
      profiles[key] = *std::move(p);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  bool ended_ghost = false;
  for (auto& [key, task] : tasks_) {
    if (!task.handle && !task.ended && task.lease &&
        BootTimeNs() > FencedBy(task.lease->deadline_ns())) {
      task.ended = true;  // fenced by now (see RemoveStaleFiles)
      task.end_time = UnixSeconds(std::chrono::system_clock::now());
      ended_ghost = true;
    }
  }
  for (const TaskExit& e : exits) {
    auto it = tasks_.find({e.handle.job_id, e.handle.attempt, e.handle.rank});
    if (it == tasks_.end()) continue;
    Task& task = it->second;
    task.ended = true;
    const bool stopped = e.outcome == TaskOutcome::kPreempted ||
                         e.outcome == TaskOutcome::kCancelled;
    if (e.outcome == TaskOutcome::kUnknown) {
      // Its status is lost (its shim was killed): a system stop, never the
      // job's failure.
      task.stop_reason = v1::STOP_REASON_LOST;
    } else if (!stopped) {
      task.stop_reason.reset();  // it ended on its own first
    } else if (!task.stop_reason) {
      task.stop_reason = e.fenced ? v1::STOP_REASON_FENCED
                         : e.outcome == TaskOutcome::kCancelled
                             ? v1::STOP_REASON_CANCEL
                             : v1::STOP_REASON_PREEMPT;
    }
    if (e.signal) {
      task.exit_code = 128 + *e.signal;
    } else if (e.exit_code) {
      task.exit_code = *e.exit_code;
    }
    task.end_time = UnixSeconds(e.end_time);
    Log(absl::StrCat(
        TaskName(e.handle.job_id, e.handle.attempt, e.handle.rank), ": ",
        e.Describe(), e.fenced ? " (fenced: the agent's lease lapsed)" : ""));
    if (auto p = profiles.find(it->first); p != profiles.end()) {
      task.profiled = true;  // the end's reading replaces a running one
      task.profile =
          std::make_shared<const v1::TrafficProfile>(std::move(p->second));
      Log(absl::StrCat(
          TaskName(e.handle.job_id, e.handle.attempt, e.handle.rank),
          ": profile: ",
          task.profile->periodic()
              ? absl::StrCat("tensor skew ", task.profile->tensor_skew(),
                             ", iteration ", task.profile->iteration_s(), " s")
              : "not periodic"));
    }
  }
  return !exits.empty() || ended_ghost;
}

bool AgentDaemon::ReadRunningProfiles() {
  // The preloaded library has stopped recording by then; a process that
  // started later records on, but its iteration is the same.
  const double read_after_s =
      std::chrono::duration<double>(options_.profile_read_after).count();
  const double now = UnixSeconds(std::chrono::system_clock::now());
  std::vector<TaskKey> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, task] : tasks_) {
      if (task.profiled && !task.ended && !task.profile_read &&
          task.start_time && now - *task.start_time >= read_after_s) {
        task.profile_read = true;
        due.push_back(key);
      }
    }
  }
  bool read = false;
  for (const TaskKey& key : due) {
    std::optional<v1::TrafficProfile> p = ReadTaskProfile(ProfilePath(key));
    if (!p) continue;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(key);
    if (it == tasks_.end() || it->second.profile) continue;
    it->second.profile = std::make_shared<const v1::TrafficProfile>(*p);
    Log(absl::StrCat(TaskName(std::get<0>(key), std::get<1>(key),
                              std::get<2>(key)),
                     ": profile while running: ",
                     p->periodic() ? absl::StrCat("tensor skew ",
                                                  p->tensor_skew())
                                   : "not periodic"));
    read = true;
  }
  return read;
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
    std::lock_guard<std::mutex> lock(mu_);
    registered = session_ != 0;
  }
  auto last_beat = std::chrono::steady_clock::time_point{};
  bool changed = true;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    if (!registered) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (draining_ && tasks_.empty()) {  // nothing to hand back
          drained_ = true;
          cv_.notify_all();
          return;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
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
        if (!Sleep(backoff)) return;
        next_backoff();
        continue;
      }
    }
    if (PollExits()) changed = true;
    if (ReadRunningProfiles()) changed = true;
    bool leaving_untold;
    {
      std::lock_guard<std::mutex> lock(mu_);
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
        std::lock_guard<std::mutex> lock(mu_);
        if (drained_) return;
      } else if (absl::IsNotFound(s.status())) {
        Log(absl::StrCat("master does not know node ", node_id_.load(),
                         " (this session): registering again"));
        registered = false;
        continue;
      } else {
        bool draining;
        {
          std::lock_guard<std::mutex> lock(mu_);
          draining = draining_;
        }
        // Shutting down and the master cannot be told: stop the tasks here
        // (they checkpoint); their ends are reported when it can be.
        if (draining) StopAllForShutdown();
        Log(absl::StrCat("heartbeat to ", options_.master_address,
                         " failed (tasks keep running until the lease "
                         "lapses; retry in ",
                         backoff.count(), " ms): ", s.status().ToString()));
        if (!Sleep(backoff)) return;
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
      std::unique_lock<std::mutex> lock(mu_);
      // Only once the master has confirmed the session: a task started
      // from a push before that would have no lease renewed yet.
      cv_.wait(lock, [this] { return stopping_ || session_confirmed_; });
      if (stopping_) return;
      req.set_node_id(node_id_.load());
      req.set_session(session_);
      req.set_after_version(applied_version_);
    }
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      watch_ctx_ = &ctx;
    }
    std::unique_ptr<grpc::ClientReader<v1::DesiredState>> reader =
        stub_->get().WatchDesiredState(&ctx, req);
    v1::DesiredState message;
    while (reader->Read(&message)) {
      backoff = options_.min_backoff;
      std::lock_guard<std::mutex> lock(mu_);
      if (message.session() != session_ ||
          message.version() <= applied_version_) {
        continue;  // nothing new
      }
      poked_ = true;
      cv_.notify_all();
    }
    // Why it ended does not matter: cancelled for a new session, the master
    // away, or the session over (the loop registers again).
    reader->Finish();
    std::unique_lock<std::mutex> lock(mu_);
    watch_ctx_ = nullptr;
    if (stopping_) return;
    if (req.session() != session_) continue;  // registered again: reopen now
    cv_.wait_for(lock, backoff, [&] {
      return stopping_ || req.session() != session_;
    });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace tiresias
