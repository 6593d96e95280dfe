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

}  // namespace tiresias
