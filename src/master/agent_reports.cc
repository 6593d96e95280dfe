#include "master/agent_reports.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/node_filter.h"

namespace tiresias {
namespace {

absl::Status Bad(absl::string_view field, absl::string_view expected,
                 absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": expected ", expected, ", got ", got));
}

std::string Quote(absl::string_view text) {
  // Shown escaped: the value may hold anything.
  std::string out = "\"";
  for (unsigned char c : text.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  if (text.size() > 64) out += "...";
  return out + "\"";
}

absl::Status CheckText(absl::string_view field, absl::string_view text,
                       size_t max_bytes, bool required) {
  if (required && text.empty()) return Bad(field, "a non-empty value", "\"\"");
  if (text.size() > max_bytes) {
    return Bad(field, absl::StrCat("at most ", max_bytes, " bytes"),
               absl::StrCat(text.size(), " bytes"));
  }
  if (!IsPrintableUtf8(std::string_view(text.data(), text.size()))) {
    return Bad(field, "printable UTF-8 text", Quote(text));
  }
  return absl::OkStatus();
}

std::string Number(double v) { return absl::StrFormat("%g", v); }

}  // namespace

bool IsPrintableUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    int extra;
    uint32_t code;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // cut short
    for (int k = 1; k <= extra; ++k) {
      const unsigned char cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      code = (code << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMin[extra] || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff) || (code >= 0x80 && code < 0xa0)) {
      return false;  // overlong, out of range, a surrogate, or C1 control
    }
    i += extra + 1;
  }
  return true;
}

absl::Status ValidateRegisterRequest(const v1::RegisterRequest& req,
                                     int max_gpus) {
  if (absl::Status s = CheckText("name", req.name(), kMaxNodeNameBytes, true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckText("address", req.address(), kMaxAddressBytes, false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckText("log_address", req.log_address(),
                                 kMaxAddressBytes, false);
      !s.ok()) {
    return s;
  }
  if (req.gpus() < 0 || req.gpus() > max_gpus ||
      (req.gpus() == 0 && req.spare_cpus() < 1)) {
    return Bad("gpus",
               absl::StrCat("1 to ", max_gpus,
                            " (the master's --max-gpus-per-node), or 0 with "
                            "spare_cpus (a node for CPU-only jobs)"),
               absl::StrCat(req.gpus()));
  }
  const size_t token = req.agent_token().size();
  if (token < kMinAgentTokenBytes || token > kMaxAgentTokenBytes) {
    return Bad("agent_token",
               absl::StrCat(kMinAgentTokenBytes, " to ", kMaxAgentTokenBytes,
                            " bytes"),
               absl::StrCat(token, " bytes"));
  }
  if (!std::isfinite(req.grace_seconds()) || req.grace_seconds() < 0) {
    return Bad("grace_seconds", "a finite number of seconds >= 0",
               Number(req.grace_seconds()));
  }
  if (req.tasks_size() > kMaxReportedTasks) {
    return Bad("tasks", absl::StrCat("at most ", kMaxReportedTasks),
               absl::StrCat(req.tasks_size()));
  }
  if (req.cpus() < 0 || req.cpus() > kMaxNodeCpus) {
    return Bad("cpus", absl::StrCat("0 to ", kMaxNodeCpus),
               absl::StrCat(req.cpus()));
  }
  if (req.memory_mib() < 0 || req.memory_mib() > kMaxNodeMemoryMib) {
    return Bad("memory_mib", absl::StrCat("0 to ", kMaxNodeMemoryMib, " MiB"),
               absl::StrCat(req.memory_mib()));
  }
  if (req.spare_cpus() < 0 || req.spare_cpus() > kMaxNodeCpus) {
    return Bad("spare_cpus", absl::StrCat("0 to ", kMaxNodeCpus),
               absl::StrCat(req.spare_cpus()));
  }
  if (req.spare_memory_mib() < 0 ||
      req.spare_memory_mib() > kMaxNodeMemoryMib) {
    return Bad("spare_memory_mib",
               absl::StrCat("0 to ", kMaxNodeMemoryMib, " MiB"),
               absl::StrCat(req.spare_memory_mib()));
  }
  if (absl::Status s =
          CheckText("gpu_model", req.gpu_model(), kMaxGpuModelBytes, false);
      !s.ok()) {
    return s;
  }
  if (static_cast<size_t>(req.features_size()) > kMaxFeatures) {
    return Bad("features", absl::StrCat("at most ", kMaxFeatures),
               absl::StrCat(req.features_size()));
  }
  std::set<std::string_view> seen;
  for (int i = 0; i < req.features_size(); ++i) {
    const std::string& f = req.features(i);
    if (!ValidFeature(f)) {
      return Bad(absl::StrCat("features[", i, "]"),
                 absl::StrCat("1 to ", kMaxFeatureBytes,
                              " bytes of letters, digits and _.:+-"),
                 Quote(f));
    }
    if (!seen.insert(f).second) {
      return Bad(absl::StrCat("features[", i, "]"), "each feature once",
                 Quote(f));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& req) {
  if (req.node_id() < 1) {
    return Bad("node_id", "a node id from Register",
               absl::StrCat(req.node_id()));
  }
  if (absl::Status s = CheckText("log_address", req.log_address(),
                                 kMaxAddressBytes, false);
      !s.ok()) {
    return s;
  }
  if (req.tasks_size() > kMaxReportedTasks) {
    return Bad("tasks", absl::StrCat("at most ", kMaxReportedTasks),
               absl::StrCat(req.tasks_size()));
  }
  return absl::OkStatus();
}

std::string TaskReportError(const v1::TaskStatus& task, int index, int gpus,
                            Seconds now) {
  const std::string at = absl::StrCat("tasks[", index, "]");
  if (task.task().job_id() < 1) {
    return absl::StrCat(at, ".task.job_id: expected a job id >= 1, got ",
                        task.task().job_id());
  }
  if (task.task().attempt() < 1) {
    return absl::StrCat(at, ".task.attempt: expected >= 1, got ",
                        task.task().attempt());
  }
  if (task.task().rank() < 0) {
    return absl::StrCat(at, ".task.rank: expected >= 0, got ",
                        task.task().rank());
  }
  if (!v1::TaskState_IsValid(task.state()) ||
      task.state() == v1::TASK_STATE_UNSPECIFIED) {
    return absl::StrCat(at, ".state: expected a task state, got ",
                        static_cast<int>(task.state()));
  }
  std::set<int> seen;
  for (int i = 0; i < task.gpu_indexes_size(); ++i) {
    const int gpu = task.gpu_indexes(i);
    if (gpu < 0 || gpu >= gpus || !seen.insert(gpu).second) {
      return absl::StrCat(at, ".gpu_indexes[", i, "]: expected a distinct GPU "
                          "index of this node, 0..", gpus - 1, ", got ", gpu);
    }
  }
  const double latest = (now + kMaxClockSkew).count();
  auto check_time = [&](const char* field, bool has,
                        double value) -> std::string {
    if (!has) return "";
    if (!std::isfinite(value) || value <= 0) {
      return absl::StrCat(at, ".", field,
                          ": expected a finite Unix time > 0, got ",
                          Number(value));
    }
    if (value > latest) {
      return absl::StrCat(at, ".", field, ": ", Number(value),
                          " is more than a day ahead of the master's clock (",
                          Number(now.count()), ")");
    }
    return "";
  };
  if (std::string e =
          check_time("start_time", task.has_start_time(), task.start_time());
      !e.empty()) {
    return e;
  }
  if (std::string e =
          check_time("end_time", task.has_end_time(), task.end_time());
      !e.empty()) {
    return e;
  }
  if (task.has_start_time() && task.has_end_time() &&
      task.end_time() < task.start_time()) {
    return absl::StrCat(at, ".end_time: ", Number(task.end_time()),
                        " is before start_time ", Number(task.start_time()));
  }
  if (task.has_exit_code() && (task.exit_code() < 0 || task.exit_code() > 255 + 128)) {
    return absl::StrCat(at, ".exit_code: expected 0..383 (128 + signal for a "
                        "signal), got ", task.exit_code());
  }
  // Usage: at most a million CPUs for a century, and 2^60 bytes.
  if (task.has_cpu_seconds() &&
      (!std::isfinite(task.cpu_seconds()) || task.cpu_seconds() < 0 ||
       task.cpu_seconds() > 3.2e15)) {
    return absl::StrCat(at,
                        ".cpu_seconds: expected a finite number of "
                        "seconds >= 0, got ",
                        Number(task.cpu_seconds()));
  }
  if (task.has_memory_peak_bytes() &&
      (task.memory_peak_bytes() < 0 ||
       task.memory_peak_bytes() > (int64_t{1} << 60))) {
    return absl::StrCat(at, ".memory_peak_bytes: expected 0 to 2^60, got ",
                        task.memory_peak_bytes());
  }
  if (!v1::StopReason_IsValid(task.stop_reason())) {
    return absl::StrCat(at, ".stop_reason: expected a stop reason, got ",
                        static_cast<int>(task.stop_reason()));
  }
  return "";
}

}  // namespace tiresias
