// DependencyTable: the master's job dependencies (submit --dependency,
// Slurm's afterok, afterany, afternotok) as bookkeeping. Which jobs wait
// for their dependencies, with their last check (for the pending reason);
// for every job waited for, the jobs waiting for it; which waiting jobs to
// check again because a job they wait for ended; and, for a dependency on
// a whole array (its first job's id), how many of its jobs have not ended
// and whether one ended other than finished.
//
// It holds and releases nothing in the scheduler and reads no record:
// MasterState (master_deps.cc) tells it who waits and who ended, takes the
// queued checks, evaluates them against the records (CheckDependencies in
// core/dependency.h) and applies the verdicts. A check is queued only for
// a new wait and for the dependents of a job that ended: O(new waits +
// dependents of the ended jobs), never O(jobs).
//
//   DependencyTable deps;
//   deps.Wait(7, {{DependencyKind::kAfterOk, 3}});   // 7 waits for 3
//   deps.Ended(3, /*deps=*/{}, /*array_id=*/0, /*finished=*/true);
//   while (std::optional<JobId> id = deps.TakeCheck()) { ... }  // 7
//
// Nothing here is stored: a restarted master works the waits out again
// from the jobs' stored dependencies. Not thread-safe: MasterState holds it
// under its mutex.
#ifndef TIRESIAS_MASTER_DEPENDENCY_TABLE_H_
#define TIRESIAS_MASTER_DEPENDENCY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/dependency.h"
#include "core/job.h"

namespace tiresias {

class DependencyTable {
 public:
  // Job `id` starts waiting for `deps` (not empty) and is queued for a
  // check. Until a check says otherwise, its wait names its first
  // dependency, all of them unmet.
  void Wait(JobId id, const std::vector<JobDependency>& deps);

  // Whether job `id` waits for its dependencies.
  bool Waiting(JobId id) const { return waits_.contains(id); }
  // Its last check (the first dependency not met yet and how many are
  // not), or null when it does not wait.
  const DependencyCheck* WaitOf(JobId id) const;
  // A check found job `id` still waiting: `check` is its wait now. Ignored
  // for a job that does not wait.
  void StillWaiting(JobId id, const DependencyCheck& check);
  // Job `id` waits no more (its dependencies were met, or one never can
  // be): it leaves the lists of the jobs in `deps` it waited for.
  void StopWaiting(JobId id, const std::vector<JobDependency>& deps);

  // `count` more jobs of the array `array_id` (its first job's id) that
  // have not ended (admitted, loaded at a start, or split off its record).
  // A count <= 0 is ignored: it neither makes nor lowers an entry (a
  // stored array with nothing left to split then stands by the store).
  void AddArrayJobs(JobId array_id, int64_t count);

  // Job `id` ended, kFinished when `finished` (`deps`: its own
  // dependencies; `array_id`: its array's id, 0 if none). It waits no
  // more; the jobs waiting for it, and for its array as a whole, are
  // queued for a check. The jobs waiting for an array's first job stay
  // listed: its id is the array's, waited for until every job ended.
  void Ended(JobId id, const std::vector<JobDependency>& deps, JobId array_id,
             bool finished);

  // How array `array_id` stands from what this master saw: kUnfinished
  // while a job of it has not ended (even if one failed already), else
  // kFailed once one ended other than finished; nullopt when neither (its jobs
  // ended before this master started and the store has them, or every one
  // finished here).
  std::optional<DependencyTarget> ArrayTarget(JobId array_id) const;

  // Whether a check is queued.
  bool HasChecks() const { return !checks_.empty(); }
  // The queued job with the lowest id, taken off the queue (it may have
  // ended or stopped waiting since it was queued); nullopt when none is.
  std::optional<JobId> TakeCheck();

  // For tests: jobs waiting, jobs waited for.
  size_t num_waiting() const { return waits_.size(); }
  size_t num_waited_for() const { return dependents_.size(); }

 private:
  std::map<JobId, DependencyCheck> waits_;
  std::map<JobId, std::set<JobId>> dependents_;  // waited for -> waiting
  std::map<JobId, int64_t> array_unfinished_;
  std::set<JobId> array_failed_;
  std::set<JobId> checks_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_DEPENDENCY_TABLE_H_
