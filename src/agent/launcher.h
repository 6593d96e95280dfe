// Starting, stopping and watching the processes of a job's tasks on this
// machine. `ProcessLauncher` is the interface the agent uses (tests of the
// agent may replace it); `PosixLauncher` is the real one.
//
// Each task runs as its own process group, so that a stop reaches everything
// it started (data loaders, launchers' children). Preemption and
// cancellation are SIGTERM to the group, a grace period for the job to
// checkpoint, then SIGKILL to the group.
//
// Outcome of a task (TaskOutcome):
//   finished   exited 0, and nobody asked it to stop;
//   failed     exited non-zero, or was killed by a signal we did not send;
//   preempted  we stopped it to preempt it, whatever its exit status;
//   cancelled  we stopped it because the job was cancelled;
//   unknown    an adopted task (started by a previous agent) whose status
//              is lost: its shim was killed with it, so no exit file.
// A task its shim fenced (its lease lapsed, see lease.h) is preempted
// unless we had asked it to stop for another reason first.
//
// Each task runs under a shim (spawn.h) that records its exit status in an
// exit file: an agent that restarted while a task ran reads the status of
// the task it adopted from there.
//
// Whom a task runs as (run_as.h): a launcher running as root starts each
// task as its owner's Unix account, or refuses to start it.
#ifndef TIRESIAS_AGENT_LAUNCHER_H_
#define TIRESIAS_AGENT_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/cgroups.h"
#include "agent/container.h"
#include "agent/run_as.h"

namespace tiresias {

// One process of a job, as the master asks this agent to run it.
struct TaskSpec {
  int64_t job_id = 0;
  int attempt = 0;  // how many times the job was started before (0..)
  int rank = 0;     // 0 <= rank < world_size: the task (node) in its launch
  int world_size = 1;             // the launch's tasks (nodes)
  int local_rank = 0;             // rank among the job's tasks on this machine
  // The task's processes (StartTask.processes): `processes` of them, with
  // global ranks first_process.. of total_processes in the launch, each
  // its own RANK, LOCAL_RANK and the rest (task_env.h).
  int processes = 1;
  int first_process = 0;
  int total_processes = 1;
  // The launch's nodes in rank order (SLURM_JOB_NODELIST); empty: unknown.
  std::vector<std::string> node_names;
  std::vector<int> gpus;          // GpuInfo::index values; empty: no GPU
  std::vector<std::string> argv;  // argv[0] looked up in PATH if bare
  std::map<std::string, std::string> env;  // the user's --env K=V
  // Created (0700) by the task's process if missing; empty: none. A
  // leading "~/", and checkpoint_base, as checkpoint_dir.h says (resolved
  // by Start, which passes the result as TIRESIAS_CHECKPOINT_DIR).
  std::string checkpoint_dir;
  std::string checkpoint_base;  // StartTask.checkpoint_base; empty: none
  // The job's owner (StartTask.owner): whom the task runs as when the
  // launcher runs as root (ResolveTaskAccount).
  std::string owner;
  int restart_count = 0;    // times the job was resumed after a preemption
  std::string master_addr;  // rank 0's host, for MASTER_ADDR
  int master_port = 0;      // for MASTER_PORT
  std::string log_path;     // stdout and stderr are appended here
  std::string exit_path;    // the shim's exit file; empty: none
  std::string working_dir;  // empty: the agent's
  // Files the task's stdout and stderr are also appended to (besides
  // log_path, which `tiresias logs` serves), opened by the task's account
  // after the chdir, so a relative one is relative to working_dir. Empty
  // output_path: none; empty error_path: stderr goes with stdout.
  std::string output_path;
  std::string error_path;
  // host:port of each process's worker, for TF_CONFIG's cluster.worker
  // list (size total_processes). Empty: "master_addr:(master_port + 1 +
  // RANK)", which is right when all run on the master_addr machine.
  std::vector<std::string> worker_addrs;
  std::string node_name;  // TIRESIAS_NODE_NAME; empty: not set
  // A job of an array (StartTask.array): the array's id (0: not in one),
  // this job's index, and the array's count, smallest and largest index
  // (TIRESIAS_ARRAY_*).
  int64_t array_job_id = 0;
  int array_task_id = 0;
  int array_task_count = 0;
  int array_task_min = 0;
  int array_task_max = 0;
  // The task's lease (lease.h), watched by its shim, which fences the task
  // once it lapses; null: never fenced. Must stay mapped while Start runs
  // (the shim inherits the mapping).
  const int64_t* lease = nullptr;
  // SIGTERM to SIGKILL when the shim fences the task.
  std::chrono::milliseconds fence_grace{0};
  // A signal (StartTask.warn_signal; 0: none) the shim sends the task's
  // group once, warn_after after the task started.
  int warn_signal = 0;
  std::chrono::milliseconds warn_after{0};
  // With cgroups: CPUs of each GPU's block it is bound to, and its memory
  // limit per GPU (StartTask.cpus_per_gpu, mem_per_gpu_mib); 0: the
  // launcher's defaults (PosixLauncherOptions).
  int cpus_per_gpu = 0;
  int64_t memory_per_gpu = 0;  // bytes
  // A CPU-only task (no gpus; StartTask.cpus, mem_mib): with cgroups,
  // bound to this many of the node's spare CPUs (PosixLauncherOptions::
  // spare_cpus) and limited to memory_bytes (0: one GPU's worth).
  int cpus = 0;
  int64_t memory_bytes = 0;
  // An interactive task (task_io.h): its stdin, stdout and stderr, and
  // whether stdin is its controlling terminal (SpawnRequest::stdio_fds,
  // controlling_tty). Owned by the caller; -1: the batch default.
  int stdio_fds[3] = {-1, -1, -1};
  bool controlling_tty = false;
  // JobSpec.image: each process runs in a container of this root file
  // system (container.h), already prepared (image_store.h). Empty: none.
  std::string image_rootfs;
  // With image_rootfs: host files bound into the container's /dev (the
  // profiler's library and record).
  std::vector<BoundFile> container_files;
};

enum class StopReason { kPreempt, kCancel };

enum class TaskOutcome { kFinished, kFailed, kPreempted, kCancelled, kUnknown };

std::string_view StopReasonName(StopReason reason);  // "preempt", "cancel"
std::optional<StopReason> ParseStopReason(std::string_view name);
std::string_view TaskOutcomeName(TaskOutcome outcome);  // "finished", ...

// A running task: what identifies it, and what the agent records about it
// (see task_record.h) to find it again after the agent restarts.
struct TaskHandle {
  int64_t job_id = 0;
  int attempt = 0;
  int rank = 0;
  pid_t pid = 0;
  pid_t pgid = 0;  // == pid: the task leads its own group
  // When the process was really started (after a successful exec).
  std::chrono::system_clock::time_point start_time;
  // /proc/<pid>/stat start time, to tell this process from a later one that
  // reuses its pid.
  uint64_t proc_start_ticks = 0;
  std::string log_path;
  std::string exit_path;  // where its shim records its exit; may be empty
  std::vector<int> gpus;  // TaskSpec::gpus
  // The uid the task runs as, when the launcher switched it to its owner's
  // account; absent: the launcher's own (or not recorded). Information only.
  std::optional<uint32_t> uid;
};

struct TaskExit {
  TaskHandle handle;
  TaskOutcome outcome = TaskOutcome::kUnknown;
  std::optional<int> exit_code;  // set if it exited
  std::optional<int> signal;     // set if a signal killed it
  // When the agent saw the exit (no later than one Poll interval after it).
  std::chrono::system_clock::time_point end_time;
  bool fenced = false;  // its shim stopped it: its lease lapsed
  // The kernel killed a process of the task for memory (its cgroup's
  // limit): the task's end is that, whatever its exit status says.
  bool out_of_memory = false;
  // What it used in all, read from its cgroup as it ended; absent without
  // one (or when it could not be read).
  std::optional<CgroupUsage> usage;

  // "preempted (killed by signal 9)", "failed (exit code 3)".
  std::string Describe() const;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts the task. Returns once the command was exec'd; a command that
  // cannot start (not found, not executable, bad working dir, log not
  // writable, an owner the task may not run as, a checkpoint dir its
  // account cannot use) is an error naming it, with no process left
  // behind.
  virtual absl::StatusOr<TaskHandle> Start(const TaskSpec& spec) = 0;

  // Takes charge of a task a previous agent started (from the task record),
  // still running as checked by the caller (CheckRecordedTasks). `stop` is a
  // stop that agent had requested, if any: SIGTERM is sent again (that agent
  // may have died before sending it) and the grace period restarts now. Its
  // exit is seen through /proc and its status read from its exit file (lost
  // if there is none). AlreadyExists if the pid is already in charge.
  virtual absl::Status Adopt(const TaskHandle& handle,
                             std::optional<StopReason> stop,
                             std::chrono::milliseconds grace) = 0;

  // Asks the task to stop without waiting: SIGTERM to its group now, SIGKILL
  // to its group from the first Poll after `grace`. A task that had already
  // exited is not marked stopped: its outcome follows its exit status. A
  // second request keeps the first one's reason and deadline.
  virtual absl::Status RequestStop(const TaskHandle& handle, StopReason reason,
                                   std::chrono::milliseconds grace) = 0;

  // RequestStop, then waits for the task to exit: at most `grace` before the
  // SIGKILL and a few seconds after it. DeadlineExceeded if the process
  // survives even that (stuck in the kernel); Poll can pick it up later.
  // NotFound if another thread's Poll/PollAll reported the exit first.
  virtual absl::StatusOr<TaskExit> Stop(const TaskHandle& handle,
                                        StopReason reason,
                                        std::chrono::milliseconds grace) = 0;

  // Non-blocking: the task's exit if it has exited (reaping it and killing
  // whatever is left of its group), nullopt while it runs. Sends the SIGKILL
  // of an expired stop. After an exit is returned the task is forgotten;
  // polling it again is NotFound.
  virtual absl::StatusOr<std::optional<TaskExit>> Poll(
      const TaskHandle& handle) = 0;

  // Poll for every task in charge; the exits seen.
  virtual std::vector<TaskExit> PollAll() = 0;

  // What each running task in charge that has a cgroup used so far. None
  // by default (a launcher without cgroups).
  virtual std::vector<std::pair<TaskHandle, CgroupUsage>> ReadUsage() {
    return {};
  }
};

class Clock;
class ProcessTable;

// A task's environment is made for the account it runs as, never taken
// from the agent's own (task_env.h): there is no option for it.
struct PosixLauncherOptions {
  Clock* clock = nullptr;                 // null: RealClock()
  ProcessTable* process_table = nullptr;  // null: RealProcessTable()
  // How long Stop waits for a SIGKILLed task to disappear.
  std::chrono::milliseconds kill_wait{5000};
  // How often Stop polls.
  std::chrono::milliseconds poll_interval{10};
  // Whom tasks run as (run_as.h). The default refuses what it must: as
  // root, a task runs only as its owner's account, never as uid 0.
  RunAsPolicy run_as;
  // Where accounts without a usable home get their "~" for checkpoints
  // (checkpoint_dir.h); empty: such a task is refused.
  std::string checkpoint_fallback_dir;
  // Each task in cgroups of its own (cgroups.h: TaskCgroupName under
  // `cgroup_parent`, e.g. "tiresias/node-a", of the v1 hierarchies in
  // `cgroup_mounts`, or of its kCgroup2 hierarchy), made before it starts
  // and removed once it ended,
  // with what was left in them killed. Empty mounts: no cgroups.
  std::map<std::string, std::string> cgroup_mounts;
  std::string cgroup_parent;
  // Every GPU of the node (GpuInfo::index) and, in the same order, its
  // device minor (GpuInfo::minor: /dev/nvidiaN's N): in cgroups, the ones
  // a task was not given are denied to it by minor (DeniedGpuMinors).
  std::vector<int> node_gpus;
  std::vector<int> node_gpu_minors;
  // In cgroups: each task's memory limit, this many bytes per GPU it was
  // given (one GPU's worth for a task without); 0: none.
  int64_t memory_per_gpu = 0;
  // In cgroups: the CPUs a task given GPUs is bound to, CpusForGpus of
  // these (the node's CPUs, those the agent may use) and this many per
  // GPU (0: an even share). No CPUs: no binding.
  std::vector<int> node_cpus;
  int cpus_per_gpu = 0;
  // v2 without cpuset: instead of binding a task to those CPUs, hold it
  // to their count's worth of CPU time (cpu.max).
  bool cpu_quota = false;
  // In cgroups: the CPUs kept out of every GPU's block for CPU-only tasks
  // (TaskSpec::cpus). Each such task is bound to that many of them, those
  // the fewest live CPU-only tasks hold (none, while the master's count
  // holds), lowest first; an adopted task's are read back from its
  // cpuset.
  std::vector<int> spare_cpus;
  // Container tasks (TaskSpec::image_rootfs, container.h): the OCI
  // runtime (a path, or a name looked up in the agent's PATH), the
  // container init (empty: found beside the agent, FindInstalledFile),
  // the folder of the tasks' bundles (made 0711; empty: such a task is
  // refused), and where the node's GPU device nodes are.
  std::string container_runtime = "crun";
  std::string container_init;
  std::string container_dir;
  std::string gpu_device_dir = "/dev";
};

// Forks and execs tasks (see spawn.h for the child's setup, task_env.h for
// its environment). All methods are thread-safe; Stop blocks only its
// caller, and only up to grace + kill_wait. Requires that nobody else reaps
// this process's children (no SIGCHLD set to SIG_IGN, no waitpid(-1)).
// Destroying the launcher leaves tasks running: they outlive an agent
// restart by design. When a task's leader exits, whatever is left of its
// process group is SIGKILLed, so no stray process keeps its GPUs. A task
// that moves itself to another process group (setsid) escapes stops.
class PosixLauncher final : public ProcessLauncher {
 public:
  explicit PosixLauncher(PosixLauncherOptions options = {});
  ~PosixLauncher() override;

  absl::StatusOr<TaskHandle> Start(const TaskSpec& spec) override;
  absl::Status Adopt(const TaskHandle& handle, std::optional<StopReason> stop,
                     std::chrono::milliseconds grace) override;
  absl::Status RequestStop(const TaskHandle& handle, StopReason reason,
                           std::chrono::milliseconds grace) override;
  absl::StatusOr<TaskExit> Stop(const TaskHandle& handle, StopReason reason,
                                std::chrono::milliseconds grace) override;
  absl::StatusOr<std::optional<TaskExit>> Poll(
      const TaskHandle& handle) override;
  std::vector<TaskExit> PollAll() override;
  std::vector<std::pair<TaskHandle, CgroupUsage>> ReadUsage() override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LAUNCHER_H_
