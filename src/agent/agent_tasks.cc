// AgentDaemon's tasks: starting one (under the profiler when asked),
// stopping one, reaping exits and reading running tasks' profiles.
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/agent_daemon.h"
#include "agent/agent_daemon_internal.h"
#include "agent/container.h"
#include "agent/file_store.h"
#include "agent/image_store.h"
#include "agent/log_service.h"
#include "agent/run_as.h"
#include "agent/task_io.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "profiler/profiler.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

using agent_internal::ReadTaskProfile;
using agent_internal::TaskName;
using agent_internal::UnixSeconds;

namespace {

// Exit code reported for a task whose command could not be started (as a
// shell reports "command not found").
constexpr int kStartFailedExitCode = 127;

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
  // The library goes before what the submitter preloads, if anything; the
  // agent's own LD_PRELOAD is its own business and reaches no task, as
  // none of its environment does (task_env.h).
  auto user_preload = spec.env.find("LD_PRELOAD");
  const std::string existing =
      user_preload != spec.env.end() ? user_preload->second : "";
  // In a container both are bound into its /dev (container.h), and named
  // there.
  const bool contained = !spec.image_rootfs.empty();
  for (auto& [k, v] : profiler::ProfilerEnvironment(
           contained ? kContainerProfilerLibrary : *library,
           contained ? kContainerProfileRecord : path,
           profiler::RecordingLimits{},
           existing.empty() ? nullptr : existing.c_str())) {
    spec.env[k] = v;
  }
  if (contained) {
    spec.container_files.push_back(
        {*library, kContainerProfilerLibrary, /*read_only=*/true});
    spec.container_files.push_back(
        {path, kContainerProfileRecord, /*read_only=*/false});
  }
  return true;
}

absl::StatusOr<std::shared_ptr<TaskIoSession>> AgentDaemon::MakeTaskIo(
    const v1::StartTask& st, const std::string& name) {
  if (st.io() == v1::IO_MODE_NONE) return nullptr;
  if (st.io() != v1::IO_MODE_PIPES && st.io() != v1::IO_MODE_PTY) {
    return absl::InvalidArgumentError(
        absl::StrCat("io: unknown mode ", static_cast<int>(st.io())));
  }
  // The account the task runs as (the launcher's own rule, run_as.h:
  // the user map included): the terminal is theirs, group tty 0620 as a
  // login gives it, or 0600 without a tty group. Refused as the start
  // would be.
  ASSIGN_OR_RETURN(std::optional<TaskAccount> account,
                   ResolveTaskAccount(st.owner(), run_as_));
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  if (account) {
    uid = account->ids.uid;
    struct group gr, *tty = nullptr;
    std::vector<char> buf(16384);
    if (getgrnam_r("tty", &gr, buf.data(), buf.size(), &tty) == 0 &&
        tty != nullptr) {
      gid = gr.gr_gid;
    }
  }
  const double grace =
      st.io_grace_seconds() > 0 ? std::min(st.io_grace_seconds(), 86400.0) : 60;
  return TaskIoSession::Create(
      st.io() == v1::IO_MODE_PTY, uid, gid,
      std::chrono::milliseconds(static_cast<int64_t>(grace * 1000)), name);
}

std::optional<pid_t> AgentDaemon::RunningPgid(const TaskKey& key) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(key);
  if (it == tasks_.end() || it->second.ended || !it->second.handle) {
    return std::nullopt;
  }
  return it->second.handle->pgid;
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
  if (st.processes() > 0) {
    spec.processes = st.processes();
    spec.first_process = st.first_process();
    spec.total_processes = st.total_processes();
  } else {  // a master before processes: one, ranked as its task
    spec.processes = 1;
    spec.first_process = spec.rank;
    spec.total_processes = spec.world_size;
  }
  spec.node_names.assign(st.node_names().begin(), st.node_names().end());
  if (st.warn_signal() != 0) {
    spec.warn_signal = st.warn_signal();
    spec.warn_after = std::chrono::milliseconds(static_cast<int64_t>(
        std::clamp(st.warn_after_seconds(), 0.0, 1e9) * 1000));
  }
  spec.cpus_per_gpu = std::max(0, st.cpus_per_gpu());
  spec.memory_per_gpu =
      // At most the master's job_limits::kMaxMemPerGpuMib (2^30 MiB): no
      // product with the GPU count can overflow.
      std::clamp<int64_t>(st.mem_per_gpu_mib(), 0, int64_t{1} << 30) << 20;
  spec.cpus = std::clamp(st.cpus(), 0, 1 << 16);
  spec.memory_bytes = std::clamp<int64_t>(st.mem_mib(), 0, int64_t{1} << 30)
                      << 20;
  spec.gpus.assign(st.gpu_indexes().begin(), st.gpu_indexes().end());
  spec.argv.assign(st.command().begin(), st.command().end());
  spec.env.insert(st.env().begin(), st.env().end());
  spec.checkpoint_dir = st.checkpoint_dir();
  spec.checkpoint_base = st.checkpoint_base();
  spec.restart_count = st.restart_count();
  spec.owner = st.owner();
  spec.master_addr = st.master_addr();
  spec.master_port = st.master_port();
  spec.worker_addrs.assign(st.worker_addresses().begin(),
                           st.worker_addresses().end());
  spec.node_name = options_.node_name;
  if (st.has_array()) {
    spec.array_job_id = st.array().array_job_id();
    spec.array_task_id = st.array().task_id();
    spec.array_task_count = st.array().task_count();
    spec.array_task_min = st.array().task_min();
    spec.array_task_max = st.array().task_max();
  }
  spec.working_dir = st.workdir();
  spec.output_path = st.output();
  spec.error_path = st.error();
  spec.log_path = TaskLogPath(options_.state_dir + "/logs", spec.job_id,
                              spec.attempt, spec.rank);
  spec.exit_path =
      absl::StrCat(options_.state_dir, "/exits/job-", spec.job_id,
                   "-attempt-", spec.attempt, "-rank-", spec.rank, ".exit");
  spec.fence_grace = options_.grace;
  // A container task's image, prepared on this node first (image_store.h):
  // while it is, the task waits for a later pass; one that cannot be is a
  // failed start, its reason in the log.
  absl::Status image = absl::OkStatus();
  if (!st.image().empty()) {
    absl::StatusOr<std::string> rootfs = images_->RootFs(st.image());
    if (absl::IsUnavailable(rootfs.status())) return false;
    if (rootfs.ok()) spec.image_rootfs = *std::move(rootfs);
    image = rootfs.status();
  }
  Task task;
  task.gpus = spec.gpus;
  if (st.profile()) task.profiled = AddProfiler(key, spec);
  int64_t deadline;
  {
    MutexLock lock(&mu_);
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
  absl::StatusOr<std::shared_ptr<TaskIoSession>> io = MakeTaskIo(st, name);
  absl::StatusOr<TaskHandle> handle = absl::UnknownError("not started");
  if (!image.ok()) {
    handle = image;
  } else if (lease.ok() && io.ok()) {
    spec.lease = (*lease)->word();
    if (*io != nullptr) {
      for (int i = 0; i < 3; ++i) spec.stdio_fds[i] = (*io)->child_fds()[i];
      spec.controlling_tty = (*io)->tty();
    }
    handle = launcher_->Start(spec);
  } else {
    handle = lease.ok() ? io.status() : lease.status();
  }
  if (handle.ok() && io.ok() && *io != nullptr) {
    (*io)->Started(handle->pgid, spec.log_path);
    io_sessions_->Add(key, *io);
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
  MutexLock lock(&mu_);
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
  absl::Status marked = record_->MarkStopRequested(
      *task.handle, how, std::chrono::system_clock::now());
  if (!marked.ok()) {
    Log(absl::StrCat(name, ": task record: ", marked.ToString()));
  }
  if (std::shared_ptr<TaskIoSession> io =
          io_sessions_ ? io_sessions_->Find(key) : nullptr) {
    io->Notice(absl::StrCat(
        "job ", std::get<0>(key), " is being stopped (", ReasonName(reason),
        ")",
        reason == v1::STOP_REASON_PREEMPT || reason == v1::STOP_REASON_SHUTDOWN
            ? ": its GPUs go to other work; it runs again later"
            : ""));
  }
  absl::Status s = launcher_->RequestStop(*task.handle, how, options_.grace);
  Log(absl::StrCat(name, ": stopping (", ReasonName(reason),
                   s.ok() ? "" : absl::StrCat(": ", s.ToString()), ")"));
}

bool AgentDaemon::PollExits() {
  std::vector<TaskExit> exits = launcher_->PollAll();
  // Analysed outside the lock (up to 50,000 records per process). Only a
  // task this agent started under the profiler has a file there; one the
  // agent refuses (ReadTaskProfile) costs the task its profile alone.
  std::map<TaskKey, v1::TrafficProfile> profiles;
  for (const TaskExit& e : exits) {
    const TaskKey key{e.handle.job_id, e.handle.attempt, e.handle.rank};
    absl::StatusOr<std::optional<v1::TrafficProfile>> p =
        ReadTaskProfile(ProfilePath(key));
    if (!p.ok()) {
      Log(absl::StrCat(
          TaskName(e.handle.job_id, e.handle.attempt, e.handle.rank),
          ": profile not kept: ", p.status().message()));
    } else if (p->has_value()) {
      profiles[key] = **std::move(p);
    }
  }
  MutexLock lock(&mu_);
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
    if (std::shared_ptr<TaskIoSession> io =
            io_sessions_ ? io_sessions_->Find(it->first) : nullptr) {
      // Kept until the master acknowledges the end: a late attach (a short
      // `run`) still gets the output and the end.
      io->Ended(e.exit_code, e.signal);
    }
    task.out_of_memory = e.out_of_memory;
    if (e.usage) task.usage = e.usage;
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
    MutexLock lock(&mu_);
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
    absl::StatusOr<std::optional<v1::TrafficProfile>> profile =
        ReadTaskProfile(ProfilePath(key));
    if (!profile.ok()) {
      Log(absl::StrCat(
          TaskName(std::get<0>(key), std::get<1>(key), std::get<2>(key)),
          ": profile while running not kept: ", profile.status().message()));
      continue;
    }
    const std::optional<v1::TrafficProfile>& p = *profile;
    if (!p) continue;
    MutexLock lock(&mu_);
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

void AgentDaemon::ReadTaskUsage() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_usage_read_) return;
  next_usage_read_ = now + kUsageReadInterval;
  std::vector<std::pair<TaskHandle, CgroupUsage>> readings =
      launcher_->ReadUsage();
  MutexLock lock(&mu_);
  for (const auto& [handle, usage] : readings) {
    auto it = tasks_.find({handle.job_id, handle.attempt, handle.rank});
    // An ended task keeps its final reading.
    if (it != tasks_.end() && !it->second.ended) it->second.usage = usage;
  }
}

}  // namespace tiresias
