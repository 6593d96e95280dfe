// MasterState: job control. One action (cancel, hold, release, requeue) on
// many jobs under one lock and in one store write, and the master's own
// stop of jobs past their time limit.
//
// Hold lives in the scheduler (Scheduler::Hold: a held job is in none of
// its sets, so no pass can start it) and in the record (JobRecord::held,
// stored); a restarted master holds the job again when it reloads it.
// Requeue is a preemption the user asked for: the scheduler frees the
// job's GPUs (Scheduler::Requeue) and its launch is stopped with reason
// PREEMPT, so it checkpoints and later resumes as its next attempt.
// Time limits are checked every second (CheckTimeouts) over the launches
// only, so the cost follows the running jobs, not the backlog; a job past
// its limit is stopped as a cancel is, and ends kTimeout.
#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

namespace {

absl::Status NotYours(const JobRecord& job) {
  return absl::PermissionDeniedError(
      absl::StrCat("job ", job.id, " is ", job.spec.user,
                   "'s; only its owner or an admin may act on it"));
}

}  // namespace

std::string_view JobActionName(JobAction action) {
  switch (action) {
    case JobAction::kCancel: return "cancel";
    case JobAction::kHold: return "hold";
    case JobAction::kRelease: return "release";
    case JobAction::kRequeue: return "requeue";
    case JobAction::kRequeueHold:
      return "requeue --hold";
  }
  return "?";
}

absl::StatusOr<std::vector<MasterState::JobActionResult>>
MasterState::UpdateJobs(JobAction action, std::vector<JobId> ids,
                        const MayAct& may_act) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  MutexLock lock(&mu_);
  const Seconds now = clock_->NowUnixSeconds();
  std::vector<JobActionResult> results;
  results.reserve(ids.size());
  // Arrays' jobs not written yet: their owner's action splits each array
  // once, through the last of its jobs named, so that every job acted on
  // is one in memory like any other. Others' are refused below.
  std::map<JobId, JobId> split_through;  // array -> its last job named
  for (JobId id : ids) {
    if (std::optional<JobId> array = splits_.Holding(id)) {
      split_through[*array] = std::max(split_through[*array], id);
    }
  }
  std::map<JobId, absl::Status> split_failed;  // by array
  std::map<JobId, JobRecord> not_yours;        // by array: one of its jobs
  for (const auto& [array, last] : split_through) {
    absl::StatusOr<JobRecord> unwritten = store_->GetJob(last);
    absl::Status split = unwritten.status();
    if (split.ok() && !may_act(*unwritten)) {
      not_yours[array] = *std::move(unwritten);
      continue;
    }
    if (split.ok()) split = SplitThroughLocked(last, now);
    if (!split.ok()) split_failed[array] = split;
  }
  for (JobId id : ids) {
    if (std::optional<JobId> array = splits_.Holding(id)) {
      if (auto failed = split_failed.find(*array);
          failed != split_failed.end()) {
        results.push_back({id, failed->second});
        continue;
      }
      if (auto other = not_yours.find(*array); other != not_yours.end()) {
        JobRecord job = other->second;  // the array's jobs share their owner
        job.id = id;
        results.push_back({id, NotYours(job)});
        continue;
      }
    }
    auto it = records_.find(id);
    // A record that just ended leaves memory at the next write.
    if (it != records_.end() && !IsFinal(it->second.state)) {
      if (!may_act(it->second)) {
        results.push_back({id, NotYours(it->second)});
        continue;
      }
      results.push_back(ActLocked(action, it->second, now));
      continue;
    }
    // Ended (or never existed): read from the store, to say which.
    absl::StatusOr<JobRecord> stored = store_->GetJob(id);
    if (!stored.ok()) {
      results.push_back({id, stored.status()});
    } else if (!may_act(*stored)) {
      results.push_back({id, NotYours(*stored)});
    } else {
      results.push_back(
          {id, absl::FailedPreconditionError(absl::StrCat(
                   "job ", id, " has already ended (",
                   std::string(JobRecordStateName(stored->state)), ")"))});
    }
  }
  RETURN_IF_ERROR(Commit());
  return results;
}

absl::StatusOr<std::vector<MasterState::JobActionResult>>
MasterState::UpdateMatchingJobs(JobAction action, const JobFilter& filter,
                                const MayAct& may_act) {
  if (filter.state && IsFinal(*filter.state)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: ", std::string(JobRecordStateName(*filter.state)),
        " jobs have ended; filter on pending, starting, running or "
        "preempted"));
  }
  std::vector<JobId> ids;
  {
    MutexLock lock(&mu_);
    const Seconds now = clock_->NowUnixSeconds();
    // Unfinished jobs are all in memory.
    for (const auto& [id, rec] : records_) {
      if (IsFinal(rec.state)) continue;
      if (filter.user && rec.spec.user != *filter.user) continue;
      if (filter.name && rec.spec.name != *filter.name) continue;
      if (filter.array_id && rec.array_id != *filter.array_id) continue;
      if (filter.state) {
        JobRecord shown = rec;
        LiveView(shown, now);
        if (shown.state != *filter.state) continue;
      }
      if (!may_act(rec)) continue;  // others' jobs are not matched
      ids.push_back(id);
    }
    // Arrays' jobs not written yet: pending, alike within an array.
    if (!filter.state || *filter.state == JobRecordState::kPending) {
      for (const auto& [array_id, a] : splits_.arrays()) {
        if ((filter.user && a.user != *filter.user) ||
            (filter.name && a.name != *filter.name) ||
            (filter.array_id && array_id != *filter.array_id)) {
          continue;
        }
        JobRecord probe;
        probe.id = array_id + a.split;
        probe.spec.user = a.user;
        if (!may_act(probe)) continue;
        for (JobId id = array_id + a.split; id < array_id + a.count; ++id) {
          ids.push_back(id);
        }
      }
    }
  }
  // A job that ended in between is reported as such.
  return UpdateJobs(action, std::move(ids), may_act);
}

MasterState::JobActionResult MasterState::ActLocked(JobAction action,
                                                    JobRecord& rec,
                                                    Seconds now) {
  JobActionResult result{rec.id};
  const JobId id = rec.id;
  const Job* job = scheduler_->Find(id);
  const bool scheduled_running = job != nullptr && job->running();
  auto refuse = [&](std::string why) {
    result.status = absl::FailedPreconditionError(
        absl::StrCat("job ", id, " ", why));
    return result;
  };
  // Holds the waiting job: never started until released.
  auto hold = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    RETURN_IF_ERROR(scheduler_->Hold(id));
    rec.held = true;
    // Its array's slot, if it held one, goes to another of its jobs.
    LeaveArraySlot(rec, /*held=*/true);
    AddEvent(id, now, EventKind::kHeld, "by user");
    MarkDirty(id);
    return absl::OkStatus();
  };
  if (action != JobAction::kCancel && rec.cancel_requested) {
    return refuse(rec.timeout_requested ? "is being stopped at its time limit"
                                        : "is being cancelled");
  }
  switch (action) {
    case JobAction::kCancel: {
      absl::StatusOr<JobRecord> cancelled = CancelLocked(id, now, false);
      if (!cancelled.ok()) {
        result.status = cancelled.status();
        return result;
      }
      break;
    }
    case JobAction::kHold: {
      if (rec.held) {
        result.unchanged = true;
        break;
      }
      if (restart_.Adopting(id) || scheduled_running || job == nullptr) {
        JobRecord shown = rec;
        LiveView(shown, now);
        return refuse(absl::StrCat(
            "is ", std::string(JobRecordStateName(shown.state)),
            "; only a pending or preempted job can be held (requeue it "
            "first)"));
      }
      if (absl::Status held = hold(); !held.ok()) {
        result.status = held;
        return result;
      }
      break;
    }
    case JobAction::kRelease: {
      if (!rec.held) {
        result.unchanged = true;
        break;
      }
      // A job still waiting for its dependencies, or for a slot of its
      // array, stays out of the scheduler: the user's release lifts the
      // user's hold only (a slot is looked for at the next Commit).
      const bool waiting = deps_.Waiting(id);
      const bool no_slot = WaitsForArraySlot(rec);
      const bool begins = WaitsForBegin(rec);
      if (no_slot) array_slots_.Recheck(rec.array_id);
      if (job != nullptr && !waiting && !no_slot && !begins) {
        if (absl::Status released = scheduler_->Release(id, now);
            !released.ok()) {
          result.status = released;
          return result;
        }
      }
      rec.held = false;
      AddEvent(id, now, EventKind::kReleased,
               waiting   ? "by user; still waiting for its dependencies"
               : no_slot ? "by user; runs when its array has a free slot"
               : begins  ? "by user; runs from its begin time"
                         : "by user");
      MarkDirty(id);
      pass_wanted_ = true;
      break;
    }
    case JobAction::kRequeue:
    case JobAction::kRequeueHold: {
      if (restart_.Adopting(id)) {
        result.status = absl::UnavailableError(absl::StrCat(
            "job ", id,
            " is being re-adopted after a master restart; try again"));
        return result;
      }
      const bool and_hold = action == JobAction::kRequeueHold;
      if (and_hold && !rec.held && job == nullptr) {
        return refuse(
            "is not waiting in a queue; only a pending, preempted "
            "or running job can be requeued and held");
      }
      result.unchanged = !scheduled_running && (!and_hold || rec.held);
      if (scheduled_running) {
        if (absl::Status requeued = scheduler_->Requeue(id, now, cluster());
            !requeued.ok()) {
          result.status = requeued;
          return result;
        }
        MarkDirty(id);
        AddEvent(id, now, EventKind::kRequeued, "by user");
        PreemptLaunch(id, now);
        pass_wanted_ = true;
      }
      // Held in the same step, before any pass could start it again.
      if (and_hold && !rec.held) {
        if (absl::Status held = hold(); !held.ok()) {
          result.status = held;
          return result;
        }
      }
      break;
    }
  }
  result.job = rec;
  result.job.events.clear();
  LiveView(result.job, now);
  return result;
}

void MasterState::EnforceTimeLimits(Seconds now) {
  std::vector<JobId> due;
  for (const auto& [key, launch] : table_.launches()) {
    // Counted from the release: a deferred launch has not run yet.
    if (launch.phase != Phase::kActive) continue;
    auto rec = records_.find(key.first);
    if (rec == records_.end() || rec->second.attempt != key.second) continue;
    const Seconds limit = rec->second.spec.time_limit;
    if (limit <= Seconds{0} || rec->second.cancel_requested) continue;
    const Job* job = scheduler_->Find(key.first);
    if (job == nullptr || !job->running()) continue;
    const Seconds executed = job->TotalExecuted(now);
    if (executed >= limit) {
      due.push_back(key.first);
    } else if (executed >= 0.9 * limit) {
      QueueTimeLimitNotification(rec->second, now);
    }
  }
  for (JobId id : due) {
    // Fails only for a job that has ended, which `due` excludes.
    CancelLocked(id, now, /*timeout=*/true).IgnoreError();
  }
}

}  // namespace tiresias
