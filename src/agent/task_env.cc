#include "agent/task_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"
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
  if (spec.master_port < 0 || spec.master_port > 65535) {
    return FieldError("master_port", "a port 0..65535",
                      absl::StrCat(spec.master_port));
  }
  if (spec.log_path.empty()) {
    return FieldError("log_path", "a file path", "nothing");
  }
  if (!spec.worker_addrs.empty() &&
      spec.worker_addrs.size() != static_cast<size_t>(spec.world_size)) {
    return FieldError(
        "worker_addrs",
        absl::StrCat("one address per rank (", spec.world_size, ")"),
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

std::string TfConfigJson(const TaskSpec& spec) {
  nlohmann::json workers = nlohmann::json::array();
  for (int r = 0; r < spec.world_size; ++r) {
    workers.push_back(
        spec.worker_addrs.empty()
            ? absl::StrCat(spec.master_addr, ":", spec.master_port + 1 + r)
            : spec.worker_addrs[r]);
  }
  nlohmann::json config = {
      {"cluster", {{"worker", workers}}},
      {"task", {{"type", "worker"}, {"index", spec.rank}}},
  };
  return config.dump();
}

std::vector<std::string> BuildTaskEnvironment(const TaskSpec& spec,
                                              const TaskAccount& account) {
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
  env["CUDA_VISIBLE_DEVICES"] = absl::StrJoin(spec.gpus, ",");
  env["MASTER_ADDR"] = spec.master_addr;
  env["MASTER_PORT"] = absl::StrCat(spec.master_port);
  env["WORLD_SIZE"] = absl::StrCat(spec.world_size);
  env["RANK"] = absl::StrCat(spec.rank);
  env["LOCAL_RANK"] = absl::StrCat(spec.local_rank);
  env["TF_CONFIG"] = TfConfigJson(spec);
  env["TIRESIAS_JOB_ID"] = absl::StrCat(spec.job_id);
  env["TIRESIAS_ATTEMPT"] = absl::StrCat(spec.attempt);
  if (!spec.node_name.empty()) env["TIRESIAS_NODE_NAME"] = spec.node_name;
  env["TIRESIAS_CHECKPOINT_DIR"] = spec.checkpoint_dir;
  env["TIRESIAS_RESTART_COUNT"] = absl::StrCat(spec.restart_count);
  if (spec.array_job_id > 0) {
    env["TIRESIAS_ARRAY_JOB_ID"] = absl::StrCat(spec.array_job_id);
    env["TIRESIAS_ARRAY_TASK_ID"] = absl::StrCat(spec.array_task_id);
    env["TIRESIAS_ARRAY_TASK_COUNT"] = absl::StrCat(spec.array_task_count);
    env["TIRESIAS_ARRAY_TASK_MIN"] = absl::StrCat(spec.array_task_min);
    env["TIRESIAS_ARRAY_TASK_MAX"] = absl::StrCat(spec.array_task_max);
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
