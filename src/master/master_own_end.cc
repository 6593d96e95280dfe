// MasterState: a task's own end wins over a stop in flight. A launch being
// stopped (preempted, requeued, drained, cancelled) whose tasks all ended
// on their own before the stop reached them ends its job with their exit,
// also when the end is reported only after a master restart or after the
// master gave the launch up (its node lost, the adoption window over) and
// ran the job again: that later attempt is stopped. See
// docs/ARCHITECTURE.md, "A task's own end wins".
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

void MasterState::OnOwnEndWhileStopping(Launch& launch, Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  std::optional<std::pair<int, int>> failure;  // rank, exit code
  for (size_t rank = 0; rank < launch.parts.size(); ++rank) {
    const int code = launch.parts[rank].exit_code.value_or(0);
    if (code != 0 && !failure) failure = {static_cast<int>(rank), code};
  }
  const bool preempted = launch.preemption_counted;
  const std::string stop = launch.stop_reason == v1::STOP_REASON_CANCEL
                               ? "its cancel"
                               : "its stop";
  table_.Erase(key);
  EndWithOwnExit(records_.at(key.first), failure, preempted,
                 absl::StrCat("attempt ", key.second,
                              ": every task ended on its own before ", stop,
                              " reached it"),
                 now);
}

absl::StatusOr<bool> MasterState::LateOwnEnd(int64_t node_id,
                                             const v1::TaskStatus& task,
                                             Seconds now) {
  const JobId job = task.task().job_id();
  auto it = records_.find(job);
  if (it == records_.end() || IsFinal(it->second.state)) return false;
  JobRecord& rec = it->second;
  const int attempt = task.task().attempt();
  const bool own = task.state() == v1::TASK_STATE_EXITED &&
                   task.has_exit_code() &&
                   task.exit_code() != kStartFailedExitCode;
  // One rank (a gang's end is decided by all of its ranks), of an attempt
  // the master released, not a part of a launch it still holds.
  if (!own || task.task().rank() != 0 || attempt < 1 || attempt > rec.attempt ||
      table_.Find({job, attempt}) != nullptr) {
    return false;
  }
  // Released on this node and only there: a node cannot end a job it never
  // ran. The launch record is stored before its task may start.
  const std::string& node = table_.NodeName(node_id);
  ASSIGN_OR_RETURN(std::vector<std::string> ran_on,
                   store_->LaunchNodes(job, attempt));
  if (ran_on.size() != 1 || ran_on[0] != node) return false;
  const Launch* later = CurrentLaunch(job);
  const bool restarted =
      restart_.Fenced(job) || restart_.CancellingAfterRestart(job);
  const int code = task.exit_code();
  std::string why = absl::StrCat("attempt ", attempt, ": it ended on its own");
  if (later != nullptr && later->phase != Phase::kDeferred) {
    absl::StrAppend(&why, ", reported only after attempt ", later->attempt,
                    " had started (now stopped)");
  } else {
    absl::StrAppend(&why, " before its stop reached it, reported ",
                    restarted ? "after a master restart" : "late");
  }
  EndWithOwnExit(
      rec,
      code == 0 ? std::nullopt : std::optional<std::pair<int, int>>({0, code}),
      rec.state == JobRecordState::kPreempted, why, now);
  return true;
}

void MasterState::EndWithOwnExit(JobRecord& rec,
                                 std::optional<std::pair<int, int>> failure,
                                 bool preempted, const std::string& why,
                                 Seconds now) {
  if (preempted && rec.preemptions > 0) --rec.preemptions;
  // A later attempt decided while this one was being stopped never ran
  // (it waited for this one's end): dropped, as a cancel drops it.
  // One released since (an earlier attempt's end reported late, after the
  // master gave up on it) is a duplicate: stopped once the job has ended,
  // as a failed job's other ranks are.
  Launch* current = CurrentLaunch(rec.id);
  if (current != nullptr && current->phase == Phase::kDeferred) {
    table_.Erase({rec.id, current->attempt});
    current = nullptr;
  }
  restart_.Forget(rec.id);
  if (const Job* job = scheduler_->Find(rec.id);
      job != nullptr && !job->finished()) {
    SyncRecord(rec, now);  // its counters as of now, before it leaves
    // Found just above: Remove cannot fail.
    scheduler_->Remove(rec.id, now, cluster()).IgnoreError();
  }
  if (failure) {
    Finalize(rec, JobRecordState::kFailed, now, failure->second,
             absl::StrCat("rank ", failure->first, " exit code ",
                          failure->second, " (", why, ")"));
  } else {
    Finalize(rec, JobRecordState::kFinished, now, 0,
             absl::StrCat("every task exited 0 (", why, ")"));
  }
  if (current != nullptr) {
    table_.Stop(*current, v1::STOP_REASON_CANCEL);
    if (current->AllEnded()) table_.Erase(current->key());
  }
}

}  // namespace tiresias
