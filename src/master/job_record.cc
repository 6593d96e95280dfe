#include "master/job_record.h"

#include <openssl/evp.h>

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/node_filter.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

constexpr JobRecordState kAllJobStates[] = {
    JobRecordState::kPending,  JobRecordState::kRunning,
    JobRecordState::kPreempted, JobRecordState::kFinished,
    JobRecordState::kFailed,   JobRecordState::kCancelled,
    JobRecordState::kStarting, JobRecordState::kTimeout};

}  // namespace

std::string_view JobRecordStateName(JobRecordState state) {
  switch (state) {
    case JobRecordState::kPending: return "pending";
    case JobRecordState::kRunning: return "running";
    case JobRecordState::kPreempted: return "preempted";
    case JobRecordState::kFinished: return "finished";
    case JobRecordState::kFailed: return "failed";
    case JobRecordState::kCancelled: return "cancelled";
    case JobRecordState::kStarting: return "starting";
    case JobRecordState::kTimeout: return "timeout";
  }
  return "unknown";
}

absl::StatusOr<JobRecordState> ParseJobRecordState(std::string_view text) {
  for (JobRecordState state : kAllJobStates) {
    if (JobRecordStateName(state) == text) return state;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "job state: expected one of pending, starting, running, preempted, "
      "finished, failed, cancelled, timeout; got \"", std::string(text), "\""));
}

bool IsFinal(JobRecordState state) {
  return state == JobRecordState::kFinished ||
         state == JobRecordState::kFailed ||
         state == JobRecordState::kCancelled ||
         state == JobRecordState::kTimeout;
}

bool StoredAsLive(const JobRecord& rec) {
  if (IsFinal(rec.state)) return false;
  return rec.state == JobRecordState::kRunning ||
         (rec.live_attempt > 0 && rec.live_attempt == rec.attempt &&
          !rec.nodes.empty());
}

bool LegalJobMove(JobRecordState from, JobRecordState to) {
  using S = JobRecordState;
  if (IsFinal(from) || to == S::kStarting || from == S::kStarting) {
    return false;
  }
  if (IsFinal(to)) return true;
  switch (from) {
    case S::kPending:
      return to == S::kPending || to == S::kRunning || to == S::kPreempted;
    case S::kRunning:
      return to == S::kPreempted;
    case S::kPreempted:
      return to == S::kPreempted || to == S::kRunning || to == S::kPending;
    default:
      return false;
  }
}

absl::Status MoveJobState(JobRecordState& state, JobRecordState to,
                          int64_t id) {
  if (!LegalJobMove(state, to)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, ": illegal move ", std::string(JobRecordStateName(state)),
        " -> ", std::string(JobRecordStateName(to))));
  }
  state = to;
  return absl::OkStatus();
}

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kSubmitted:
      return "submitted";
    case EventKind::kStarted:
      return "started";
    case EventKind::kResumed:
      return "resumed";
    case EventKind::kAdopted:
      return "adopted";
    case EventKind::kPreempted:
      return "preempted";
    case EventKind::kPromoted:
      return "promoted";
    case EventKind::kDemoted:
      return "demoted";
    case EventKind::kProfiled:
      return "profiled";
    case EventKind::kRankFailed:
      return "rank_failed";
    case EventKind::kStartFailed:
      return "start_failed";
    case EventKind::kNodeDown:
      return "node_down";
    case EventKind::kDrain:
      return "drain";
    case EventKind::kHeld:
      return "held";
    case EventKind::kReleased:
      return "released";
    case EventKind::kRequeued:
      return "requeued";
    case EventKind::kModified:
      return "modified";
    case EventKind::kBegin:
      return "begin";
    case EventKind::kDependency:
      return "dependency";
    case EventKind::kCancelling:
      return "cancelling";
    case EventKind::kTimingOut:
      return "timing_out";
    case EventKind::kFinished:
      return "finished";
    case EventKind::kFailed:
      return "failed";
    case EventKind::kCancelled:
      return "cancelled";
    case EventKind::kTimeout:
      return "timeout";
  }
  return "?";
}

EventKind EndEventKind(JobRecordState state) {
  switch (state) {
    case JobRecordState::kFailed:
      return EventKind::kFailed;
    case JobRecordState::kCancelled:
      return EventKind::kCancelled;
    case JobRecordState::kTimeout:
      return EventKind::kTimeout;
    default:
      return EventKind::kFinished;
  }
}

std::string_view NodeStateName(NodeState state) {
  return state == NodeState::kUp ? "up" : "down";
}

absl::StatusOr<NodeState> ParseNodeState(std::string_view text) {
  if (text == "up") return NodeState::kUp;
  if (text == "down") return NodeState::kDown;
  return absl::InvalidArgumentError(absl::StrCat(
      "node state: expected up or down; got \"", std::string(text), "\""));
}

int64_t ApproxEncodedBytes(const JobRecord& job) {
  // Each string costs its bytes plus a tag and a length varint (3 bytes
  // past 16 KiB); an env entry's own framing is covered by its two strings.
  constexpr int64_t kPerString = 4;
  // Ids, state, counters, times and usage with their tags: at most about
  // 140.
  constexpr int64_t kNumbers = 144;
  int64_t bytes = kNumbers;
  auto add = [&](const std::string& s) {
    bytes += static_cast<int64_t>(s.size()) + kPerString;
  };
  add(job.spec.name);
  add(job.spec.user);
  add(job.spec.checkpoint_dir);
  add(job.spec.model);
  add(job.spec.workdir);
  add(job.spec.output);
  add(job.spec.error);
  add(job.spec.gpu_type);
  add(job.spec.constraint);
  for (const std::string& node : job.spec.nodelist) add(node);
  for (const std::string& node : job.spec.exclude) add(node);
  for (const std::string& arg : job.spec.command) add(arg);
  for (const auto& [key, value] : job.spec.env) {
    add(key);
    add(value);
  }
  for (const std::string& node : job.nodes) add(node);
  for (const JobEvent& event : job.events) {
    add(event.kind);
    add(event.detail);
    bytes += 24;  // its sequence, job id and time
  }
  return bytes;
}

bool BetterProfile(const JobProfile& a, const JobProfile& b) {
  if (a.periodic != b.periodic) return a.periodic;
  return a.bytes_per_iteration.value_or(0) > b.bytes_per_iteration.value_or(0);
}

std::optional<double> PlacementSkew(const std::optional<JobProfile>& profile) {
  if (!profile || !profile->periodic) return std::nullopt;
  return profile->tensor_skew;
}

JobSpec CoreJobSpec(JobId id, const JobRequest& spec, Seconds submit_time,
                    const std::optional<JobProfile>& profile) {
  return JobSpec{.id = id,
                 .num_gpus = spec.num_gpus,
                 .submit_time = submit_time,
                 .duration = std::nullopt,
                 .model = spec.model,
                 .measured_skew = PlacementSkew(profile),
                 .no_preempt = spec.no_preempt,
                 .nodes = spec.nodes,
                 .gpus_per_node = spec.gpus_per_node,
                 .filter = NodeFilterOf(spec),
                 .exclusive = spec.exclusive,
                 .cpus = spec.cpus,
                 .mem_mib = spec.mem_mib,
                 .vc = spec.vc,
                 .qos = spec.qos,
                 .user = spec.user};
}

std::shared_ptr<const NodeFilter> NodeFilterOf(const JobRequest& spec) {
  if (spec.gpu_type.empty() && spec.constraint.empty() &&
      spec.nodelist.empty() && spec.exclude.empty() && spec.cpus_per_gpu == 0 &&
      spec.mem_per_gpu_mib == 0) {
    return nullptr;
  }
  auto filter = std::make_shared<NodeFilter>();
  filter->gpu_type = spec.gpu_type;
  // Validated at admission; a stored one that no longer parses admits by
  // features nothing rather than everything.
  absl::StatusOr<Constraint> constraint = ParseConstraint(spec.constraint);
  filter->constraint =
      constraint.ok() ? *std::move(constraint) : Constraint{{""}};
  filter->constraint_text = spec.constraint;
  filter->nodelist = spec.nodelist;
  filter->exclude = spec.exclude;
  filter->cpus_per_gpu = spec.cpus_per_gpu;
  filter->mem_per_gpu_mib = spec.mem_per_gpu_mib;
  return filter;
}

std::string EncodeProfile(const JobProfile& p) {
  nlohmann::json j;
  j["periodic"] = p.periodic;
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v && std::isfinite(*v)) j[key] = *v;
  };
  put("tensor_skew", p.tensor_skew);
  put("iteration_s", p.iteration_s);
  put("bytes_per_iteration", p.bytes_per_iteration);
  put("messages_per_iteration", p.messages_per_iteration);
  j["measured_job_id"] = p.measured_job_id;
  return j.dump();
}

absl::StatusOr<JobProfile> DecodeProfile(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("periodic") ||
      !j["periodic"].is_boolean()) {
    return absl::InvalidArgumentError("profile: expected a JSON object with "
                                      "a boolean 'periodic'");
  }
  JobProfile p;
  p.periodic = j["periodic"].get<bool>();
  auto get = [&](const char* key, std::optional<double>* out) {
    if (j.contains(key) && j[key].is_number()) *out = j[key].get<double>();
  };
  get("tensor_skew", &p.tensor_skew);
  get("iteration_s", &p.iteration_s);
  get("bytes_per_iteration", &p.bytes_per_iteration);
  get("messages_per_iteration", &p.messages_per_iteration);
  if (j.contains("measured_job_id") && j["measured_job_id"].is_number_integer()) {
    p.measured_job_id = j["measured_job_id"].get<JobId>();
  }
  return p;
}

std::string JobSignature(const JobRequest& spec) {
  // Length-prefixed fields, so that no two specs run together alike.
  std::string fields = absl::StrCat(spec.num_gpus, ";", spec.name.size(), ":",
                                    spec.name, ";", spec.command.size());
  for (const std::string& arg : spec.command) {
    absl::StrAppend(&fields, ";", arg.size(), ":", arg);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(fields.data(), fields.size(), digest, &size, EVP_sha256(),
             nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace tiresias
