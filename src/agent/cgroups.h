// A task's control groups, on cgroup v1 or v2, under the agent's own
// subtree, so that a task on a shared node gets only the CPUs, memory,
// processes and GPU devices it was given, and the agent can say what it
// used and whether the kernel killed it for memory (issue 23).
//
// v1: one group per controller (memory, cpuset, pids, devices, cpuacct).
// The hierarchies are found from /proc/self/mounts (a controller may share
// a mount with others, as cpu,cpuacct often do). A group's path is
// <mount>/<parent>/<name>, e.g. /sys/fs/cgroup/memory/tiresias/node-a/
// job-7-1-0; the parent's folders are made as needed (a new cpuset gets its
// parent's CPUs and memory nodes, which the kernel requires before a
// process may join). GPU devices: as Slurm's ConstrainDevices does on v1,
// the group keeps the default of every device allowed and denies each GPU
// of the node the task was not given (char major 195, one minor per GPU),
// so /dev/nvidiactl, /dev/nvidia-uvm, InfiniBand and the rest stay usable.
//
// v2 (a mounts map holding kCgroup2): one folder per task in the unified
// hierarchy, the controllers a limit needs enabled in each parent's
// cgroup.subtree_control on the way down; cpuset.cpus, memory.max (and
// memory.swap.max 0), pids.max and cpu.max (a CPU-time quota, for nodes
// whose hierarchy offers cpu but not cpuset, as systemd's delegation
// often does); the GPU devices denied by an eBPF program
// (device_filter.h). A limit whose controller the hierarchy does not
// offer is an error naming it, never silently dropped.
//
// Either way, opening a denied device fails with EPERM, whatever path its
// node has.
//
// Not thread-safe to change (Create, Remove) but its readings (Usage,
// OomKills, dirs) may be taken from any thread: nothing changes its
// members after construction, and a removed group's files just fail to
// read.
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
  // v2 only: at most this many CPUs' worth of time (cpu.max, a quota over
  // a 100 ms period); 0: none.
  int cpu_quota_cpus = 0;
};

struct CgroupUsage {
  // v1 memory.max_usage_in_bytes; v2 memory.peak (0 where the kernel or
  // the hierarchy has none).
  int64_t memory_peak_bytes = 0;
  double cpu_seconds = 0;  // v1 cpuacct.usage; v2 cpu.stat usage_usec
  // v1 memory.oom_control's oom_kill; v2 memory.events' (0 without).
  int64_t oom_kills = 0;
};

// The controllers a task's groups are made in, on v1.
inline constexpr const char* kTaskControllers[] = {"memory", "cpuset", "pids",
                                                   "devices", "cpuacct"};

// The key of a mounts map that means the unified (v2) hierarchy mounted
// there: TaskCgroup uses its v2 back end for such a map.
inline constexpr char kCgroup2[] = "cgroup2";

inline bool IsCgroup2(const std::map<std::string, std::string>& mounts) {
  return mounts.contains(kCgroup2);
}

// The unified hierarchy's mount, from the text of /proc/self/mounts, as a
// mounts map {kCgroup2: mount point}. NotFound without one.
absl::StatusOr<std::map<std::string, std::string>> FindCgroup2Mount(
    absl::string_view mounts_text);

// The controllers a v2 hierarchy offers to its groups: those listed in
// <mount>/cgroup.controllers.
absl::StatusOr<std::set<std::string>> Cgroup2Controllers(
    const std::string& mount);

// Where each controller's v1 hierarchy is mounted, from the text of
// /proc/self/mounts: controller -> mount point, for the kTaskControllers
// found. NotFound naming the first one missing.
absl::StatusOr<std::map<std::string, std::string>> FindCgroupMounts(
    absl::string_view mounts_text);

class TaskCgroup {
 public:
  // Makes the groups <mount>/<parent>/<name> for every kTaskControllers
  // entry of `mounts` (v2: the one folder) and applies `limits`. `parent` and
  // `name` are relative paths without "..". Errors name the file that could not
  // be written; nothing is left behind on an error.
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
  // The CPUs its cpuset holds (cpuset.cpus; empty: the parent's, or no
  // cpuset controller).
  absl::StatusOr<std::vector<int>> Cpus() const;
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
  TaskCgroup(std::vector<std::string> dirs, bool v2)
      : dirs_(std::move(dirs)), v2_(v2) {}
  std::string DirOf(absl::string_view controller) const;
  // Create's v2 half: the folders made, the limits written.
  absl::Status MakeV2(const std::string& mount, const std::string& relative,
                      const CgroupLimits& limits);

  std::vector<std::string> dirs_;
  bool v2_ = false;
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

// A kernel CPU list ("0-2,5\n") as CPUs, ascending; InvalidArgument for
// anything else. "" is none.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// The device minors a task given GPUs `given` (indexes) may not open: those
// of the node's GPUs `node_gpus` not given, `node_minors[i]` being
// node_gpus[i]'s (GpuInfo::minor; the index where `node_minors` is short).
std::vector<int> DeniedGpuMinors(const std::vector<int>& node_gpus,
                                 const std::vector<int>& node_minors,
                                 const std::vector<int>& given);

// In a forked child: writes "0" to each of `procs_fds` (OpenProcsFiles),
// moving itself into the groups. Async-signal-safe. False if one failed.
bool JoinSelf(const std::vector<int>& procs_fds);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_CGROUPS_H_
