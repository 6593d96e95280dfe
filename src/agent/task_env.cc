#include "agent/task_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/spawn.h"
#include "core/to_absl.h"
#include "core/warn_signal.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view expected,
                        absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(
      "task spec field '", field, "': expected ", expected, ", got ", got));
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

}  // namespace

absl::Status ValidateTaskSpec(const TaskSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return FieldError("argv", "a command", "nothing");
  }
  if (spec.world_size < 1) {
    return FieldError("world_size", "at least 1",
                      absl::StrCat(spec.world_size));
  }
  if (spec.rank < 0 || spec.rank >= spec.world_size) {
    return FieldError("rank", absl::StrCat("0..", spec.world_size - 1),
                      absl::StrCat(spec.rank));
  }
  if (spec.local_rank < 0) {
    return FieldError("local_rank", "at least 0",
                      absl::StrCat(spec.local_rank));
  }
  if (spec.attempt < 0 || spec.restart_count < 0) {
    return FieldError(spec.attempt < 0 ? "attempt" : "restart_count",
                      "at least 0",
                      absl::StrCat(std::min(spec.attempt, spec.restart_count)));
  }
  std::set<int> seen;
  for (int gpu : spec.gpus) {
    if (gpu < 0 || !seen.insert(gpu).second) {
      return FieldError("gpus", "distinct GPU indices >= 0",
                        absl::StrCat("[", absl::StrJoin(spec.gpus, ","), "]"));
    }
  }
  if (spec.warn_signal != 0 && !IsWarnSignal(spec.warn_signal)) {
    return FieldError("warn_signal", "USR1, USR2, TERM, INT, HUP, QUIT or ALRM",
                      absl::StrCat(spec.warn_signal));
  }
  if (spec.master_port < 0 || spec.master_port > 65535) {
    return FieldError("master_port", "a port 0..65535",
                      absl::StrCat(spec.master_port));
  }
  if (spec.log_path.empty()) {
    return FieldError("log_path", "a file path", "nothing");
  }
  if (spec.processes < 1 ||
      spec.processes > static_cast<int>(kMaxTaskProcesses)) {
    return FieldError("processes", absl::StrCat("1..", kMaxTaskProcesses),
                      absl::StrCat(spec.processes));
  }
  if (spec.first_process < 0 ||
      spec.first_process + spec.processes > spec.total_processes) {
    return FieldError("first_process",
                      absl::StrCat("0..", spec.total_processes - spec.processes,
                                   " (processes ", spec.processes, " of total ",
                                   spec.total_processes, ")"),
                      absl::StrCat(spec.first_process));
  }
  if (!spec.worker_addrs.empty() &&
      spec.worker_addrs.size() != static_cast<size_t>(spec.total_processes)) {
    return FieldError(
        "worker_addrs",
        absl::StrCat("one address per process (", spec.total_processes, ")"),
        absl::StrCat(spec.worker_addrs.size(), " addresses"));
  }
  for (const auto& [field, path] :
       {std::pair<absl::string_view, const std::string&>{"working_dir",
                                                         spec.working_dir},
        {"output_path", spec.output_path},
        {"error_path", spec.error_path}}) {
    if (path.find('\0') != std::string::npos) {
      return FieldError(field, "a path without NUL bytes",
                        absl::StrCat("one at byte ", path.find('\0')));
    }
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return FieldError("env", "variable names without '='",
                        absl::StrCat("\"", name, "\""));
    }
  }
  return absl::OkStatus();
}

std::string TfConfigJson(const TaskSpec& spec, int process) {
  nlohmann::json workers = nlohmann::json::array();
  for (int r = 0; r < spec.total_processes; ++r) {
    workers.push_back(
        spec.worker_addrs.empty()
            ? absl::StrCat(spec.master_addr, ":", spec.master_port + 1 + r)
            : spec.worker_addrs[r]);
  }
  nlohmann::json config = {
      {"cluster", {{"worker", workers}}},
      {"task", {{"type", "worker"}, {"index", spec.first_process + process}}},
  };
  return config.dump();
}

namespace {

// A host name cut into what precedes its trailing digits and them.
struct HostParts {
  std::string prefix;
  std::string digits;  // empty: none
};

HostParts SplitHost(const std::string& name) {
  size_t cut = name.size();
  while (cut > 0 && name[cut - 1] >= '0' && name[cut - 1] <= '9') --cut;
  // At most 9 digits: a number that fits an int.
  if (name.size() - cut > 9) cut = name.size() - 9;
  return {name.substr(0, cut), name.substr(cut)};
}

}  // namespace

std::string SlurmHostlist(std::vector<std::string> names) {
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) {
              const HostParts pa = SplitHost(a), pb = SplitHost(b);
              if (pa.prefix != pb.prefix) return pa.prefix < pb.prefix;
              if (pa.digits.size() != pb.digits.size() && !pa.digits.empty() &&
                  !pb.digits.empty() && pa.digits[0] != '0' &&
                  pb.digits[0] != '0') {
                return pa.digits.size() < pb.digits.size();
              }
              return pa.digits < pb.digits;
            });
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::vector<std::string> groups;
  for (size_t i = 0; i < names.size();) {
    const HostParts first = SplitHost(names[i]);
    // Names of one group: the same prefix, digits of the same width when
    // zero-padded (node01), any width otherwise (node9, node10).
    auto same_group = [&](const HostParts& p) {
      if (p.prefix != first.prefix || p.digits.empty() ||
          first.digits.empty()) {
        return false;
      }
      const bool padded = first.digits.size() > 1 && first.digits[0] == '0';
      const bool other_padded = p.digits.size() > 1 && p.digits[0] == '0';
      if (padded || other_padded) return p.digits.size() == first.digits.size();
      return true;
    };
    size_t j = i + 1;
    while (j < names.size() && same_group(SplitHost(names[j]))) ++j;
    if (j == i + 1) {
      groups.push_back(names[i]);
      i = j;
      continue;
    }
    std::vector<std::string> ranges;
    for (size_t k = i; k < j;) {
      const std::string lo = SplitHost(names[k]).digits;
      long long prev = std::stoll(lo);
      size_t m = k + 1;
      while (m < j && std::stoll(SplitHost(names[m]).digits) == prev + 1) {
        ++prev;
        ++m;
      }
      ranges.push_back(
          m == k + 1 ? lo
                     : absl::StrCat(lo, "-", SplitHost(names[m - 1]).digits));
      k = m;
    }
    groups.push_back(
        absl::StrCat(first.prefix, "[", absl::StrJoin(ranges, ","), "]"));
    i = j;
  }
  return absl::StrJoin(groups, ",");
}

std::vector<std::string> BuildTaskEnvironment(const TaskSpec& spec,
                                              const TaskAccount& account,
                                              int process) {
  std::map<std::string, std::string> env;
  env["PATH"] = std::string(kDefaultTaskPath);
  env["TMPDIR"] = "/tmp";
  if (!account.name.empty()) {
    env["USER"] = account.name;
    env["LOGNAME"] = account.name;
  }
  if (!account.home.empty()) env["HOME"] = account.home;
  if (!account.shell.empty()) env["SHELL"] = account.shell;
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  for (const auto& [name, value] : spec.env) env[name] = value;
  const std::string gpus = absl::StrJoin(spec.gpus, ",");
  const std::string rank = absl::StrCat(spec.first_process + process);
  const std::string local_rank = absl::StrCat(spec.local_rank + process);
  const std::string world_size = absl::StrCat(spec.total_processes);
  const std::string job_id = absl::StrCat(spec.job_id);
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["MASTER_ADDR"] = spec.master_addr;
  env["MASTER_PORT"] = absl::StrCat(spec.master_port);
  // torchrun's names.
  env["WORLD_SIZE"] = world_size;
  env["RANK"] = rank;
  env["LOCAL_RANK"] = local_rank;
  env["LOCAL_WORLD_SIZE"] = absl::StrCat(spec.processes);
  env["GROUP_RANK"] = absl::StrCat(spec.rank);
  env["GROUP_WORLD_SIZE"] = absl::StrCat(spec.world_size);
  env["ROLE_RANK"] = rank;
  env["ROLE_WORLD_SIZE"] = world_size;
  env["TF_CONFIG"] = TfConfigJson(spec, process);
  // Slurm's, so that scripts written for srun run unchanged.
  env["SLURM_JOB_ID"] = job_id;
  env["SLURM_JOBID"] = job_id;
  env["SLURM_PROCID"] = rank;
  env["SLURM_LOCALID"] = local_rank;
  env["SLURM_NTASKS"] = world_size;
  env["SLURM_NPROCS"] = world_size;
  env["SLURM_NTASKS_PER_NODE"] = absl::StrCat(spec.processes);
  env["SLURM_NODEID"] = absl::StrCat(spec.rank);
  env["SLURM_NNODES"] = absl::StrCat(spec.world_size);
  env["SLURM_JOB_NUM_NODES"] = absl::StrCat(spec.world_size);
  if (!spec.node_names.empty()) {
    const std::string hosts = SlurmHostlist(spec.node_names);
    env["SLURM_JOB_NODELIST"] = hosts;
    env["SLURM_NODELIST"] = hosts;
  }
  if (!spec.node_name.empty()) env["SLURMD_NODENAME"] = spec.node_name;
  env["SLURM_GPUS_ON_NODE"] = absl::StrCat(spec.gpus.size());
  env["SLURM_JOB_GPUS"] = gpus;
  env["SLURM_STEP_GPUS"] = gpus;
  env["SLURM_RESTART_COUNT"] = absl::StrCat(spec.restart_count);
  if (!spec.working_dir.empty()) {
    env["SLURM_SUBMIT_DIR"] = spec.working_dir;
    // Where the task starts: what a shell's $PWD would say.
    env["PWD"] = spec.working_dir;
  }
  if (!account.name.empty()) env["SLURM_JOB_USER"] = account.name;
  env["TIRESIAS_JOB_ID"] = job_id;
  env["TIRESIAS_ATTEMPT"] = absl::StrCat(spec.attempt);
  if (!spec.node_name.empty()) env["TIRESIAS_NODE_NAME"] = spec.node_name;
  env["TIRESIAS_CHECKPOINT_DIR"] = spec.checkpoint_dir;
  env["TIRESIAS_RESTART_COUNT"] = absl::StrCat(spec.restart_count);
  if (spec.array_job_id > 0) {
    for (const char* prefix : {"TIRESIAS_ARRAY_", "SLURM_ARRAY_"}) {
      env[absl::StrCat(prefix, "JOB_ID")] = absl::StrCat(spec.array_job_id);
      env[absl::StrCat(prefix, "TASK_ID")] = absl::StrCat(spec.array_task_id);
      env[absl::StrCat(prefix, "TASK_COUNT")] =
          absl::StrCat(spec.array_task_count);
      env[absl::StrCat(prefix, "TASK_MIN")] = absl::StrCat(spec.array_task_min);
      env[absl::StrCat(prefix, "TASK_MAX")] = absl::StrCat(spec.array_task_max);
    }
  }
  std::vector<std::string> entries;
  entries.reserve(env.size());
  for (const auto& [name, value] : env) {
    entries.push_back(absl::StrCat(name, "=", value));
  }
  return entries;
}

std::string_view FindEnv(const std::vector<std::string>& env,
                         std::string_view name) {
  for (const std::string& entry : env) {
    std::string_view e = entry;
    if (e.size() > name.size() && e[name.size()] == '=' &&
        e.substr(0, name.size()) == name) {
      return e.substr(name.size() + 1);
    }
  }
  return {};
}

absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           std::string_view path_var,
                                           const std::string& working_dir) {
  if (command.find('/') != std::string::npos) return command;
  absl::string_view path(path_var.data(), path_var.size());
  if (path.empty()) path = ToAbsl(kDefaultTaskPath);
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string base = dir.empty() ? "." : std::string(dir);
    if (base[0] != '/' && !working_dir.empty()) {
      base = absl::StrCat(working_dir, "/", base);
    }
    std::string candidate = absl::StrCat(base, "/", command);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat("command '", command, "' not found in PATH (", path, ")"));
}

}  // namespace tiresias
