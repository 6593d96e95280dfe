// AgentDaemon's state directory: its lock, token, session, leases and
// profiles, and what a restarted agent adopts or sweeps from it.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent_daemon.h"
#include "agent/agent_daemon_internal.h"
#include "agent/agent_dependencies.h"
#include "agent/cgroups.h"
#include "agent/container.h"
#include "agent/file_store.h"
#include "agent/log_service.h"
#include "agent/proc_table.h"
#include "agent/run_as.h"
#include "agent/task_file.h"
#include "nlohmann/json.hpp"
#include "profiler/profiler.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

using agent_internal::ReadTaskProfile;
using agent_internal::TaskName;
using agent_internal::UnixSeconds;

namespace {

// Most bytes of a process's environment: exec takes at most 6 MiB of
// arguments and environment together.
constexpr size_t kMaxEnvironBytes = 8 << 20;

// CUDA_VISIBLE_DEVICES of a running process, read from /proc/<pid>/environ:
// the task record does not hold GPU indexes, the task's environment does
// (read with a bound: the process is the task's).
std::vector<int> GpusOfProcess(pid_t pid) {
  absl::StatusOr<std::optional<std::string>> text =
      ReadTaskFile(absl::StrCat("/proc/", pid, "/environ"), kMaxEnvironBytes);
  if (!text.ok() || !text->has_value()) return {};
  std::vector<int> gpus;
  for (absl::string_view entry : absl::StrSplit(**text, '\0')) {
    if (!absl::StartsWith(entry, "CUDA_VISIBLE_DEVICES=")) continue;
    entry.remove_prefix(absl::string_view("CUDA_VISIBLE_DEVICES=").size());
    for (absl::string_view g : absl::StrSplit(entry, ',', absl::SkipEmpty())) {
      int index;
      if (absl::SimpleAtoi(g, &index)) gpus.push_back(index);
    }
  }
  return gpus;
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

}  // namespace

namespace agent_internal {

absl::StatusOr<std::optional<v1::TrafficProfile>> ReadTaskProfile(
    const std::string& path) {
  absl::StatusOr<std::optional<std::string>> text = ReadTaskFile(
      path, profiler::MaxProfileFileBytes(profiler::RecordingLimits{}));
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::nullopt;
  const profiler::Profile p = profiler::ProfileFromText(**text);
  v1::TrafficProfile out;
  out.set_periodic(p.periodic);
  if (p.periodic) {
    if (p.tensor_skew) out.set_tensor_skew(*p.tensor_skew);
    if (p.iteration_s) out.set_iteration_s(*p.iteration_s);
    if (p.bytes_per_iteration) {
      out.set_bytes_per_iteration(*p.bytes_per_iteration);
    }
    if (p.messages_per_iteration) {
      out.set_messages_per_iteration(*p.messages_per_iteration);
    }
  }
  return out;
}

}  // namespace agent_internal

absl::Status AgentDaemon::LockStateDir() {
  const std::string path = options_.state_dir + "/lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
      deps_->files->Read(path);
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
      deps_->files->WriteAtomically(path, token_ + "\n");
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


void AgentDaemon::AdoptRecorded() {
  std::vector<RecoveredTask> found =
      CheckRecordedTasks(record_->entries(), *RealProcessTable(),
                         std::chrono::system_clock::now());
  MutexLock lock(&mu_);
  for (const RecoveredTask& r : found) {
    const TaskHandle& h = r.entry.handle;
    const TaskKey key{h.job_id, h.attempt, h.rank};
    Task task;
    task.handle = h;
    task.start_time = UnixSeconds(h.start_time);
    // A stop counts unless the task ended before it was recorded (then
    // its own exit wins: CheckRecordedTasks judged the outcome).
    const bool stopped =
        r.alive() || r.exit->outcome == TaskOutcome::kPreempted ||
        r.exit->outcome == TaskOutcome::kCancelled;
    if (r.entry.stop_requested && stopped) {
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
      // Its group outlived it (RemoveStaleCgroups comes next): what it
      // used, and whether the kernel killed it for memory, are still there.
      std::string oom;
      if (!cgroup_mounts_.empty()) {
        absl::StatusOr<std::unique_ptr<TaskCgroup>> group =
            TaskCgroup::Open(cgroup_mounts_, cgroup_parent_,
                             TaskCgroupName(h.job_id, h.attempt, h.rank));
        absl::StatusOr<CgroupUsage> usage =
            group.ok() ? (*group)->Usage() : group.status();
        if (usage.ok()) {
          task.usage = *usage;
          task.out_of_memory = usage->oom_kills > 0;
          if (task.out_of_memory) oom = ", out of memory";
        }
      }
      Log(absl::StrCat(name, ": exited while no agent ran (",
                       r.exit->Describe(), oom, ")"));
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
    MutexLock lock(&mu_);
    tasks_.emplace(TaskKey{job, attempt, rank}, std::move(ghost));
  }
  // Container bundles (container.h) of tasks no longer here: neither
  // recorded nor a copy whose lease may still run.
  std::set<std::string> live;
  {
    MutexLock lock(&mu_);
    for (const auto& [key, task] : tasks_) {
      live.insert(
          TaskCgroupName(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
    }
  }
  for (const auto& entry :
       std::filesystem::directory_iterator(base / "containers", ec)) {
    if (!live.contains(entry.path().filename().string())) {
      RemoveContainerBundles(entry.path().string());
    }
  }
}

int64_t AgentDaemon::FencedBy(int64_t deadline_ns) const {
  // The shim sees the lapse within a tick, SIGKILLs after the grace.
  return deadline_ns + std::chrono::nanoseconds(options_.grace).count() +
         1'000'000'000;
}

// session.json: {"node_id": N, "session": S, "heartbeat_interval_ms": H,
// "lease_ms": L, "grace_ms": G, "epoch": E}.
void AgentDaemon::LoadSession() {
  absl::StatusOr<std::optional<std::string>> text =
      deps_->files->Read(options_.state_dir + "/session.json");
  if (!text.ok() || !text->has_value()) return;
  nlohmann::json json = nlohmann::json::parse(**text, nullptr, false);
  if (!json.is_object()) return;  // an older format: register again
  {
    // Whatever else is kept: a deposed master stays refused.
    MutexLock lock(&mu_);
    epoch_ = json.value("epoch", uint64_t{0});
  }
  const int64_t id = json.value("node_id", int64_t{0});
  const uint64_t session = json.value("session", uint64_t{0});
  const int64_t interval_ms = json.value("heartbeat_interval_ms", int64_t{0});
  const int64_t lease_ms = json.value("lease_ms", int64_t{0});
  // A lease is granted for a grace: with another --grace, lease + grace
  // might pass the node timeout, so register again for a new lease.
  const int64_t grace_ms = json.value("grace_ms", int64_t{-1});
  if (grace_ms != options_.grace.count()) return;
  if (id > 0 && session > 0 && interval_ms > 0 && lease_ms > 0) {
    MutexLock lock(&mu_);
    node_id_ = id;
    session_ = session;
    heartbeat_interval_ = std::chrono::milliseconds(interval_ms);
    lease_ns_ = lease_ms * 1'000'000;
  }
}

absl::Status AgentDaemon::AcceptEpoch(uint64_t epoch) {
  bool higher = false;
  {
    MutexLock lock(&mu_);
    if (epoch != 0 && epoch < epoch_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the master at ", options_.master_address, " answered for leader ",
          "epoch ", epoch, ", older than epoch ", epoch_,
          " this agent has followed (it lost the lead): its answer is "
          "ignored"));
    }
    higher = epoch > epoch_;
    if (higher) epoch_ = epoch;
  }
  if (higher) SaveSession();
  return absl::OkStatus();
}

void AgentDaemon::SaveSession() {
  nlohmann::json json;
  {
    MutexLock lock(&mu_);
    json["node_id"] = node_id_.load();
    json["session"] = session_;
    json["heartbeat_interval_ms"] = heartbeat_interval_.count();
    json["lease_ms"] = lease_ns_ / 1'000'000;
    json["grace_ms"] = options_.grace.count();
    json["epoch"] = epoch_;
  }
  absl::Status s = deps_->files->WriteAtomically(
      options_.state_dir + "/session.json", json.dump() + "\n");
  if (!s.ok()) Log(absl::StrCat("cannot save the session: ", s.ToString()));
}


}  // namespace tiresias
