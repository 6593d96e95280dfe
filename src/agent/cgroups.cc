#include "agent/cgroups.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/device_filter.h"

namespace tiresias {
namespace {

namespace fs = std::filesystem;

absl::Status WriteFile(const std::string& path, absl::string_view value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  const ssize_t n = write(fd, value.data(), value.size());
  const int error = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return absl::InternalError(absl::StrCat(path, ": cannot write \"", value,
                                            "\": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<int64_t> ReadNumber(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return absl::DataLossError(
        absl::StrCat(path, ": expected a number, got \"", *text, "\""));
  }
  return value;
}

// The number after `key` in a file of "key value" lines (memory.events,
// cpu.stat, v1's memory.oom_control); 0 when the key is absent.
absl::StatusOr<int64_t> ReadKey(const std::string& path,
                                absl::string_view key) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() == 2 && words[0] == key &&
        !absl::SimpleAtoi(words[1], &value)) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", key, ": expected a number"));
    }
  }
  return value;
}

bool SafeRelative(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

// Makes <mount>/<relative>, folder by folder; a new cpuset folder gets
// its parent's CPUs and memory nodes (empty ones refuse every process).
absl::Status MakeGroup(const std::string& mount, const std::string& controller,
                       const std::string& relative) {
  std::string dir = mount;
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    const std::string parent = dir;
    dir = absl::StrCat(dir, "/", part);
    if (mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;
      return absl::InternalError(
          absl::StrCat(dir, ": cannot make: ", std::strerror(errno)));
    }
    if (controller == "cpuset") {
      for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
        absl::StatusOr<std::string> value =
            ReadFile(absl::StrCat(parent, "/", file));
        if (!value.ok()) return value.status();
        const std::string trimmed(absl::StripAsciiWhitespace(*value));
        if (absl::Status status =
                WriteFile(absl::StrCat(dir, "/", file), trimmed);
            !status.ok()) {
          return status;
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> FindCgroupMounts(
    absl::string_view mounts_text) {
  std::map<std::string, std::string> found;
  for (absl::string_view line : absl::StrSplit(mounts_text, '\n')) {
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 4 || fields[2] != "cgroup") continue;
    for (absl::string_view option : absl::StrSplit(fields[3], ',')) {
      for (const char* controller : kTaskControllers) {
        if (option == controller && !found.contains(controller)) {
          found[controller] = std::string(fields[1]);
        }
      }
    }
  }
  for (const char* controller : kTaskControllers) {
    if (!found.contains(controller)) {
      return absl::NotFoundError(
          absl::StrCat("no cgroup v1 hierarchy with the ", controller,
                       " controller is mounted (/proc/self/mounts)"));
    }
  }
  return found;
}

absl::StatusOr<std::map<std::string, std::string>> FindCgroup2Mount(
    absl::string_view mounts_text) {
  for (absl::string_view line : absl::StrSplit(mounts_text, '\n')) {
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 3 && fields[2] == "cgroup2") {
      return std::map<std::string, std::string>{
          {kCgroup2, std::string(fields[1])}};
    }
  }
  return absl::NotFoundError(
      "no cgroup v2 (unified) hierarchy is mounted (/proc/self/mounts)");
}

absl::StatusOr<std::set<std::string>> Cgroup2Controllers(
    const std::string& mount) {
  absl::StatusOr<std::string> text =
      ReadFile(absl::StrCat(mount, "/cgroup.controllers"));
  if (!text.ok()) return text.status();
  std::set<std::string> offered;
  for (absl::string_view word :
       absl::StrSplit(*text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    offered.insert(std::string(word));
  }
  return offered;
}

namespace {

// The group folders of <parent>/<name>, one per controller mount, and the
// folder of each controller.
absl::Status GroupDirs(const std::map<std::string, std::string>& mounts,
                       const std::string& parent, const std::string& name,
                       std::vector<std::string>* dirs,
                       std::map<std::string, std::string>* by_controller) {
  if (!SafeRelative(parent) || !SafeRelative(name) ||
      name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup \"", parent, "\" / \"", name,
                     "\": expected relative names without \".\" or \"..\""));
  }
  if (IsCgroup2(mounts)) {
    // One folder, every controller's files in it.
    const std::string dir =
        absl::StrCat(mounts.at(kCgroup2), "/", parent, "/", name);
    dirs->push_back(dir);
    for (const char* controller : kTaskControllers) {
      (*by_controller)[controller] = dir;
    }
    return absl::OkStatus();
  }
  for (const char* controller : kTaskControllers) {
    auto mount = mounts.find(controller);
    if (mount == mounts.end()) {
      return absl::NotFoundError(
          absl::StrCat("no hierarchy for the ", controller, " controller"));
    }
    const std::string dir = absl::StrCat(mount->second, "/", parent, "/", name);
    (*by_controller)[controller] = dir;
    if (std::find(dirs->begin(), dirs->end(), dir) == dirs->end()) {
      dirs->push_back(dir);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TaskCgroup>> TaskCgroup::Open(
    const std::map<std::string, std::string>& mounts, const std::string& parent,
    const std::string& name) {
  std::vector<std::string> dirs;
  std::map<std::string, std::string> by_controller;
  absl::Status status = GroupDirs(mounts, parent, name, &dirs, &by_controller);
  if (!status.ok()) return status;
  std::unique_ptr<TaskCgroup> group(
      new TaskCgroup(std::move(dirs), IsCgroup2(mounts)));
  group->by_controller_ = std::move(by_controller);
  return group;
}

int TaskCgroup::KillAll() const {
  std::set<pid_t> pids;
  for (const std::string& dir : dirs_) {
    absl::StatusOr<std::string> procs =
        ReadFile(absl::StrCat(dir, "/cgroup.procs"));
    if (!procs.ok()) continue;
    for (absl::string_view line :
         absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
      int pid = 0;
      if (absl::SimpleAtoi(line, &pid) && pid > 0) pids.insert(pid);
    }
  }
  int killed = 0;
  for (pid_t pid : pids) {
    if (kill(pid, SIGKILL) == 0) ++killed;
  }
  return killed;
}

absl::StatusOr<std::unique_ptr<TaskCgroup>> TaskCgroup::Create(
    const std::map<std::string, std::string>& mounts, const std::string& parent,
    const std::string& name, const CgroupLimits& limits) {
  std::vector<std::string> dirs;
  std::map<std::string, std::string> by_controller;
  absl::Status named = GroupDirs(mounts, parent, name, &dirs, &by_controller);
  if (!named.ok()) return named;
  std::unique_ptr<TaskCgroup> group(new TaskCgroup(dirs, IsCgroup2(mounts)));
  group->by_controller_ = by_controller;
  auto fail = [&](absl::Status status) {
    group->Remove().IgnoreError();
    return status;
  };
  if (group->v2_) {
    absl::Status made = group->MakeV2(mounts.at(kCgroup2),
                                      absl::StrCat(parent, "/", name), limits);
    if (!made.ok()) return fail(made);
    return group;
  }
  if (limits.cpu_quota_cpus > 0) {
    return absl::InvalidArgumentError(
        "a CPU quota is for cgroup v2 (cpu.max); v1 binds CPUs by cpuset");
  }
  for (const char* controller : kTaskControllers) {
    absl::Status made = MakeGroup(mounts.at(controller), controller,
                                  absl::StrCat(parent, "/", name));
    if (!made.ok()) return fail(made);
  }
  auto write = [&](absl::string_view controller, absl::string_view file,
                   absl::string_view value) {
    return WriteFile(absl::StrCat(group->DirOf(controller), "/", file), value);
  };
  if (!limits.cpus.empty()) {
    absl::Status status =
        write("cpuset", "cpuset.cpus", absl::StrJoin(limits.cpus, ","));
    if (!status.ok()) return fail(status);
  }
  if (limits.memory_bytes > 0) {
    const std::string bytes = absl::StrCat(limits.memory_bytes);
    absl::Status status = write("memory", "memory.limit_in_bytes", bytes);
    if (!status.ok()) return fail(status);
    // Memory plus swap, where the kernel accounts swap: no escape into it.
    if (fs::exists(absl::StrCat(group->DirOf("memory"),
                                "/memory.memsw.limit_in_bytes"))) {
      status = write("memory", "memory.memsw.limit_in_bytes", bytes);
      if (!status.ok()) return fail(status);
    }
  }
  if (limits.pids > 0) {
    absl::Status status = write("pids", "pids.max", absl::StrCat(limits.pids));
    if (!status.ok()) return fail(status);
  }
  for (int minor : limits.denied_gpu_minors) {
    absl::Status status =
        write("devices", "devices.deny",
              absl::StrCat("c ", kNvidiaMajor, ":", minor, " rwm"));
    if (!status.ok()) return fail(status);
  }
  return group;
}

absl::Status TaskCgroup::MakeV2(const std::string& mount,
                                const std::string& relative,
                                const CgroupLimits& limits) {
  std::vector<std::pair<std::string, std::string>> needed;  // controller, why
  if (!limits.cpus.empty()) needed.emplace_back("cpuset", "bind CPUs");
  if (limits.cpu_quota_cpus > 0) needed.emplace_back("cpu", "limit CPU time");
  if (limits.memory_bytes > 0) needed.emplace_back("memory", "limit memory");
  if (limits.pids > 0) needed.emplace_back("pids", "limit processes");
  std::string enable;
  if (!needed.empty()) {
    absl::StatusOr<std::set<std::string>> offered = Cgroup2Controllers(mount);
    if (!offered.ok()) return offered.status();
    for (const auto& [controller, why] : needed) {
      if (!offered->contains(controller)) {
        return absl::FailedPreconditionError(
            absl::StrCat(mount, ": the cgroup v2 hierarchy offers no ",
                         controller, " controller (cgroup.controllers: \"",
                         absl::StrJoin(*offered, " "), "\"), needed to ", why));
      }
      absl::StrAppend(&enable, enable.empty() ? "+" : " +", controller);
    }
  }
  // Folder by folder, each parent enabling the controllers for its
  // children (the kernel's rule: a child has only what its parent's
  // cgroup.subtree_control names).
  std::string dir = mount;
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    if (!enable.empty()) {
      absl::Status status =
          WriteFile(absl::StrCat(dir, "/cgroup.subtree_control"), enable);
      if (!status.ok()) return status;
    }
    dir = absl::StrCat(dir, "/", part);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::InternalError(
          absl::StrCat(dir, ": cannot make: ", std::strerror(errno)));
    }
  }
  auto write = [&](absl::string_view file, absl::string_view value) {
    return WriteFile(absl::StrCat(dir, "/", file), value);
  };
  if (!limits.cpus.empty()) {
    absl::Status status = write("cpuset.cpus", absl::StrJoin(limits.cpus, ","));
    if (!status.ok()) return status;
  }
  if (limits.cpu_quota_cpus > 0) {
    constexpr int64_t kPeriodUs = 100000;
    absl::Status status =
        write("cpu.max",
              absl::StrCat(limits.cpu_quota_cpus * kPeriodUs, " ", kPeriodUs));
    if (!status.ok()) return status;
  }
  if (limits.memory_bytes > 0) {
    absl::Status status =
        write("memory.max", absl::StrCat(limits.memory_bytes));
    if (!status.ok()) return status;
    // No escape into swap, where the kernel has it.
    if (fs::exists(absl::StrCat(dir, "/memory.swap.max"))) {
      status = write("memory.swap.max", "0");
      if (!status.ok()) return status;
    }
  }
  if (limits.pids > 0) {
    absl::Status status = write("pids.max", absl::StrCat(limits.pids));
    if (!status.ok()) return status;
  }
  if (!limits.denied_gpu_minors.empty()) {
    const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      return absl::InternalError(
          absl::StrCat(dir, ": cannot open: ", std::strerror(errno)));
    }
    absl::Status status =
        AttachDeviceFilter(fd, kNvidiaMajor, limits.denied_gpu_minors);
    close(fd);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(dir, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

std::string TaskCgroup::DirOf(absl::string_view controller) const {
  auto it = by_controller_.find(std::string(controller));
  return it == by_controller_.end() ? "" : it->second;
}

absl::Status TaskCgroup::Join(pid_t pid) const {
  for (const std::string& dir : dirs_) {
    absl::Status status =
        WriteFile(absl::StrCat(dir, "/cgroup.procs"), absl::StrCat(pid));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> TaskCgroup::OpenProcsFiles() const {
  std::vector<int> fds;
  for (const std::string& dir : dirs_) {
    const std::string path = absl::StrCat(dir, "/cgroup.procs");
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      for (int open_fd : fds) close(open_fd);
      return absl::InternalError(
          absl::StrCat(path, ": cannot open: ", std::strerror(error)));
    }
    fds.push_back(fd);
  }
  return fds;
}

std::vector<int> CpusForGpus(const std::vector<int>& node_cpus, int gpu_count,
                             const std::vector<int>& gpus, int per_gpu,
                             int take) {
  const int count = static_cast<int>(node_cpus.size());
  if (count == 0 || gpus.empty() || gpu_count < 1) return {};
  if (per_gpu < 1) per_gpu = std::max(1, count / gpu_count);
  const int used = take > 0 ? std::min(take, per_gpu) : per_gpu;
  std::vector<int> cpus;
  for (int gpu : gpus) {
    if (gpu < 0) continue;
    // Fewer CPUs than GPUs: one each, round the CPUs.
    const int first = count >= gpu_count ? gpu * per_gpu : gpu;
    for (int j = 0; j < used; ++j) {
      cpus.push_back(node_cpus[(first + j) % count]);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(absl::StripAsciiWhitespace(text),
                                               ',', absl::SkipEmpty())) {
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (!absl::SimpleAtoi(item.substr(0, dash), &lo) ||
        !absl::SimpleAtoi(
            dash == absl::string_view::npos ? item : item.substr(dash + 1),
            &hi) ||
        lo < 0 || hi < lo || hi >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU list \"", text, "\": bad item \"", item, "\""));
    }
    for (int cpu = lo; cpu <= hi; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

absl::StatusOr<std::vector<int>> TaskCgroup::Cpus() const {
  const std::string dir =
      v2_ ? (dirs_.empty() ? "" : dirs_[0]) : DirOf("cpuset");
  if (dir.empty()) return std::vector<int>{};
  absl::StatusOr<std::string> text =
      ReadFile(absl::StrCat(dir, "/cpuset.cpus"));
  if (!text.ok()) {
    // v2 without a cpuset controller has no such file.
    if (absl::IsNotFound(text.status())) return std::vector<int>{};
    return text.status();
  }
  return ParseCpuList(*text);
}

std::vector<int> DeniedGpuMinors(const std::vector<int>& node_gpus,
                                 const std::vector<int>& node_minors,
                                 const std::vector<int>& given) {
  std::vector<int> denied;
  for (size_t i = 0; i < node_gpus.size(); ++i) {
    if (std::find(given.begin(), given.end(), node_gpus[i]) != given.end()) {
      continue;
    }
    denied.push_back(i < node_minors.size() && node_minors[i] >= 0
                         ? node_minors[i]
                         : node_gpus[i]);
  }
  return denied;
}

std::string TaskCgroupName(int64_t job_id, int attempt, int rank) {
  return absl::StrCat("job-", job_id, "-", attempt, "-", rank);
}

bool JoinSelf(const std::vector<int>& procs_fds) {
  for (int fd : procs_fds) {
    if (write(fd, "0", 1) != 1) return false;
  }
  return true;
}

absl::StatusOr<CgroupUsage> TaskCgroup::Usage() const {
  CgroupUsage usage;
  if (v2_) {
    // memory.peak (Linux 5.19) and memory.events exist only where the
    // memory controller is enabled; cpu.stat in every group.
    const std::string dir = dirs_.front();
    if (fs::exists(absl::StrCat(dir, "/memory.peak"))) {
      absl::StatusOr<int64_t> peak =
          ReadNumber(absl::StrCat(dir, "/memory.peak"));
      if (!peak.ok()) return peak.status();
      usage.memory_peak_bytes = *peak;
    }
    absl::StatusOr<int64_t> cpu_us =
        ReadKey(absl::StrCat(dir, "/cpu.stat"), "usage_usec");
    if (!cpu_us.ok()) return cpu_us.status();
    usage.cpu_seconds = static_cast<double>(*cpu_us) / 1e6;
  } else {
    absl::StatusOr<int64_t> peak =
        ReadNumber(absl::StrCat(DirOf("memory"), "/memory.max_usage_in_bytes"));
    if (!peak.ok()) return peak.status();
    usage.memory_peak_bytes = *peak;
    absl::StatusOr<int64_t> cpu_ns =
        ReadNumber(absl::StrCat(DirOf("cpuacct"), "/cpuacct.usage"));
    if (!cpu_ns.ok()) return cpu_ns.status();
    usage.cpu_seconds = static_cast<double>(*cpu_ns) / 1e9;
  }
  absl::StatusOr<int64_t> oom_kills = OomKills();
  if (!oom_kills.ok()) return oom_kills.status();
  usage.oom_kills = *oom_kills;
  return usage;
}

absl::StatusOr<int64_t> TaskCgroup::OomKills() const {
  if (v2_) {
    const std::string events = absl::StrCat(dirs_.front(), "/memory.events");
    if (!fs::exists(events)) return 0;  // no memory controller: no limit
    return ReadKey(events, "oom_kill");
  }
  return ReadKey(absl::StrCat(DirOf("memory"), "/memory.oom_control"),
                 "oom_kill");
}

absl::Status TaskCgroup::Remove() {
  for (const std::string& dir : dirs_) {
    if (rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      if (errno == EBUSY) {
        return absl::FailedPreconditionError(
            absl::StrCat(dir, ": a process is still in it"));
      }
      return absl::InternalError(
          absl::StrCat(dir, ": cannot remove: ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> TaskCgroup::RemoveStale(
    const std::map<std::string, std::string>& mounts, const std::string& parent,
    const std::set<std::string>& keep) {
  if (!SafeRelative(parent)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup parent \"", parent, "\": not a relative path"));
  }
  std::set<std::string> seen;
  int removed = 0;
  for (const auto& [controller, mount] : mounts) {
    const std::string dir = absl::StrCat(mount, "/", parent);
    if (!seen.insert(dir).second) continue;
    std::error_code error;
    for (const fs::directory_entry& entry :
         fs::directory_iterator(dir, error)) {
      if (!entry.is_directory() ||
          keep.contains(entry.path().filename().string())) {
        continue;
      }
      // rmdir fails (EBUSY) while a process is in the group: it stays.
      if (rmdir(entry.path().c_str()) == 0) ++removed;
    }
  }
  return removed;
}

}  // namespace tiresias
