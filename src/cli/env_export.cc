#include "cli/env_export.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"
#include "core/utf8.h"
#include "master/job_limits.h"
#include "master/job_validation.h"

namespace tiresias::cli {
namespace {

constexpr std::string_view kExpected =
    "expected ALL, NONE or a comma-separated list of NAME or NAME=VALUE "
    "(ALL first to add to everything)";

// Set by the agent for every task (task_env.h) before the job's own
// variables: a captured copy would be the task account's business. Those
// it sets over the job's are EnvSetPerTask's (job_validation.h).
constexpr std::string_view kSetByAgent[] = {"CUDA_DEVICE_ORDER", "USER",
                                            "LOGNAME", "HOME"};

// About the caller's machine or session.
constexpr std::string_view kCallerOnly[] = {"NVIDIA_VISIBLE_DEVICES",
                                            "HOSTNAME",
                                            "PWD",
                                            "OLDPWD",
                                            "SHLVL",
                                            "_",
                                            "DISPLAY",
                                            "XAUTHORITY",
                                            "XDG_RUNTIME_DIR",
                                            "DBUS_SESSION_BUS_ADDRESS",
                                            "TMUX",
                                            "TMUX_PANE",
                                            "TERMCAP"};
// SLURM_*: a Slurm allocation the caller runs in (the agent sets the
// job's own).
constexpr std::string_view kCallerOnlyPrefixes[] = {"SSH_", "XDG_SESSION_",
                                                    "SLURM_", "SLURMD_"};

constexpr std::string_view kClientPrefix = "TIRESIAS_";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool IsEnvName(std::string_view name) {
  auto letter = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  if (name.empty() || !letter(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

// Why `name` may never be exported; empty if it may.
std::string NeverExported(std::string_view name) {
  if (StartsWith(name, kClientPrefix)) {
    return absl::StrCat(
        ToAbsl(name),
        " is a Tiresias variable (TIRESIAS_*: the client's settings and "
        "credentials, or set by the agent for every task); it is never "
        "exported");
  }
  if (!EnvSetPerTask(name).empty() ||
      std::find(std::begin(kSetByAgent), std::end(kSetByAgent), name) !=
          std::end(kSetByAgent)) {
    return absl::StrCat(ToAbsl(name),
                        " is set by the agent on the node for every task; "
                        "it cannot be exported");
  }
  return "";
}

bool CallerOnly(std::string_view name) {
  if (std::find(std::begin(kCallerOnly), std::end(kCallerOnly), name) !=
      std::end(kCallerOnly)) {
    return true;
  }
  return std::any_of(std::begin(kCallerOnlyPrefixes),
                     std::end(kCallerOnlyPrefixes),
                     [&](std::string_view p) { return StartsWith(name, p); });
}

absl::Status Refuse(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--export ", flag, ": ", what));
}

// The sizes of what was captured, over the limits: total bytes and count.
absl::Status CheckTotals(absl::string_view flag,
                         const std::map<std::string, std::string>& env) {
  size_t total = 0;
  std::vector<std::pair<size_t, std::string>> sizes;
  for (const auto& [name, value] : env) {
    if (value.size() > job_limits::kMaxEnvValueBytes) {
      return Refuse(
          flag, absl::StrCat("the value of ", name, " is ", value.size(),
                             " bytes, over the limit of ",
                             job_limits::kMaxEnvValueBytes,
                             " for one variable; leave it out with --export "
                             "NONE or --export NAME,... naming what the job "
                             "needs"));
    }
    total += name.size() + value.size();
    sizes.emplace_back(name.size() + value.size(), name);
  }
  if (env.size() > job_limits::kMaxEnvEntries) {
    return Refuse(flag,
                  absl::StrCat(env.size(),
                               " variables to capture, over the "
                               "limit of ",
                               job_limits::kMaxEnvEntries,
                               "; pass --export NONE or --export NAME,... "
                               "naming what the job needs"));
  }
  if (total > kMaxExportedEnvBytes) {
    std::sort(sizes.rbegin(), sizes.rend());
    sizes.resize(std::min<size_t>(sizes.size(), 3));
    return Refuse(
        flag,
        absl::StrCat(
            "the variables to capture take ", total,
            " bytes (names and values), over the limit of ",
            kMaxExportedEnvBytes, " (the largest: ",
            absl::StrJoin(sizes, ", ",
                          [](std::string* out, const auto& s) {
                            absl::StrAppend(out, s.second, " ", s.first);
                          }),
            "); pass --export NONE or --export NAME,... naming what the job "
            "needs"));
  }
  return absl::OkStatus();
}

}  // namespace

bool LeftOutOfExport(std::string_view name) {
  return !NeverExported(name).empty() || CallerOnly(name);
}

absl::StatusOr<std::map<std::string, std::string>> CaptureEnvironment(
    std::string_view flag, const std::vector<std::string>& environ) {
  std::map<std::string, std::string> caller;
  for (const std::string& entry : environ) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    caller[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  const std::string shown = absl::StrCat("\"", ToAbsl(flag), "\"");
  const std::vector<std::string> items = absl::StrSplit(ToAbsl(flag), ',');
  std::map<std::string, std::string> env;
  size_t first = 0;
  if (items[0] == "NONE") {
    if (items.size() > 1) {
      return Refuse(shown,
                    "NONE takes no names; give only names (A,B) to "
                    "export just those");
    }
    return env;
  }
  if (items[0] == "ALL") {
    first = 1;
    for (const auto& [name, value] : caller) {
      if (LeftOutOfExport(name) || !IsEnvName(name) ||
          FirstInvalidUtf8(value) != std::string_view::npos) {
        continue;
      }
      env[name] = value;
    }
  }
  for (size_t i = first; i < items.size(); ++i) {
    const std::string_view item = items[i];  // lives in items
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    if (name == "ALL" || name == "NONE") {
      return Refuse(shown, absl::StrCat(ToAbsl(name), " only comes first; ",
                                        ToAbsl(kExpected)));
    }
    if (!IsEnvName(name)) {
      return Refuse(
          shown,
          absl::StrCat(item.empty() ? std::string("an empty name")
                                    : absl::StrCat("\"", ToAbsl(name), "\""),
                       " is not a variable name (", "[A-Za-z_][A-Za-z0-9_]*); ",
                       ToAbsl(kExpected)));
    }
    if (std::string why = NeverExported(name); !why.empty()) {
      return Refuse(shown, why);
    }
    if (eq != std::string_view::npos) {
      env[std::string(name)] = std::string(item.substr(eq + 1));
    } else if (auto it = caller.find(std::string(name)); it != caller.end()) {
      env[it->first] = it->second;
    }  // not set here: nothing to take (as sbatch)
  }
  if (absl::Status totals = CheckTotals(shown, env); !totals.ok()) {
    return totals;
  }
  return env;
}

}  // namespace tiresias::cli
