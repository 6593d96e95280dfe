#include "agent/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "agent/cgroups.h"
#include "agent/checkpoint_dir.h"
#include "agent/clock.h"
#include "agent/container.h"
#include "agent/exit_file.h"
#include "agent/launcher_container.h"
#include "agent/proc_table.h"
#include "agent/spawn.h"
#include "agent/task_env.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

using std::chrono::milliseconds;

std::string TaskName(const TaskSpec& spec) {
  return absl::StrCat("job ", spec.job_id, " rank ", spec.rank);
}

TaskOutcome StopOutcome(StopReason reason) {
  return reason == StopReason::kPreempt ? TaskOutcome::kPreempted
                                        : TaskOutcome::kCancelled;
}

// The account of this process's user, for the environment of a task that
// runs as the agent's own user (an agent that is not root). A uid without
// a passwd entry gets no USER, LOGNAME or HOME.
TaskAccount OwnAccount() {
  absl::StatusOr<TaskAccount> account = LookUpAccountByUid(geteuid());
  return account.ok() ? *std::move(account) : TaskAccount{};
}

}  // namespace

std::string_view StopReasonName(StopReason reason) {
  return reason == StopReason::kPreempt ? "preempt" : "cancel";
}

std::optional<StopReason> ParseStopReason(std::string_view name) {
  if (name == "preempt") return StopReason::kPreempt;
  if (name == "cancel") return StopReason::kCancel;
  return std::nullopt;
}

std::string_view TaskOutcomeName(TaskOutcome outcome) {
  switch (outcome) {
    case TaskOutcome::kFinished:
      return "finished";
    case TaskOutcome::kFailed:
      return "failed";
    case TaskOutcome::kPreempted:
      return "preempted";
    case TaskOutcome::kCancelled:
      return "cancelled";
    case TaskOutcome::kUnknown:
      break;
  }
  return "unknown";
}

std::string TaskExit::Describe() const {
  std::string how = "exit status lost";
  if (exit_code.has_value()) how = absl::StrCat("exit code ", *exit_code);
  if (signal.has_value()) {
    const char* abbrev = sigabbrev_np(*signal);
    how = absl::StrCat(
        "killed by signal ", *signal,
        abbrev != nullptr ? absl::StrCat(" (SIG", abbrev, ")") : "");
  }
  if (out_of_memory) how = absl::StrCat("out of memory, ", how);
  const std::string_view name = TaskOutcomeName(outcome);
  return absl::StrCat(ToAbsl(name), " (", how, ")");
}

struct PosixLauncher::State {
  struct Tracked {
    TaskHandle handle;
    bool child = true;  // false: adopted, not ours to wait for
    std::optional<StopReason> stop;
    // When this launcher signalled the stop (wall clock, as the shim's
    // recorded end time): a task whose recorded end came before it ended
    // on its own. time_point::min() for a stop a previous agent sent at an
    // unknown time (Adopt): every end counts as stopped.
    std::chrono::system_clock::time_point stop_sent =
        std::chrono::system_clock::time_point::min();
    std::chrono::steady_clock::time_point kill_at;
    bool killed = false;
    // Its cgroups (PosixLauncherOptions::cgroup_mounts); null: none.
    std::shared_ptr<TaskCgroup> cgroup;
    // A CPU-only task's spare CPUs (counted in spare_use).
    std::vector<int> spare;
  };

  PosixLauncherOptions options;
  Clock* clock;
  ProcessTable* procs;
  Mutex mu;
  std::unordered_map<pid_t, Tracked> tasks ABSL_GUARDED_BY(mu);  // by pid
  // Cgroups of ended tasks that still held a dying process: removed by a
  // later PollAll.
  std::vector<std::shared_ptr<TaskCgroup>> leftover_cgroups ABSL_GUARDED_BY(mu);
  // Spare CPU -> live CPU-only tasks bound to it.
  std::map<int, int> spare_use ABSL_GUARDED_BY(mu);

  // `count` spare CPUs for a new CPU-only task, the least used first
  // (lowest among equals), ascending; counted as used.
  std::vector<int> TakeSpare(int count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::vector<std::pair<int, int>> by_use;  // (use, cpu)
    for (int cpu : options.spare_cpus) by_use.push_back({spare_use[cpu], cpu});
    std::sort(by_use.begin(), by_use.end());
    std::vector<int> cpus;
    for (size_t i = 0; i < by_use.size() && static_cast<int>(i) < count; ++i) {
      cpus.push_back(by_use[i].second);
    }
    std::sort(cpus.begin(), cpus.end());
    for (int cpu : cpus) ++spare_use[cpu];
    return cpus;
  }
  void GiveSpare(std::vector<int>& cpus) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (int cpu : cpus) {
      auto it = spare_use.find(cpu);
      if (it != spare_use.end() && --it->second <= 0) spare_use.erase(it);
    }
    cpus.clear();
  }

  // The task's cgroups, once it ended: whether the kernel killed it for
  // memory, then whatever is left in them killed and the groups removed
  // (or kept for a later try).
  void EndCgroup(Tracked& t, TaskExit& exit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    GiveSpare(t.spare);
    // A container task's bundle (an adopted one's too: its name is the
    // task's); nothing for another task.
    if (!options.container_dir.empty()) {
      RemoveContainerBundles(ContainerBundleDir(
          options, t.handle.job_id, t.handle.attempt, t.handle.rank));
    }
    if (t.cgroup == nullptr) return;
    absl::StatusOr<CgroupUsage> usage = t.cgroup->Usage();
    if (usage.ok()) {
      exit.usage = *usage;
      if (usage->oom_kills > 0) exit.out_of_memory = true;
    } else {
      absl::StatusOr<int64_t> oom_kills = t.cgroup->OomKills();
      if (oom_kills.ok() && *oom_kills > 0) exit.out_of_memory = true;
    }
    t.cgroup->KillAll();
    if (!t.cgroup->Remove().ok()) leftover_cgroups.push_back(t.cgroup);
    t.cgroup.reset();
  }
  void RemoveLeftoverCgroups() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::erase_if(leftover_cgroups, [](const std::shared_ptr<TaskCgroup>& g) {
      g->KillAll();
      return g->Remove().ok();
    });
  }

  enum class Liveness { kRunning, kExited, kReplaced };

  // Whether the task has exited, without reaping it. kReplaced: an adopted
  // task's pid now belongs to another process.
  Liveness Check(const Tracked& t) {
    if (!t.child) {
      absl::StatusOr<std::optional<ProcStat>> stat = procs->Stat(t.handle.pid);
      if (!stat.ok()) return Liveness::kRunning;  // unreadable: assume alive
      if (!stat->has_value() || (*stat)->exited()) return Liveness::kExited;
      return (*stat)->start_ticks == t.handle.proc_start_ticks
                 ? Liveness::kRunning
                 : Liveness::kReplaced;
    }
    siginfo_t info = {};
    int rc;
    do {
      rc = waitid(P_PID, t.handle.pid, &info, WEXITED | WNOHANG | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    // ECHILD: somebody else reaped it.
    return rc < 0 || info.si_pid != 0 ? Liveness::kExited : Liveness::kRunning;
  }

  // How the task ended. `end_time` is when it ended (the shim's record,
  // or now when that is lost). A task whose end came before this launcher
  // signalled its stop ended on its own: its own exit wins (a stop racing
  // an exit must not make a finished task run again).
  TaskExit MakeExit(const Tracked& t, std::optional<int> code,
                    std::optional<int> sig, bool fenced,
                    std::chrono::system_clock::time_point end_time) {
    TaskExit exit;
    exit.handle = t.handle;
    exit.exit_code = code;
    exit.signal = sig;
    exit.end_time = end_time;
    exit.fenced = fenced;
    const bool stopped = t.stop.has_value() && end_time >= t.stop_sent;
    if (stopped) {
      exit.outcome = StopOutcome(*t.stop);
    } else if (fenced) {
      exit.outcome = TaskOutcome::kPreempted;
    } else if (code.has_value() && !sig.has_value()) {
      exit.outcome = *code == 0 ? TaskOutcome::kFinished : TaskOutcome::kFailed;
    } else if (sig.has_value()) {
      exit.outcome = TaskOutcome::kFailed;
    } else {
      exit.outcome = TaskOutcome::kUnknown;
    }
    return exit;
  }
  // An end whose record was lost: as of now, so after any stop sent.
  TaskExit MakeExitNow(const Tracked& t, std::optional<int> code,
                       std::optional<int> sig) {
    return MakeExit(t, code, sig, false, clock->WallNow());
  }

  // Kills what is left of the group once its leader has exited: the task is
  // over and its GPUs go to someone else.
  void SweepGroup(const Tracked& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (const auto& [pid, other] : tasks) {
      if (pid != t.handle.pid && other.handle.pgid == t.handle.pgid) return;
    }
    killpg(t.handle.pgid, SIGKILL);
  }

  std::optional<TaskExit> PollLocked(Tracked& t)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const Liveness liveness = Check(t);
    if (liveness == Liveness::kRunning) {
      if (t.stop.has_value() && !t.killed && clock->SteadyNow() >= t.kill_at) {
        killpg(t.handle.pgid, SIGKILL);
        t.killed = true;
      }
      return std::nullopt;
    }
    // A child's zombie still holds its pid, and so the group id: sweep the
    // group before reaping, while the id cannot have been reused. A pid now
    // held by another process may lead another group: leave that alone.
    if (liveness == Liveness::kExited) SweepGroup(t);
    // Its shim recorded how it ended, unless the shim died with it. For a
    // child the file also says whether the shim fenced it (the shim then
    // ends by SIGKILL, not like its task).
    absl::StatusOr<std::optional<RecordedExit>> recorded;
    if (t.child) {
      int status = 0;
      pid_t rc;
      do {
        rc = waitpid(t.handle.pid, &status, 0);
      } while (rc < 0 && errno == EINTR);
      recorded = t.handle.exit_path.empty() ? std::optional<RecordedExit>()
                                            : ReadExitFile(t.handle.exit_path);
      if (!recorded.ok() || !recorded->has_value()) {
        if (rc < 0) return MakeExitNow(t, std::nullopt, std::nullopt);
        if (WIFEXITED(status)) {
          return MakeExitNow(t, WEXITSTATUS(status), std::nullopt);
        }
        return MakeExitNow(t, std::nullopt, WTERMSIG(status));
      }
    } else {
      recorded = t.handle.exit_path.empty() ? std::optional<RecordedExit>()
                                            : ReadExitFile(t.handle.exit_path);
      if (!recorded.ok() || !recorded->has_value()) {
        return MakeExitNow(t, std::nullopt, std::nullopt);
      }
    }
    return MakeExit(t, (*recorded)->exit_code, (*recorded)->signal,
                    (*recorded)->fenced, (*recorded)->end_time);
  }

  absl::StatusOr<Tracked*> Find(const TaskHandle& handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = tasks.find(handle.pid);
    if (it == tasks.end() ||
        it->second.handle.proc_start_ticks != handle.proc_start_ticks) {
      return absl::NotFoundError(
          absl::StrCat("no task with pid ", handle.pid, " (job ", handle.job_id,
                       " rank ", handle.rank, ") is in the launcher's charge"));
    }
    return &it->second;
  }
};

PosixLauncher::PosixLauncher(PosixLauncherOptions options)
    : state_(std::make_unique<State>()) {
  state_->clock = options.clock != nullptr ? options.clock : RealClock();
  state_->procs = options.process_table != nullptr ? options.process_table
                                                   : RealProcessTable();
  state_->options = std::move(options);
}

PosixLauncher::~PosixLauncher() = default;

absl::StatusOr<TaskHandle> PosixLauncher::Start(const TaskSpec& spec) {
  RETURN_IF_ERROR(ValidateTaskSpec(spec));
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount(spec.owner, state_->options.run_as);
  if (!account.ok()) {
    return absl::Status(account.status().code(),
                        absl::StrCat("cannot start ", TaskName(spec), ": ",
                                     account.status().message()));
  }
  const TaskAccount* as = account->has_value() ? &**account : nullptr;
  absl::StatusOr<std::string> checkpoint_dir =
      ResolveCheckpointDir(spec.checkpoint_dir, spec.checkpoint_base, as,
                           state_->options.checkpoint_fallback_dir);
  if (!checkpoint_dir.ok()) {
    return absl::Status(checkpoint_dir.status().code(),
                        absl::StrCat("cannot start ", TaskName(spec), ": ",
                                     checkpoint_dir.status().message()));
  }
  TaskSpec resolved = spec;
  resolved.checkpoint_dir = *std::move(checkpoint_dir);
  // A job that names no folder (submitted through the API or a job file
  // without one) starts in /, not in the agent's own folder.
  if (resolved.working_dir.empty()) resolved.working_dir = "/";
  std::vector<std::vector<std::string>> envs;
  for (int p = 0; p < spec.processes; ++p) {
    envs.push_back(
        BuildTaskEnvironment(resolved, as != nullptr ? *as : OwnAccount(), p));
  }
  // A container's command is looked up in its image, by its init.
  absl::StatusOr<std::string> path =
      spec.image_rootfs.empty()
          ? ResolveCommand(spec.argv[0], FindEnv(envs[0], "PATH"),
                           resolved.working_dir)
          : absl::StatusOr<std::string>(spec.argv[0]);
  // What fails as the account says so.
  const std::string task_name =
      as == nullptr ? TaskName(spec)
                    : absl::StrCat(TaskName(spec), " as ", as->name, " (uid ",
                                   as->ids.uid, ")");
  if (!path.ok()) {
    return absl::NotFoundError(absl::StrCat("cannot start ", task_name, ": ",
                                            path.status().message()));
  }
  SpawnRequest request{*path,           spec.argv,
                       std::move(envs), resolved.working_dir,
                       spec.log_path,   spec.exit_path};
  request.lease = spec.lease;
  request.fence_grace_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spec.fence_grace)
          .count();
  request.warn_signal = spec.warn_signal;
  request.warn_after_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spec.warn_after)
          .count();
  if (as != nullptr) request.run_as = as->ids;
  request.checkpoint_dir = resolved.checkpoint_dir;
  for (int i = 0; i < 3; ++i) request.stdio_fds[i] = spec.stdio_fds[i];
  request.controlling_tty = spec.controlling_tty;
  request.output_path = spec.output_path;
  // The same file twice would be two descriptions appending in turn: one
  // pipe keeps the task's order.
  if (spec.error_path != spec.output_path) {
    request.error_path = spec.error_path;
  }
  std::shared_ptr<TaskCgroup> cgroup;
  const PosixLauncherOptions& options = state_->options;
  // A CPU-only task's spare CPUs, given back if it does not start.
  std::vector<int> spare;
  auto give_back = [&] {
    if (spare.empty()) return;
    MutexLock lock(&state_->mu);
    state_->GiveSpare(spare);
  };
  const bool cpu_only = spec.gpus.empty() && spec.cpus > 0;
  if (!options.cgroup_mounts.empty()) {
    CgroupLimits limits;
    limits.memory_bytes =
        (spec.memory_per_gpu > 0 ? spec.memory_per_gpu
                                 : options.memory_per_gpu) *
        std::max<int64_t>(1, static_cast<int64_t>(spec.gpus.size()));
    limits.cpus = CpusForGpus(
        options.node_cpus, static_cast<int>(options.node_gpus.size()),
        spec.gpus, options.cpus_per_gpu, spec.cpus_per_gpu);
    if (cpu_only) {
      if (spec.memory_bytes > 0) limits.memory_bytes = spec.memory_bytes;
      {
        MutexLock lock(&state_->mu);
        spare = state_->TakeSpare(spec.cpus);
      }
      limits.cpus = spare;
      // Without spare CPUs to bind to, its count's worth of CPU time (v2).
      if (limits.cpus.empty() && options.cpu_quota) {
        limits.cpu_quota_cpus = spec.cpus;
      }
    }
    if (options.cpu_quota && !limits.cpus.empty()) {
      limits.cpu_quota_cpus = static_cast<int>(limits.cpus.size());
      limits.cpus.clear();
    }
    limits.denied_gpu_minors =
        DeniedGpuMinors(options.node_gpus, options.node_gpu_minors, spec.gpus);
    absl::StatusOr<std::unique_ptr<TaskCgroup>> made = TaskCgroup::Create(
        options.cgroup_mounts, options.cgroup_parent,
        TaskCgroupName(spec.job_id, spec.attempt, spec.rank), limits);
    absl::StatusOr<std::vector<int>> fds =
        made.ok() ? (*made)->OpenProcsFiles() : made.status();
    if (!fds.ok()) {
      if (made.ok()) (*made)->Remove().IgnoreError();
      give_back();
      return absl::Status(
          fds.status().code(),
          absl::StrCat("cannot start ", task_name,
                       ": its cgroups: ", fds.status().message()));
    }
    cgroup = *std::move(made);
    request.cgroup_procs_fds = *std::move(fds);
  }
  const absl::Status container = spec.image_rootfs.empty()
                                     ? absl::OkStatus()
                                     : UseContainer(options, spec, as, request);
  absl::StatusOr<pid_t> pid =
      container.ok()
          ? SpawnProcess(request)
          : absl::Status(container.code(),
                         absl::StrCat("its container: ", container.message()));
  for (int fd : request.cgroup_procs_fds) close(fd);
  if (!pid.ok()) {
    give_back();
    if (!spec.image_rootfs.empty() && !options.container_dir.empty()) {
      RemoveContainerBundles(
          ContainerBundleDir(options, spec.job_id, spec.attempt, spec.rank));
    }
    if (cgroup != nullptr) {
      cgroup->KillAll();
      cgroup->Remove().IgnoreError();
    }
    return absl::Status(pid.status().code(),
                        absl::StrCat("cannot start ", task_name, ": ",
                                     pid.status().message()));
  }

  TaskHandle handle;
  handle.job_id = spec.job_id;
  handle.attempt = spec.attempt;
  handle.rank = spec.rank;
  handle.pid = *pid;
  handle.pgid = *pid;
  handle.start_time = state_->clock->WallNow();
  handle.log_path = spec.log_path;
  handle.exit_path = spec.exit_path;
  handle.gpus = spec.gpus;
  if (as != nullptr) handle.uid = as->ids.uid;
  // The child is not reaped yet, so its /proc entry is there even if it
  // already exited.
  absl::StatusOr<std::optional<ProcStat>> stat = state_->procs->Stat(*pid);
  if (stat.ok() && stat->has_value())
    handle.proc_start_ticks = (*stat)->start_ticks;

  MutexLock lock(&state_->mu);
  State::Tracked& t = state_->tasks[*pid];
  t.handle = handle;
  t.cgroup = std::move(cgroup);
  t.spare = std::move(spare);
  return handle;
}

absl::Status PosixLauncher::Adopt(const TaskHandle& handle,
                                  std::optional<StopReason> stop,
                                  milliseconds grace) {
  MutexLock lock(&state_->mu);
  if (state_->tasks.contains(handle.pid)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "pid ", handle.pid, " is already in the launcher's charge"));
  }
  State::Tracked& t = state_->tasks[handle.pid];
  t.handle = handle;
  t.child = false;
  if (!state_->options.cgroup_mounts.empty()) {
    // Made by the agent that started it; removed here once it ends.
    absl::StatusOr<std::unique_ptr<TaskCgroup>> group = TaskCgroup::Open(
        state_->options.cgroup_mounts, state_->options.cgroup_parent,
        TaskCgroupName(handle.job_id, handle.attempt, handle.rank));
    if (group.ok()) t.cgroup = *std::move(group);
    // A CPU-only task's spare CPUs, as its cpuset says.
    if (t.cgroup != nullptr && handle.gpus.empty()) {
      absl::StatusOr<std::vector<int>> bound = t.cgroup->Cpus();
      const std::vector<int>& spare = state_->options.spare_cpus;
      if (bound.ok()) {
        for (int cpu : *bound) {
          if (std::find(spare.begin(), spare.end(), cpu) != spare.end()) {
            t.spare.push_back(cpu);
            ++state_->spare_use[cpu];
          }
        }
      }
    }
  }
  t.stop = stop;
  t.kill_at = state_->clock->SteadyNow() + grace;
  // The previous agent may have died between recording the stop and
  // signalling; a second SIGTERM is harmless to a job already checkpointing.
  if (stop.has_value() && state_->Check(t) == State::Liveness::kRunning) {
    killpg(handle.pgid, SIGTERM);
  }
  return absl::OkStatus();
}

absl::Status PosixLauncher::RequestStop(const TaskHandle& handle,
                                        StopReason reason, milliseconds grace) {
  MutexLock lock(&state_->mu);
  ASSIGN_OR_RETURN(State::Tracked * t, state_->Find(handle));
  if (t->stop.has_value() || state_->Check(*t) != State::Liveness::kRunning) {
    return absl::OkStatus();
  }
  t->stop = reason;
  t->stop_sent = state_->clock->WallNow();
  t->kill_at = state_->clock->SteadyNow() + grace;
  if (killpg(t->handle.pgid, SIGTERM) != 0 && errno != ESRCH) {
    return absl::UnavailableError(absl::StrCat("cannot signal process group ",
                                               t->handle.pgid, ": ",
                                               std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskExit> PosixLauncher::Stop(const TaskHandle& handle,
                                             StopReason reason,
                                             milliseconds grace) {
  RETURN_IF_ERROR(RequestStop(handle, reason, grace));
  Clock* clock = state_->clock;
  const auto give_up = clock->SteadyNow() + grace + state_->options.kill_wait;
  for (;;) {
    ASSIGN_OR_RETURN(std::optional<TaskExit> exit, Poll(handle));
    if (exit.has_value()) return *exit;
    if (clock->SteadyNow() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(
          "job ", handle.job_id, " rank ", handle.rank, " (pid ", handle.pid,
          ") survived SIGKILL for ", state_->options.kill_wait.count(), " ms"));
    }
    clock->SleepFor(state_->options.poll_interval);
  }
}

absl::StatusOr<std::optional<TaskExit>> PosixLauncher::Poll(
    const TaskHandle& handle) {
  MutexLock lock(&state_->mu);
  ASSIGN_OR_RETURN(State::Tracked * t, state_->Find(handle));
  std::optional<TaskExit> exit = state_->PollLocked(*t);
  if (exit.has_value()) {
    state_->EndCgroup(*t, *exit);
    state_->tasks.erase(handle.pid);
  }
  return exit;
}

std::vector<TaskExit> PosixLauncher::PollAll() {
  MutexLock lock(&state_->mu);
  state_->RemoveLeftoverCgroups();
  std::vector<TaskExit> exits;
  for (auto it = state_->tasks.begin(); it != state_->tasks.end();) {
    std::optional<TaskExit> exit = state_->PollLocked(it->second);
    if (exit.has_value()) {
      state_->EndCgroup(it->second, *exit);
      exits.push_back(std::move(*exit));
      it = state_->tasks.erase(it);
    } else {
      ++it;
    }
  }
  return exits;
}

std::vector<std::pair<TaskHandle, CgroupUsage>> PosixLauncher::ReadUsage() {
  std::vector<std::pair<TaskHandle, std::shared_ptr<TaskCgroup>>> groups;
  {
    MutexLock lock(&state_->mu);
    for (const auto& [pid, t] : state_->tasks) {
      if (t.cgroup != nullptr) groups.emplace_back(t.handle, t.cgroup);
    }
  }
  // Read outside the lock (a few small files each); a group removed
  // meanwhile (its task just ended) fails to read and is left out: its
  // exit carries the final reading.
  std::vector<std::pair<TaskHandle, CgroupUsage>> out;
  for (const auto& [handle, group] : groups) {
    absl::StatusOr<CgroupUsage> usage = group->Usage();
    if (usage.ok()) out.emplace_back(handle, *usage);
  }
  return out;
}

}  // namespace tiresias
