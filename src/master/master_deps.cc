// MasterState: job dependencies (submit --dependency, Slurm's afterok,
// afterany, afternotok). A waiting job is kept out of the scheduler's sets
// with the hold mechanism (Scheduler::Hold), so no pass can start it; the
// user's hold (JobRecord::held) and the dependency wait are two reasons
// for the same scheduler hold, which is lifted only when neither remains.
//
// The dependencies are stored with the job (JobRequest::dependencies); the
// wait is not: a restarted master works it out again (Load), so nothing
// stored can disagree with the jobs' states. The bookkeeping (who waits,
// for whom, which waits to check again, how arrays waited for whole
// stand) is DependencyTable's (deps_); when a job ends, only the jobs
// waiting for it are checked again, at the next ResolveDependencies (which
// Commit runs first, so a chain of jobs that can never run ends in the same
// write as its first link).
//
// A dependency on an array's id (its first job's, what `submit --array`
// prints) waits for the whole array, as Slurm's does: met for afterok when
// every job of it finished, never met once one ended otherwise (ArrayTargetOf).
//
// A dependency that can never be met (afterok on a job that failed, was
// cancelled or timed out; afternotok on one that finished) ends the job
// FAILED, as Slurm's kill_invalid_depend does, with an event naming it.
// Failed, not cancelled: nobody asked to stop it, and `afternotok` on it
// then runs (a cleanup job), while `afterok` chains behind it end too.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::CheckDependencyTargets(const JobRequest& spec,
                                                 const MayAct& may_depend,
                                                 std::string_view field) {
  if (spec.dependencies.empty()) return absl::OkStatus();
  MutexLock lock(&mu_);
  for (const JobDependency& dep : spec.dependencies) {
    const std::string named = absl::StrCat(ToAbsl(field), ".dependencies: ",
                                           FormatDependency(dep), ": ");
    if (dep.job_id > ended_.max_id) {
      return absl::InvalidArgumentError(absl::StrCat(
          named, "there is no job ", dep.job_id,
          " (a job may depend only on jobs submitted before it, never on "
          "itself)"));
    }
    JobRecord stored;
    const JobRecord* target = nullptr;
    if (auto it = records_.find(dep.job_id); it != records_.end()) {
      target = &it->second;
    } else {
      absl::StatusOr<JobRecord> read = store_->GetJob(dep.job_id);
      if (absl::IsNotFound(read.status())) {
        return absl::InvalidArgumentError(
            absl::StrCat(named, "there is no job ", dep.job_id));
      }
      if (!read.ok()) return read.status();
      stored = *std::move(read);
      target = &stored;
    }
    if (may_depend && !may_depend(*target)) {
      return absl::PermissionDeniedError(absl::StrCat(
          named, "job ", dep.job_id, " is ", target->spec.user,
          "'s; a job may depend only on its own user's jobs unless an "
          "admin submits it"));
    }
  }
  return absl::OkStatus();
}

absl::Status MasterState::WaitForDependencies(const JobRecord& rec) {
  if (rec.spec.dependencies.empty()) return absl::OkStatus();
  // Held already if the user held it: the scheduler's hold is one.
  if (!rec.held) RETURN_IF_ERROR(scheduler_->Hold(rec.id));
  deps_.Wait(rec.id, rec.spec.dependencies);
  return absl::OkStatus();
}

DependencyTarget MasterState::TargetOf(JobId id) const {
  JobRecordState state;
  JobId array_id = 0;
  if (auto it = records_.find(id); it != records_.end()) {
    state = it->second.state;
    array_id = it->second.array_id;
  } else {
    absl::StatusOr<JobRecord> stored = store_->GetJob(id);
    if (!stored.ok()) {
      // Checked at submission, so only a store failure: wait, and look
      // again when a job it waits for ends or the master restarts.
      std::fprintf(stderr, "tiresias master: dependency on job %lld: %s\n",
                   static_cast<long long>(id),
                   std::string(stored.status().message()).c_str());
      return DependencyTarget::kUnfinished;
    }
    state = stored->state;
    array_id = stored->array_id;
  }
  if (array_id == id) return ArrayTargetOf(id);
  if (!IsFinal(state)) return DependencyTarget::kUnfinished;
  return state == JobRecordState::kFinished ? DependencyTarget::kSucceeded
                                            : DependencyTarget::kFailed;
}

DependencyTarget MasterState::ArrayTargetOf(JobId array_id) const {
  if (std::optional<DependencyTarget> seen = deps_.ArrayTarget(array_id)) {
    return *seen;
  }
  // Ended before this start (or every one finished): the store has them.
  JobQuery failed;
  failed.array_id = array_id;
  failed.states = {JobRecordState::kFailed, JobRecordState::kCancelled,
                   JobRecordState::kTimeout};
  failed.limit = 1;
  absl::StatusOr<JobPage> page = store_->QueryJobs(failed);
  if (!page.ok()) {
    std::fprintf(stderr, "tiresias master: dependency on array %lld: %s\n",
                 static_cast<long long>(array_id),
                 std::string(page.status().message()).c_str());
    return DependencyTarget::kUnfinished;  // looked at again later
  }
  return page->jobs.empty() ? DependencyTarget::kSucceeded
                            : DependencyTarget::kFailed;
}

void MasterState::ResolveDependencies(Seconds now) {
  // Finalize below queues the dependents of the job it ends: a chain is
  // followed to its end, one link per turn (no recursion).
  while (std::optional<JobId> next = deps_.TakeCheck()) {
    const JobId id = *next;
    auto rec_it = records_.find(id);
    if (rec_it == records_.end() || IsFinal(rec_it->second.state) ||
        !deps_.Waiting(id)) {
      continue;  // ended (cancelled) while it waited
    }
    JobRecord& rec = rec_it->second;
    const std::vector<JobDependency>& deps = rec.spec.dependencies;
    const DependencyCheck check =
        CheckDependencies(deps, [&](JobId target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                    mu_) { return TargetOf(target); });
    if (check.verdict == DependencyVerdict::kWaiting) {
      deps_.StillWaiting(id, check);
      continue;
    }
    deps_.StopWaiting(id, deps);
    if (check.verdict == DependencyVerdict::kMet) {
      // Still held if the user held it, or it waits for a slot of its
      // array (RefillArraySlots releases it then), or its begin time is
      // ahead (ReleaseDueBegins).
      if (MayRelease(rec)) ReleaseHold(id, now);  // held by WaitForDependencies
      AddEvent(id, now, EventKind::kDependency,
               absl::StrCat("dependencies met (", FormatDependencies(deps),
                            ")", rec.held ? "; still held by user" : ""));
      pass_wanted_ = true;
      continue;
    }
    const JobDependency& never = deps[check.index];
    // The state it ended in, for the event (TargetOf read it just now).
    std::string ended = "?";
    JobId array_id = 0;
    if (auto t = records_.find(never.job_id); t != records_.end()) {
      ended = std::string(JobRecordStateName(t->second.state));
      array_id = t->second.array_id;
    } else if (absl::StatusOr<JobRecord> stored = store_->GetJob(never.job_id);
               stored.ok()) {
      ended = std::string(JobRecordStateName(stored->state));
      array_id = stored->array_id;
    }
    const std::string what =
        array_id == never.job_id
            ? absl::StrCat("array ", never.job_id,
                           never.kind == DependencyKind::kAfterNotOk
                               ? " ended with every job finished"
                               : " had a job end other than finished")
            : absl::StrCat("job ", never.job_id, " ended ", ended);
    if (const Job* job = scheduler_->Find(id); job && !job->finished()) {
      SyncRecord(rec, now);
      if (absl::Status removed = scheduler_->Remove(id, now, cluster());
          !removed.ok()) {
        std::fprintf(stderr, "tiresias master: invariant: job %lld: %s\n",
                     static_cast<long long>(id),
                     std::string(removed.message()).c_str());
      }
    }
    const JobId array = rec.array_id;
    Finalize(rec, JobRecordState::kFailed, now, std::nullopt,
             absl::StrCat("dependency ", FormatDependency(never),
                          " can never be met: ", what));
    // The array's jobs not written yet have the same dependencies: written
    // now, held or not, each waits and is checked (queued by its
    // admission), so they end in this same turn.
    if (array == 0) continue;
    if (auto it = splits_.arrays().find(array); it != splits_.arrays().end()) {
      const JobId last = array + it->second.count - 1;
      if (absl::Status split = SplitThroughLocked(last, now); !split.ok()) {
        std::fprintf(stderr, "tiresias master: array %lld: %s\n",
                     static_cast<long long>(array),
                     std::string(split.message()).c_str());
      }
    }
  }
}

}  // namespace tiresias
