// A task's control groups on cgroup v1: one group per controller (memory,
// cpuset, pids, devices, cpuacct) under the agent's own subtree, so that a
// task on a shared node gets only the CPUs, memory, processes and GPU
// devices it was given, and the agent can say what it used and whether the
// kernel killed it for memory (issue 23).
//
// The hierarchies are found from /proc/self/mounts (a controller may share
// a mount with others, as cpu,cpuacct often do). A group's path is
// <mount>/<parent>/<name>, e.g. /sys/fs/cgroup/memory/tiresias/node-a/
// job-7-1-0; the parent's folders are made as needed (a new cpuset gets its
// parent's CPUs and memory nodes, which the kernel requires before a
// process may join).
//
// GPU devices: as Slurm's ConstrainDevices does on v1, the group keeps the
// default of every device allowed and denies each GPU of the node the task
// was not given (char major 195, one minor per GPU), so /dev/nvidiactl,
// /dev/nvidia-uvm, InfiniBand and the rest stay usable. Opening a denied
// device fails with EPERM, whatever path its node has.
//
// Not thread-safe: one owner (the agent's task table) at a time.
#ifndef TIRESIAS_AGENT_CGROUPS_H_
#define TIRESIAS_AGENT_CGROUPS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tiresias {

// The character-device major of NVIDIA GPUs (/dev/nvidiaN is 195:N).
inline constexpr int kNvidiaMajor = 195;

struct CgroupLimits {
  std::vector<int> cpus;     // cpuset.cpus; empty: the parent's
  int64_t memory_bytes = 0;  // memory.limit_in_bytes (and memsw); 0: none
  int64_t pids = 0;          // pids.max; 0: none
  // GPU minors (195:N) the task may not open: the node's GPUs it was not
  // given.
  std::vector<int> denied_gpu_minors;
};

struct CgroupUsage {
  int64_t memory_peak_bytes = 0;  // memory.max_usage_in_bytes
  double cpu_seconds = 0;         // cpuacct.usage
  int64_t oom_kills = 0;          // memory.oom_control's oom_kill
};

// The controllers a task's groups are made in.
inline constexpr const char* kTaskControllers[] = {"memory", "cpuset", "pids",
                                                   "devices", "cpuacct"};

// Where each controller's v1 hierarchy is mounted, from the text of
// /proc/self/mounts: controller -> mount point, for the kTaskControllers
// found. NotFound naming the first one missing.
absl::StatusOr<std::map<std::string, std::string>> FindCgroupMounts(
    absl::string_view mounts_text);

class TaskCgroup {
 public:
  // Makes the groups <mount>/<parent>/<name> for every kTaskControllers
  // entry of `mounts` and applies `limits`. `parent` and `name` are
  // relative paths without "..". Errors name the file that could not be
  // written; nothing is left behind on an error.
  static absl::StatusOr<std::unique_ptr<TaskCgroup>> Create(
      const std::map<std::string, std::string>& mounts,
      const std::string& parent, const std::string& name,
      const CgroupLimits& limits);

  // The groups <mount>/<parent>/<name> as Create made them (a task a
  // previous agent started), without making or changing anything.
  static absl::StatusOr<std::unique_ptr<TaskCgroup>> Open(
      const std::map<std::string, std::string>& mounts,
      const std::string& parent, const std::string& name);

  TaskCgroup(const TaskCgroup&) = delete;
  TaskCgroup& operator=(const TaskCgroup&) = delete;

  // Moves process `pid` (and so the children it makes later) into every
  // group.
  absl::Status Join(pid_t pid) const;
  // Each group's cgroup.procs, opened write-only and close-on-exec, for a
  // child to join itself between fork and exec by writing "0" to each
  // (JoinSelf): no process of the task ever runs outside. The caller closes
  // them.
  absl::StatusOr<std::vector<int>> OpenProcsFiles() const;
  // What the task used so far (or in all, once it ended).
  absl::StatusOr<CgroupUsage> Usage() const;
  // How many of its processes the kernel killed at its memory limit (what
  // Usage says as oom_kills, alone: one file read).
  absl::StatusOr<int64_t> OomKills() const;
  // SIGKILLs every process still in the groups (a task's leftovers,
  // whatever process group or session they moved to); how many.
  int KillAll() const;
  // Removes the groups. FailedPrecondition while a process is still in
  // one.
  absl::Status Remove();

  // Every group folder, one per controller mount.
  const std::vector<std::string>& dirs() const { return dirs_; }

  // Removes every group directly under <mount>/<parent> not named in
  // `keep` and holding no process (left by an agent that crashed);
  // returns how many folders went. Ones still holding a process stay.
  static absl::StatusOr<int> RemoveStale(
      const std::map<std::string, std::string>& mounts,
      const std::string& parent, const std::set<std::string>& keep);

 private:
  explicit TaskCgroup(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {}
  std::string DirOf(absl::string_view controller) const;

  std::vector<std::string> dirs_;
  std::map<std::string, std::string> by_controller_;
};

// The name of a task's groups: "job-<id>-<attempt>-<rank>".
std::string TaskCgroupName(int64_t job_id, int attempt, int rank);

// The CPUs a task given `gpus` (indexes 0 .. gpu_count - 1) is bound to
// (its cpuset): each GPU has its own block of `per_gpu` of `node_cpus`,
// in order, GPU g the g-th (0: node_cpus.size() / gpu_count each), so
// tasks that hold different GPUs get CPUs of their own, as Slurm binds
// cores to GPUs. With fewer CPUs than GPUs, GPU g gets CPU g mod the
// count; blocks past the end wrap around (shared). Ascending, no
// repeats. Empty (the parent's: no binding) without CPUs or GPUs. `take`
// > 0: only the first `take` CPUs of each block (a job's --cpus-per-gpu);
// blocks stay where they are, so jobs on other GPUs keep theirs.
std::vector<int> CpusForGpus(const std::vector<int>& node_cpus, int gpu_count,
                             const std::vector<int>& gpus, int per_gpu,
                             int take = 0);

// In a forked child: writes "0" to each of `procs_fds` (OpenProcsFiles),
// moving itself into the groups. Async-signal-safe. False if one failed.
bool JoinSelf(const std::vector<int>& procs_fds);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_CGROUPS_H_
