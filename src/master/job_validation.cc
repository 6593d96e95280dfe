#include "master/job_validation.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/image_ref.h"
#include "core/node_filter.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "core/utf8.h"
#include "master/output_pattern.h"

namespace tiresias {
namespace {

namespace limits = job_limits;

absl::Status Refuse(std::string_view field, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(field), ": ", ToAbsl(message)));
}

// No NUL byte and well-formed UTF-8: what every string of a spec must be
// (the agent passes them to execve and setenv; listings print them).
absl::Status CheckText(std::string_view field, std::string_view text) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Refuse(field,
                  absl::StrCat("expected no NUL byte, got one at byte ", nul));
  }
  if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    return Refuse(field,
                  absl::StrCat("expected valid UTF-8, got byte 0x",
                               absl::Hex(static_cast<unsigned char>(text[bad]),
                                         absl::kZeroPad2),
                               " at byte ", bad));
  }
  return absl::OkStatus();
}

absl::Status CheckField(std::string_view field, std::string_view text,
                        size_t max_bytes) {
  if (text.size() > max_bytes) {
    return Refuse(field, absl::StrCat("expected at most ", max_bytes,
                                      " bytes, got ", text.size()));
  }
  return CheckText(field, text);
}

bool IsEnvName(std::string_view name) {
  if (name.empty()) return false;
  auto letter = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  if (!letter(name[0])) return false;
  for (char c : name) {
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

absl::Status CheckCommand(const std::vector<std::string>& command) {
  if (command.empty() || command[0].empty()) {
    return Refuse("spec.command", "must not be empty (argv[0] first)");
  }
  if (command.size() > limits::kMaxCommandArgs) {
    return Refuse("spec.command",
                  absl::StrCat("expected at most ", limits::kMaxCommandArgs,
                               " arguments, got ", command.size()));
  }
  size_t total = 0;
  for (const std::string& arg : command) total += arg.size();
  if (total > limits::kMaxCommandBytes) {
    return Refuse("spec.command",
                  absl::StrCat("expected at most ", limits::kMaxCommandBytes,
                               " bytes in total, got ", total));
  }
  for (size_t i = 0; i < command.size(); ++i) {
    absl::Status status =
        CheckText(absl::StrCat("spec.command[", i, "]"), command[i]);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Where (a URL or mailto:) and when the master notifies of the job: the
// form only; whether the master may send there is its own check.
absl::Status CheckNotify(const JobRequest& spec) {
  if (spec.notify.empty()) {
    if (!spec.notify_on.empty()) {
      return Refuse("spec.notify_on",
                    "events to notify of, but no "
                    "spec.notify (--notify URL|mailto:)");
    }
    return absl::OkStatus();
  }
  if (spec.notify.size() > limits::kMaxNotifyBytes) {
    return Refuse("spec.notify",
                  absl::StrCat("expected at most ", limits::kMaxNotifyBytes,
                               " bytes, got ", spec.notify.size()));
  }
  for (char c : spec.notify) {
    if (c <= ' ' || c > '~') {
      return Refuse("spec.notify",
                    absl::StrCat(QuoteForError(spec.notify),
                                 ": expected printable ASCII without "
                                 "spaces"));
    }
  }
  const std::string_view n = spec.notify;
  const bool web = n.substr(0, 7) == "http://" || n.substr(0, 8) == "https://";
  const bool mail = n.substr(0, 7) == "mailto:" &&
                    n.find('@') != std::string_view::npos &&
                    n.find_first_of(",;<>()\\\"") == std::string_view::npos;
  const size_t host_at = n.find("://");
  if ((!web && !mail) ||
      (web && (host_at + 3 >= n.size() || n[host_at + 3] == '/'))) {
    return Refuse("spec.notify",
                  absl::StrCat(QuoteForError(spec.notify),
                               ": expected an http:// or https:// URL, or "
                               "mailto:ONE@ADDRESS"));
  }
  if (web) {
    // host[:port], no user:password@ (the master's client would take it
    // for the host), a port of 1 to 65535.
    const std::string_view authority = n.substr(
        host_at + 3, n.find_first_of("/?#", host_at + 3) - (host_at + 3));
    const size_t close = authority.rfind(']');
    const size_t colon = authority.rfind(':');
    std::string_view port;
    if (colon != std::string_view::npos &&
        (close == std::string_view::npos || colon > close)) {
      port = authority.substr(colon + 1);
    }
    int port_number = 0;
    bool port_ok = !port.empty() && port.size() <= 5;
    for (char c : port) {
      port_ok &= c >= '0' && c <= '9';
      port_number = port_number * 10 + (c - '0');
    }
    if (authority.find('@') != std::string_view::npos ||
        (colon != std::string_view::npos &&
         (close == std::string_view::npos || colon > close) &&
         (!port_ok || port_number < 1 || port_number > 65535))) {
      return Refuse("spec.notify",
                    absl::StrCat(QuoteForError(spec.notify),
                                 ": expected http(s)://HOST[:PORT]/..., no "
                                 "user@ and a port of 1 to 65535"));
    }
  }
  if (spec.notify_on.size() > 8) {
    return Refuse("spec.notify_on", "expected at most 8 events");
  }
  for (const std::string& on : spec.notify_on) {
    if (on != "begin" && on != "end" && on != "fail" && on != "requeue" &&
        on != "time_limit") {
      return Refuse("spec.notify_on",
                    absl::StrCat(QuoteForError(on),
                                 ": expected begin, end, fail, requeue or "
                                 "time_limit"));
    }
  }
  return absl::OkStatus();
}

// Set by the agent for every task after the job's own variables
// (agent/task_env.cc), so a job's value would be silently replaced.
constexpr std::string_view kSetPerTask[] = {"CUDA_VISIBLE_DEVICES",
                                            "MASTER_ADDR",
                                            "MASTER_PORT",
                                            "WORLD_SIZE",
                                            "RANK",
                                            "LOCAL_RANK",
                                            "LOCAL_WORLD_SIZE",
                                            "GROUP_RANK",
                                            "GROUP_WORLD_SIZE",
                                            "ROLE_RANK",
                                            "ROLE_WORLD_SIZE",
                                            "TF_CONFIG",
                                            "PWD"};

absl::Status CheckEnv(const std::map<std::string, std::string>& env) {
  if (env.size() > limits::kMaxEnvEntries) {
    return Refuse("spec.env",
                  absl::StrCat("expected at most ", limits::kMaxEnvEntries,
                               " variables, got ", env.size()));
  }
  size_t total = 0;
  for (const auto& [key, value] : env) {
    const std::string key_field =
        absl::StrCat("spec.env key ", QuoteForError(key));
    if (key.size() > limits::kMaxEnvKeyBytes) {
      return Refuse(key_field, absl::StrCat("expected a name of at most ",
                                            limits::kMaxEnvKeyBytes,
                                            " bytes, got ", key.size()));
    }
    if (!IsEnvName(key)) {
      return Refuse(key_field,
                    "expected a variable name matching [A-Za-z_][A-Za-z0-9_]*");
    }
    if (const std::string why = EnvSetPerTask(key); !why.empty()) {
      return Refuse(key_field, why);
    }
    const std::string value_field = absl::StrCat("spec.env[\"", key, "\"]");
    if (value.size() > limits::kMaxEnvValueBytes) {
      return Refuse(value_field, absl::StrCat("expected a value of at most ",
                                              limits::kMaxEnvValueBytes,
                                              " bytes, got ", value.size()));
    }
    absl::Status status = CheckText(value_field, value);
    if (!status.ok()) return status;
    total += key.size() + value.size();
  }
  if (total > limits::kMaxEnvBytes) {
    return Refuse(
        "spec.env",
        absl::StrCat("expected at most ", limits::kMaxEnvBytes,
                     " bytes of names and values in total, got ", total));
  }
  return absl::OkStatus();
}

// The working directory (empty, or absolute: a relative one would be
// relative to wherever the agent runs) and the output patterns.
absl::Status CheckFiles(const JobRequest& spec) {
  RETURN_IF_ERROR(
      CheckField("spec.workdir", spec.workdir, limits::kMaxWorkdirBytes));
  if (!spec.workdir.empty() && spec.workdir[0] != '/') {
    return Refuse("spec.workdir",
                  absl::StrCat("expected an absolute path, got ",
                               QuoteForError(spec.workdir)));
  }
  for (const auto& [field, pattern] :
       {std::pair<std::string_view, const std::string&>{"spec.output",
                                                        spec.output},
        {"spec.error", spec.error}}) {
    RETURN_IF_ERROR(CheckField(field, pattern, limits::kMaxOutputPathBytes));
    RETURN_IF_ERROR(ValidateOutputPattern(field, pattern));
  }
  return absl::OkStatus();
}

// An interactive job's mode and grace (JobSpec.io, io_grace_seconds).
absl::Status CheckIo(const JobRequest& spec) {
  if (spec.io < kIoNone || spec.io > kIoPty) {
    return Refuse("spec.io", absl::StrCat("expected 0 (none), 1 (pipes) or "
                                          "2 (a pty), got ",
                                          spec.io));
  }
  if (!std::isfinite(spec.io_grace_seconds) || spec.io_grace_seconds < 0 ||
      spec.io_grace_seconds > limits::kMaxIoGraceSeconds) {
    return Refuse("spec.io_grace_seconds",
                  absl::StrCat("expected 0 (the default, ",
                               limits::kDefaultIoGraceSeconds, ") to ",
                               limits::kMaxIoGraceSeconds, " seconds, got ",
                               spec.io_grace_seconds));
  }
  if (spec.io == kIoNone && spec.io_grace_seconds != 0) {
    return Refuse("spec.io_grace_seconds",
                  "a grace for a job nobody attaches to: it needs io "
                  "(`tiresias run`)");
  }
  if (spec.io != kIoNone && (!spec.output.empty() || !spec.error.empty())) {
    return Refuse("spec.output",
                  "an interactive job's output goes to whoever attaches "
                  "and to its log (`tiresias logs`), not to --output or "
                  "--error files");
  }
  if (spec.io != kIoNone && !spec.array.empty()) {
    return Refuse("spec.io", "a job array cannot be interactive");
  }
  return absl::OkStatus();
}

}  // namespace

std::string QuoteForError(std::string_view text) {
  constexpr size_t kShown = 64;
  const bool cut = text.size() > kShown;
  return absl::StrCat("\"", absl::CHexEscape(ToAbsl(text.substr(0, kShown))),
                      cut ? "...\"" : "\"");
}

namespace {

// The form of each dependency; whether the jobs exist is the master's
// question (MasterState::CheckDependencyTargets).
absl::Status CheckDependencyFields(const std::vector<JobDependency>& deps) {
  if (deps.size() > limits::kMaxDependencies) {
    return Refuse("spec.dependencies",
                  absl::StrCat("expected at most ", limits::kMaxDependencies,
                               ", got ", deps.size()));
  }
  for (size_t i = 0; i < deps.size(); ++i) {
    if (!IsDependencyKind(static_cast<int>(deps[i].kind))) {
      return Refuse(absl::StrCat("spec.dependencies[", i, "].kind"),
                    absl::StrCat("expected AFTER_OK, AFTER_ANY or "
                                 "AFTER_NOT_OK, got ",
                                 static_cast<int>(deps[i].kind)));
    }
    if (deps[i].job_id <= 0) {
      return Refuse(absl::StrCat("spec.dependencies[", i, "].job_id"),
                    absl::StrCat("expected a job id (> 0), got ",
                                 deps[i].job_id));
    }
  }
  return absl::OkStatus();
}

// The job's shape: nodes and gpus_per_node both set (their product the
// GPU count) or both 0; a process count per node within its limit.
absl::Status CheckShape(const JobRequest& spec) {
  if (spec.nodes < 0 || spec.nodes > limits::kMaxNodes) {
    return Refuse("spec.nodes",
                  absl::StrCat("expected 0 (any) to ", limits::kMaxNodes,
                               ", got ", spec.nodes));
  }
  if (spec.gpus_per_node < 0 || spec.gpus_per_node > limits::kMaxGpusPerNode) {
    return Refuse("spec.gpus_per_node",
                  absl::StrCat("expected 0 (any) to ", limits::kMaxGpusPerNode,
                               ", got ", spec.gpus_per_node));
  }
  if ((spec.nodes == 0) != (spec.gpus_per_node == 0)) {
    return Refuse(spec.nodes == 0 ? "spec.nodes" : "spec.gpus_per_node",
                  absl::StrCat("expected nodes and gpus_per_node both set or "
                               "both 0, got ",
                               spec.nodes, " and ", spec.gpus_per_node));
  }
  if (spec.nodes > 0 &&
      static_cast<int64_t>(spec.nodes) * spec.gpus_per_node != spec.num_gpus) {
    return Refuse("spec.gpus", absl::StrCat("expected nodes x gpus_per_node = ",
                                            static_cast<int64_t>(spec.nodes) *
                                                spec.gpus_per_node,
                                            " GPUs, got ", spec.num_gpus));
  }
  if (spec.tasks_per_node < 0 ||
      spec.tasks_per_node > limits::kMaxTasksPerNode) {
    return Refuse(
        "spec.tasks_per_node",
        absl::StrCat("expected 0 (one per GPU) to ", limits::kMaxTasksPerNode,
                     ", got ", spec.tasks_per_node));
  }
  return absl::OkStatus();
}

// Node names of --nodelist or --exclude: 1 to 253 bytes of text each.
absl::Status CheckNodeNames(std::string_view field,
                            const std::vector<std::string>& names) {
  if (names.size() > kMaxFilterNodes) {
    return Refuse(field, absl::StrCat("expected at most ", kMaxFilterNodes,
                                      " node names, got ", names.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string item = absl::StrCat(ToAbsl(field), "[", i, "]");
    if (names[i].empty() || names[i].size() > limits::kMaxNodeNameBytes) {
      return Refuse(item, absl::StrCat("expected a node name of 1 to ",
                                       limits::kMaxNodeNameBytes,
                                       " bytes, got ", names[i].size()));
    }
    RETURN_IF_ERROR(CheckText(item, names[i]));
  }
  return absl::OkStatus();
}

// Which nodes may run it (core/node_filter.h).
absl::Status CheckNodeFilter(const JobRequest& spec) {
  RETURN_IF_ERROR(CheckField("spec.gpu_type", spec.gpu_type, kMaxGpuTypeBytes));
  if (absl::StatusOr<Constraint> c = ParseConstraint(spec.constraint);
      !c.ok()) {
    return Refuse("spec.constraint", std::string(c.status().message()));
  }
  RETURN_IF_ERROR(CheckNodeNames("spec.nodelist", spec.nodelist));
  RETURN_IF_ERROR(CheckNodeNames("spec.exclude", spec.exclude));
  if (spec.cpus_per_gpu < 0 || spec.cpus_per_gpu > limits::kMaxCpusPerGpu) {
    return Refuse(
        "spec.cpus_per_gpu",
        absl::StrCat("expected 0 (the node's default) to ",
                     limits::kMaxCpusPerGpu, ", got ", spec.cpus_per_gpu));
  }
  if (spec.mem_per_gpu_mib < 0 ||
      spec.mem_per_gpu_mib > limits::kMaxMemPerGpuMib) {
    return Refuse("spec.mem_per_gpu_mib",
                  absl::StrCat("expected 0 (the node's default) to ",
                               limits::kMaxMemPerGpuMib, " MiB, got ",
                               spec.mem_per_gpu_mib));
  }
  return absl::OkStatus();
}

}  // namespace

// A CPU-only job (gpus 0): 1 to kMaxCpusPerGpu CPUs on one node, none of
// the GPU forms; a GPU job: neither of the CPU-only fields.
absl::Status CheckCpuOnly(const JobRequest& spec) {
  if (!spec.cpu_only()) {
    if (spec.cpus != 0 || spec.mem_mib != 0) {
      return Refuse(spec.cpus != 0 ? "spec.cpus" : "spec.mem_mib",
                    "is for a CPU-only job (gpus 0); a job with GPUs asks "
                    "with cpus_per_gpu and mem_per_gpu_mib");
    }
    return absl::OkStatus();
  }
  if (spec.cpus < 1 || spec.cpus > limits::kMaxCpusPerGpu) {
    return Refuse(
        "spec.cpus",
        absl::StrCat("a job without GPUs (gpus 0) needs 1 to ",
                     limits::kMaxCpusPerGpu, " CPUs, got ", spec.cpus));
  }
  if (spec.mem_mib < 0 || spec.mem_mib > limits::kMaxMemPerGpuMib) {
    return Refuse(
        "spec.mem_mib",
        absl::StrCat("expected 0 (a per-CPU share) to ",
                     limits::kMaxMemPerGpuMib, " MiB, got ", spec.mem_mib));
  }
  const char* gpu_field = spec.nodes != 0             ? "spec.nodes"
                          : spec.gpus_per_node != 0   ? "spec.gpus_per_node"
                          : !spec.gpu_type.empty()    ? "spec.gpu_type"
                          : spec.cpus_per_gpu != 0    ? "spec.cpus_per_gpu"
                          : spec.mem_per_gpu_mib != 0 ? "spec.mem_per_gpu_mib"
                          : spec.exclusive            ? "spec.exclusive"
                                                      : nullptr;
  if (gpu_field != nullptr) {
    return Refuse(gpu_field,
                  "is for jobs with GPUs; a CPU-only job (gpus 0) runs on "
                  "one node's spare CPUs (cpus, mem_mib)");
  }
  return absl::OkStatus();
}

absl::Status ValidateJobRequest(const JobRequest& spec) {
  if (spec.num_gpus < 0) {
    return Refuse("spec.gpus",
                  absl::StrCat("expected at least 1 GPU (0 with cpus: a "
                               "CPU-only job), got ",
                               spec.num_gpus));
  }
  absl::Status status = CheckCpuOnly(spec);
  if (status.ok()) status = CheckShape(spec);
  if (status.ok()) status = CheckCommand(spec.command);
  if (status.ok()) {
    status = CheckField("spec.name", spec.name, limits::kMaxNameBytes);
  }
  if (status.ok()) {
    status = CheckField("spec.user", spec.user, limits::kMaxUserBytes);
  }
  if (status.ok()) {
    status = CheckField("spec.model", spec.model, limits::kMaxModelBytes);
  }
  if (status.ok()) {
    status = CheckField("spec.vc", spec.vc, limits::kMaxVcBytes);
  }
  if (status.ok()) {
    status = CheckField("spec.qos", spec.qos, limits::kMaxVcBytes);
  }
  if (status.ok()) {
    status = CheckField("spec.checkpoint_dir", spec.checkpoint_dir,
                        limits::kMaxCheckpointDirBytes);
  }
  if (status.ok()) status = CheckEnv(spec.env);
  if (status.ok()) status = CheckFiles(spec);
  if (status.ok() && (!std::isfinite(spec.time_limit.count()) ||
                      spec.time_limit.count() < 0)) {
    status = Refuse("spec.time_limit_seconds",
                    absl::StrCat("expected a finite number of seconds >= 0 "
                                 "(0: no limit), got ",
                                 spec.time_limit.count()));
  }
  if (status.ok() && spec.warn.signal != 0) {
    if (!IsWarnSignal(spec.warn.signal)) {
      status = Refuse("spec.signal",
                      absl::StrCat("expected USR1, USR2, TERM, INT, HUP, "
                                   "QUIT or ALRM (their numbers), got ",
                                   spec.warn.signal));
    } else if (spec.warn.seconds < 1 || spec.warn.seconds > kMaxWarnSeconds) {
      status = Refuse("spec.signal_seconds",
                      absl::StrCat("expected 1 to ", kMaxWarnSeconds, ", got ",
                                   spec.warn.seconds));
    } else if (spec.time_limit <= Seconds{0}) {
      status = Refuse("spec.signal",
                      "a signal before the time limit needs a time limit "
                      "(--time)");
    }
  }
  if (status.ok() &&
      (!std::isfinite(spec.begin.count()) || spec.begin.count() < 0 ||
       spec.begin.count() > limits::kMaxBeginTime)) {
    status = Refuse(
        "spec.begin_time",
        absl::StrCat("expected Unix seconds from 0 to ", limits::kMaxBeginTime,
                     ", got ", spec.begin.count()));
  }
  if (status.ok()) status = CheckIo(spec);
  if (status.ok() && !spec.image.empty()) {
    if (std::string bad = ImageRefError(spec.image); !bad.empty()) {
      status = Refuse("spec.image", bad);
    }
  }
  if (status.ok()) status = CheckNotify(spec);
  if (status.ok()) status = CheckDependencyFields(spec.dependencies);
  if (status.ok()) status = CheckNodeFilter(spec);
  if (status.ok() && (!spec.array.empty() || spec.array.max_running != 0)) {
    if (spec.array.empty()) {
      status = Refuse("spec.array.indices",
                      absl::StrCat("no indices, but a running limit of ",
                                   spec.array.max_running,
                                   "; give the indices (e.g. 0-99)"));
    } else if (absl::Status bad = CheckText("spec.array.indices",
                                            spec.array.indices);
               !bad.ok()) {
      status = bad;
    } else if (absl::Status array = CheckJobArray(spec.array); !array.ok()) {
      status = Refuse("spec.array", std::string(array.message()));
    }
  }
  return status;
}

absl::Status ValidateNotify(const JobRequest& spec) {
  return CheckNotify(spec);
}

std::string EnvSetPerTask(std::string_view name) {
  if (name.substr(0, 9) == "TIRESIAS_") {
    return "TIRESIAS_* is set by the agent for every task (and holds the "
           "client's settings); a job cannot set it";
  }
  for (std::string_view set : kSetPerTask) {
    if (name == set) {
      return absl::StrCat(
          std::string(name),
          " is set by the agent for every task (its GPUs, ranks, "
          "rendezvous and folder); a job cannot set it");
    }
  }
  return "";
}

absl::Status ValidateRequestId(std::string_view request_id) {
  if (request_id.size() > limits::kMaxRequestIdBytes) {
    return Refuse("request_id",
                  absl::StrCat("expected at most ", limits::kMaxRequestIdBytes,
                               " bytes, got ", request_id.size()));
  }
  for (size_t i = 0; i < request_id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(request_id[i]);
    if (c < 0x20 || c > 0x7E) {
      return Refuse(
          "request_id",
          absl::StrCat("expected printable ASCII, got byte 0x",
                       absl::Hex(c, absl::kZeroPad2), " at byte ", i));
    }
  }
  return absl::OkStatus();
}

}  // namespace tiresias
