// MasterState: a task's own end wins over a stop in flight. A launch being
// stopped (preempted, requeued, drained, cancelled) whose tasks all ended
// on their own before the stop reached them ends its job with their exit,
// also when the end is reported only after a master restart. See
// docs/ARCHITECTURE.md, "A task's own end wins".
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
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

bool MasterState::OwnEndAfterRestart(int64_t node_id,
                                     const v1::TaskStatus& task,
                                     Seconds now) {
  const JobId job = task.task().job_id();
  auto it = records_.find(job);
  if (it == records_.end() || IsFinal(it->second.state)) return false;
  JobRecord& rec = it->second;
  const bool restarted = restart_fence_.contains(job) ||
                         cancelling_after_restart_.contains(job);
  const bool own = task.state() == v1::TASK_STATE_EXITED &&
                   task.has_exit_code() &&
                   task.exit_code() != kStartFailedExitCode;
  // Its last released launch (rec.nodes) had one rank, on this node; a
  // later attempt decided since the restart is at most deferred.
  if (!restarted || !own || task.task().rank() != 0 ||
      task.task().attempt() > rec.attempt || rec.nodes.size() != 1 ||
      rec.nodes[0] != table_.NodeName(node_id) || table_.AnyLive(job)) {
    return false;
  }
  const int code = task.exit_code();
  EndWithOwnExit(rec,
                 code == 0 ? std::nullopt
                           : std::optional<std::pair<int, int>>({0, code}),
                 rec.state == JobRecordState::kPreempted,
                 absl::StrCat("attempt ", task.task().attempt(),
                              ": it ended on its own before its stop reached "
                              "it, reported after a master restart"),
                 now);
  return true;
}

void MasterState::EndWithOwnExit(JobRecord& rec,
                                 std::optional<std::pair<int, int>> failure,
                                 bool preempted, const std::string& why,
                                 Seconds now) {
  if (preempted && rec.preemptions > 0) --rec.preemptions;
  // A later attempt decided while this one was being stopped never ran
  // (it waited for this one's end): dropped, as a cancel drops it.
  if (Launch* current = CurrentLaunch(rec.id);
      current != nullptr && current->phase == Phase::kDeferred) {
    table_.Erase({rec.id, current->attempt});
  }
  adopting_.erase(rec.id);
  restart_fence_.erase(rec.id);
  cancelling_after_restart_.erase(rec.id);
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
}

}  // namespace tiresias
