// AgentDaemon: whether tasks run in cgroups of their own, and the groups a
// previous agent left behind.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/agent_daemon.h"
#include "agent/cgroups.h"

namespace tiresias {
namespace {

// A node name as one folder name: [A-Za-z0-9._-], anything else '_'.
std::string FolderName(const std::string& name) {
  std::string out = name.empty() ? std::string("node") : name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out == "." || out == "..") out = "node";
  return out;
}

// FNV-1a of `text`, 8 hex digits: stable across builds and restarts.
std::string ShortHash(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrCat(absl::Hex(hash & 0xffffffff, absl::kZeroPad8));
}

}  // namespace

absl::Status AgentDaemon::SetUpCgroups(PosixLauncherOptions& launcher) {
  if (options_.cgroups == AgentOptions::Cgroups::kOff) {
    if (options_.memory_per_gpu_bytes > 0) {
      return absl::InvalidArgumentError(
          "--mem-per-gpu needs cgroups (not --cgroups off)");
    }
    Log("cgroups: off (--cgroups off): tasks share the node unconstrained");
    return absl::OkStatus();
  }
  std::ifstream in("/proc/self/mounts");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::map<std::string, std::string>> mounts =
      FindCgroupMounts(text.str());
  // The node's name and its state dir's: the same across the agent's
  // restarts (a restarted agent adopts its tasks' groups), another for a
  // second agent on the machine (tests run several).
  const std::string parent =
      absl::StrCat("tiresias/", FolderName(options_.node_name), "-",
                   ShortHash(std::filesystem::absolute(options_.state_dir)));
  absl::Status usable = mounts.status();
  if (usable.ok()) {
    // Can the agent make groups there (root, writable)? A probe says.
    absl::StatusOr<std::unique_ptr<TaskCgroup>> probe = TaskCgroup::Create(
        *mounts, parent, absl::StrCat("probe-", getpid()), {});
    usable = probe.status();
    if (probe.ok()) (*probe)->Remove().IgnoreError();
  }
  if (!usable.ok()) {
    if (options_.cgroups == AgentOptions::Cgroups::kOn) {
      return absl::FailedPreconditionError(
          absl::StrCat("cgroups (--cgroups on): ", usable.message()));
    }
    if (options_.memory_per_gpu_bytes > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("--mem-per-gpu needs cgroups: ", usable.message()));
    }
    Log(absl::StrCat("cgroups: off: ", usable.message(),
                     "; tasks share the node unconstrained"));
    return absl::OkStatus();
  }
  cgroup_mounts_ = *mounts;
  cgroup_parent_ = parent;
  launcher.cgroup_mounts = *mounts;
  launcher.cgroup_parent = parent;
  for (const GpuInfo& gpu : gpus_) launcher.node_gpus.push_back(gpu.index);
  launcher.memory_per_gpu = options_.memory_per_gpu_bytes;
  std::string cpus = "; CPUs not bound (--cpus-per-gpu -1)";
  if (options_.cpus_per_gpu >= 0 && !gpus_.empty()) {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof(mine), &mine) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &mine)) launcher.node_cpus.push_back(cpu);
      }
    }
    launcher.cpus_per_gpu = options_.cpus_per_gpu;
    const std::vector<int> first =
        CpusForGpus(launcher.node_cpus, static_cast<int>(gpus_.size()), {0},
                    options_.cpus_per_gpu);
    cpus = absl::StrCat("; ", first.size(), " of ", launcher.node_cpus.size(),
                        " CPUs per GPU");
  }
  Log(absl::StrCat(
      "cgroups: each task in its own, under ", parent,
      " (v1: memory, cpuset, pids, devices, cpuacct)",
      options_.memory_per_gpu_bytes > 0
          ? absl::StrCat("; memory ", options_.memory_per_gpu_bytes,
                         " bytes per GPU")
          : "",
      cpus));
  return absl::OkStatus();
}

void AgentDaemon::MeasureResources(const PosixLauncherOptions& launcher) {
  const int gpus = static_cast<int>(gpus_.size());
  int cpus = static_cast<int>(launcher.node_cpus.size());
  if (cpus > 0 && gpus > 0) {
    // Bound: each GPU's block (CpusForGpus), as many as there are.
    const int block = launcher.cpus_per_gpu > 0 ? launcher.cpus_per_gpu
                                                : std::max(1, cpus / gpus);
    cpus = std::min(cpus, block * gpus);
  } else {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    cpus =
        sched_getaffinity(0, sizeof(mine), &mine) == 0 ? CPU_COUNT(&mine) : 0;
  }
  report_cpus_ = cpus;
  report_memory_mib_ = options_.memory_mib;
  if (report_memory_mib_ <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    report_memory_mib_ = pages > 0 && page > 0 ? static_cast<int64_t>(pages) *
                                                     page / (int64_t{1} << 20)
                                               : 0;
  }
  Log(absl::StrCat("resources: ", report_cpus_, " CPUs and ",
                   report_memory_mib_, " MiB for ", gpus,
                   gpus == 1 ? " GPU" : " GPUs"));
}

void AgentDaemon::RemoveStaleCgroups() {
  if (cgroup_mounts_.empty()) return;
  // Before the threads start, so no task is being started: a group that
  // holds no process is a task's that ended (while no agent ran, or
  // before its group could be removed); a running task's holds it.
  absl::StatusOr<int> removed =
      TaskCgroup::RemoveStale(cgroup_mounts_, cgroup_parent_, {});
  if (removed.ok() && *removed > 0) {
    Log(absl::StrCat("cgroups: removed ", *removed,
                     " left by tasks no longer running"));
  }
}

void AgentDaemon::RemoveCgroupParent() {
  for (const auto& [controller, mount] : cgroup_mounts_) {
    rmdir(absl::StrCat(mount, "/", cgroup_parent_).c_str());  // if empty
  }
}

}  // namespace tiresias
