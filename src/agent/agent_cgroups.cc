// AgentDaemon: whether tasks run in cgroups of their own, and the groups a
// previous agent left behind.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/agent_daemon.h"
#include "agent/cgroups.h"
#include "core/memory_size.h"

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

const char* CgroupsFlag(AgentOptions::Cgroups cgroups) {
  switch (cgroups) {
    case AgentOptions::Cgroups::kAuto:
      return "auto";
    case AgentOptions::Cgroups::kOn:
      return "on";
    case AgentOptions::Cgroups::kOff:
      return "off";
    case AgentOptions::Cgroups::kV1:
      return "v1";
    case AgentOptions::Cgroups::kV2:
      return "v2";
  }
  return "?";
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

// The CPUs this process may run on, ascending.
std::vector<int> AffinityCpus() {
  std::vector<int> cpus;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &mine)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

}  // namespace

absl::Status AgentDaemon::CheckSpareCpus() const {
  const int count = static_cast<int>(AffinityCpus().size());
  // Without GPUs every CPU may be spare; with them, their blocks need one.
  const int most = gpus_.empty() ? count : count - 1;
  if (options_.spare_cpus < 0 || options_.spare_cpus > most) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--spare-cpus ", options_.spare_cpus, ": expected 0 to ", most,
        " (this agent may use ", count, " CPUs",
        gpus_.empty() ? ")" : ", and its GPUs' blocks need at least one)"));
  }
  return absl::OkStatus();
}

// The hierarchies tasks' groups go in, as --cgroups chose: v1 or v2 as
// asked; auto (and on) the unified hierarchy when it is mounted at
// /sys/fs/cgroup (a v2-only machine), else the v1 hierarchies, else a
// unified one mounted elsewhere (a hybrid host's, which offers devices
// by eBPF and little else).
absl::StatusOr<std::map<std::string, std::string>>
AgentDaemon::ChooseCgroupHierarchy() const {
  std::ifstream in("/proc/self/mounts");
  std::stringstream text;
  text << in.rdbuf();
  using Cgroups = AgentOptions::Cgroups;
  if (options_.cgroups == Cgroups::kV1) return FindCgroupMounts(text.str());
  absl::StatusOr<std::map<std::string, std::string>> v2 =
      FindCgroup2Mount(text.str());
  if (options_.cgroups == Cgroups::kV2) return v2;
  if (v2.ok() && v2->at(kCgroup2) == "/sys/fs/cgroup") return v2;
  absl::StatusOr<std::map<std::string, std::string>> v1 =
      FindCgroupMounts(text.str());
  if (v1.ok() || !v2.ok()) return v1;
  return v2;
}

absl::Status AgentDaemon::SetUpCgroups(PosixLauncherOptions& launcher) {
  if (options_.cgroups == AgentOptions::Cgroups::kOff) {
    if (options_.memory_per_gpu_bytes > 0) {
      return absl::InvalidArgumentError(
          "--mem-per-gpu needs cgroups (not --cgroups off)");
    }
    Log("cgroups: off (--cgroups off): tasks share the node unconstrained");
    return absl::OkStatus();
  }
  absl::StatusOr<std::map<std::string, std::string>> mounts =
      ChooseCgroupHierarchy();
  // The node's name and its state dir's: the same across the agent's
  // restarts (a restarted agent adopts its tasks' groups), another for a
  // second agent on the machine (tests run several).
  const std::string parent =
      absl::StrCat("tiresias/", FolderName(options_.node_name), "-",
                   ShortHash(std::filesystem::absolute(options_.state_dir)));
  absl::Status usable = mounts.status();
  std::set<std::string> offered;  // v2: the hierarchy's controllers
  if (usable.ok() && IsCgroup2(*mounts)) {
    absl::StatusOr<std::set<std::string>> found =
        Cgroup2Controllers(mounts->at(kCgroup2));
    usable = found.status();
    if (found.ok()) offered = *std::move(found);
  }
  if (usable.ok()) {
    // Can the agent make groups there (root, writable; on v2, load and
    // attach a device filter)? A probe says.
    // On v2 with every limit its controllers allow, so that enabling them
    // down the path is tried too (refused, e.g., where the path's top
    // holds processes, as a container's cgroup namespace root may).
    CgroupLimits probe_limits;
    if (IsCgroup2(*mounts)) {
      probe_limits.denied_gpu_minors = {0};
      if (offered.contains("memory")) probe_limits.memory_bytes = 64 << 20;
      if (offered.contains("cpu")) probe_limits.cpu_quota_cpus = 1;
      cpu_set_t mine;
      CPU_ZERO(&mine);
      if (offered.contains("cpuset") &&
          sched_getaffinity(0, sizeof(mine), &mine) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
          if (CPU_ISSET(cpu, &mine)) {
            probe_limits.cpus = {cpu};
            break;
          }
        }
      }
    }
    absl::StatusOr<std::unique_ptr<TaskCgroup>> probe = TaskCgroup::Create(
        *mounts, parent, absl::StrCat("probe-", getpid()), probe_limits);
    usable = probe.status();
    if (probe.ok()) (*probe)->Remove().IgnoreError();
  }
  const bool required = options_.cgroups != AgentOptions::Cgroups::kAuto;
  if (!usable.ok()) {
    if (required) {
      return absl::FailedPreconditionError(
          absl::StrCat("cgroups (--cgroups ", CgroupsFlag(options_.cgroups),
                       "): ", usable.message()));
    }
    if (options_.memory_per_gpu_bytes > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("--mem-per-gpu needs cgroups: ", usable.message()));
    }
    Log(absl::StrCat("cgroups: off: ", usable.message(),
                     "; tasks share the node unconstrained"));
    return absl::OkStatus();
  }
  const bool v2 = IsCgroup2(*mounts);
  memory_limited_ = !v2 || offered.contains("memory");
  if (!memory_limited_ && options_.memory_per_gpu_bytes > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--mem-per-gpu: the cgroup v2 hierarchy at ",
                     mounts->at(kCgroup2), " offers no memory controller"));
  }
  cgroup_mounts_ = *mounts;
  cgroup_parent_ = parent;
  launcher.cgroup_mounts = *mounts;
  launcher.cgroup_parent = parent;
  for (const GpuInfo& gpu : gpus_) {
    launcher.node_gpus.push_back(gpu.index);
    launcher.node_gpu_minors.push_back(gpu.minor >= 0 ? gpu.minor : gpu.index);
  }
  launcher.memory_per_gpu = options_.memory_per_gpu_bytes;
  std::string cpus = "; CPUs not bound (--cpus-per-gpu -1)";
  const bool can_bind = !v2 || offered.contains("cpuset");
  const bool can_quota = v2 && offered.contains("cpu");
  // The last --spare-cpus of them are CPU-only tasks'; GPUs' blocks are
  // made of the rest (CheckSpareCpus: at least one).
  const std::vector<int> mine = AffinityCpus();
  const int spare =
      std::clamp(options_.spare_cpus, 0, static_cast<int>(mine.size()));
  std::string spare_text;
  if (spare > 0 && (can_bind || can_quota)) {
    launcher.spare_cpus.assign(mine.end() - spare, mine.end());
    launcher.cpu_quota = !can_bind;
    spare_text = absl::StrCat("; CPU-only tasks on CPUs ",
                              absl::StrJoin(launcher.spare_cpus, ","),
                              can_bind ? "" : " (as a CPU-time quota)");
  }
  if (options_.cpus_per_gpu >= 0 && !gpus_.empty() && !can_bind && !can_quota) {
    cpus = "; CPUs not limited (the hierarchy offers neither cpuset nor cpu)";
  } else if (options_.cpus_per_gpu >= 0 && !gpus_.empty()) {
    launcher.node_cpus.assign(mine.begin(), mine.end() - spare);
    launcher.cpus_per_gpu = options_.cpus_per_gpu;
    launcher.cpu_quota = !can_bind;
    const std::vector<int> first =
        CpusForGpus(launcher.node_cpus, static_cast<int>(gpus_.size()), {0},
                    options_.cpus_per_gpu);
    cpus = absl::StrCat("; ", first.size(), " of ", launcher.node_cpus.size(),
                        " CPUs per GPU",
                        can_bind ? "" : " as a CPU-time quota (no cpuset)");
  }
  const std::string how =
      v2 ? absl::StrCat(" (v2 at ", mounts->at(kCgroup2), ", controllers \"",
                        absl::StrJoin(offered, " "), "\", GPU devices by eBPF)")
         : " (v1: memory, cpuset, pids, devices, cpuacct)";
  Log(absl::StrCat(
      "cgroups: each task in its own, under ", parent, how,
      options_.memory_per_gpu_bytes > 0
          ? absl::StrCat("; memory ", options_.memory_per_gpu_bytes,
                         " bytes per GPU")
          : "",
      memory_limited_ ? "" : "; memory not limited (no memory controller)",
      cpus, spare_text));
  return absl::OkStatus();
}

void AgentDaemon::MeasureResources(PosixLauncherOptions& launcher) {
  const int gpus = static_cast<int>(gpus_.size());
  const int all = static_cast<int>(AffinityCpus().size());
  const int spare = std::clamp(options_.spare_cpus, 0, all);
  int cpus = static_cast<int>(launcher.node_cpus.size());
  if (cpus > 0 && gpus > 0) {
    // Bound: each GPU's block (CpusForGpus), as many as there are.
    const int block = launcher.cpus_per_gpu > 0 ? launcher.cpus_per_gpu
                                                : std::max(1, cpus / gpus);
    cpus = std::min(cpus, block * gpus);
  } else {
    cpus = gpus > 0 ? all - spare : 0;  // none for GPUs that are not there
  }
  report_cpus_ = cpus;
  report_spare_cpus_ = spare;
  report_memory_mib_ = options_.memory_mib;
  if (!memory_limited_) {
    // Nothing to hold a job to what it asked: none to offer (jobs with
    // --mem-per-gpu go elsewhere, their pending reason says why).
    report_memory_mib_ = 0;
  } else if (report_memory_mib_ <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    report_memory_mib_ = pages > 0 && page > 0 ? static_cast<int64_t>(pages) *
                                                     page / (int64_t{1} << 20)
                                               : 0;
  }
  if (spare > 0 && report_memory_mib_ > 0) {
    // Kept with the spare CPUs, out of what the GPUs' slices share.
    const int64_t kept =
        options_.spare_memory_bytes >= 0
            ? std::min(report_memory_mib_, options_.spare_memory_bytes >> 20)
        : gpus == 0 ? report_memory_mib_  // a node for CPU-only jobs alone
                    : report_memory_mib_ * spare / std::max(1, all);
    report_spare_memory_mib_ = kept;
    report_memory_mib_ -= kept;
  }
  std::string share;
  if (!launcher.cgroup_mounts.empty() && memory_limited_ &&
      launcher.memory_per_gpu == 0 && gpus > 0 && report_memory_mib_ > 0) {
    // A job promised its GPUs' slices (the master places by them) gets
    // them only if no other job takes more than its own.
    launcher.memory_per_gpu = report_memory_mib_ / gpus * (int64_t{1} << 20);
    share = absl::StrCat("; a task that asks none is held to ",
                         MemoryText(report_memory_mib_ / gpus),
                         " per GPU (an equal share; --mem-per-gpu to set)");
  }
  Log(absl::StrCat(
      "resources: ", report_cpus_, " CPUs and ", report_memory_mib_,
      " MiB for ", gpus, gpus == 1 ? " GPU" : " GPUs", share,
      spare > 0
          ? absl::StrCat("; ", spare, " CPUs and ", report_spare_memory_mib_,
                         " MiB for CPU-only jobs")
          : ""));
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
