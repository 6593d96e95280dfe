#include "master/job_record.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

constexpr JobRecordState kAllJobStates[] = {
    JobRecordState::kPending,  JobRecordState::kRunning,
    JobRecordState::kPreempted, JobRecordState::kFinished,
    JobRecordState::kFailed,   JobRecordState::kCancelled,
    JobRecordState::kStarting};

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
  }
  return "unknown";
}

absl::StatusOr<JobRecordState> ParseJobRecordState(std::string_view text) {
  for (JobRecordState state : kAllJobStates) {
    if (JobRecordStateName(state) == text) return state;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "job state: expected one of pending, starting, running, preempted, "
      "finished, failed, cancelled; got \"", std::string(text), "\""));
}

bool IsFinal(JobRecordState state) {
  return state == JobRecordState::kFinished ||
         state == JobRecordState::kFailed ||
         state == JobRecordState::kCancelled;
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
  // Ids, state, counters and times with their tags: at most about 120.
  constexpr int64_t kNumbers = 128;
  int64_t bytes = kNumbers;
  auto add = [&](const std::string& s) {
    bytes += static_cast<int64_t>(s.size()) + kPerString;
  };
  add(job.spec.name);
  add(job.spec.user);
  add(job.spec.checkpoint_dir);
  add(job.spec.model);
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

}  // namespace tiresias
