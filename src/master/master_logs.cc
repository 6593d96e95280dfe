// MasterState::LocateTaskLog: which node holds the log of a task.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::StatusOr<MasterState::TaskLogLocation> MasterState::LocateTaskLog(
    JobId id, int attempt, int rank) {
  if (attempt < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt: expected 0 (the current launch) or a launch "
                     "number, got ",
                     attempt));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(JobRecord rec, store_->GetJob(id));
  LiveView(rec, clock_->NowUnixSeconds());
  if (rank < 0 || rank >= rec.spec.num_gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank: job ", id, " has at most ", rec.spec.num_gpus,
        " task(s), ranks 0..", rec.spec.num_gpus - 1, "; got ", rank));
  }
  if (rec.attempt == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " has not started yet, so it has no log"));
  }
  if (attempt > rec.attempt) {
    return absl::NotFoundError(absl::StrCat("attempt: job ", id,
                                            " has been launched ", rec.attempt,
                                            " time(s), got ", attempt));
  }
  TaskLogLocation where;
  where.attempt = attempt == 0 ? rec.attempt : attempt;
  where.current_attempt = rec.attempt;
  where.state = rec.state;

  auto add = [&](int64_t node_id) {
    auto node = nodes_.find(node_id);
    if (node == nodes_.end()) return;
    const std::string& name = node->second.record.name;
    if (std::any_of(where.nodes.begin(), where.nodes.end(),
                    [&](const LogNode& n) { return n.name == name; })) {
      return;
    }
    where.nodes.push_back(
        LogNode{name, node->second.log_address, node->second.up});
  };
  auto launch = launches_.find({id, where.attempt});
  if (launch != launches_.end() &&
      rank < static_cast<int>(launch->second.parts.size())) {
    const Part& part = launch->second.parts[rank];
    where.ended = part.ended;
    add(part.node_id);
    return where;
  }
  // A launch no longer in memory has ended, unless the master restarted
  // while it ran and its agents have not re-registered it yet.
  where.ended = IsFinal(rec.state) || where.attempt < rec.attempt ||
                (rec.state != JobRecordState::kRunning &&
                 rec.state != JobRecordState::kStarting);
  for (const std::string& name : rec.nodes) {
    for (const auto& [node_id, info] : nodes_) {
      if (info.record.name == name) add(node_id);
    }
  }
  for (const auto& [node_id, info] : nodes_) add(node_id);
  return where;
}

}  // namespace tiresias
