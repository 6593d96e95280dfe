// MasterState: changing a waiting job's request (ModifyJob, `tiresias
// update`, Slurm's `scontrol update`) and begin times (`submit --begin`).
// A running job's time limit changes too (ChangeRunningTimeLimit); the
// rest of a running job's request is what its tasks were started with.
//
// A waiting job holds no GPUs, so its GPU count and QOS change in place:
// the scheduler's record is respecified and re-keyed (Scheduler::Replace
// keeps its queue, place, counters and hold). Its time limit is read by
// EnforceTimeLimits from the record, so it needs nothing more. The new
// request is stored whole (StoreWrite::new_specs) with the job's record.
//
// A begin time is a hold of its own: while it is ahead the job is held in
// the scheduler and listed in begin_waits_; the scheduler's hold is lifted
// only when no other reason holds the job (MayRelease), by whichever of
// them lifts last.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "master/job_validation.h"
#include "master/master_state.h"

namespace tiresias {

namespace {

// `old` with `changes` applied. InvalidArgument, naming the ModifyJob
// field, for a change the job's kind cannot take.
absl::StatusOr<JobRequest> Changed(JobId id, const JobRequest& old,
                                   const MasterState::JobChanges& changes) {
  JobRequest spec = old;
  if (changes.time_limit) spec.time_limit = *changes.time_limit;
  if (changes.gpus) {
    const int gpus = *changes.gpus;
    if (old.cpu_only()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpus: job ", id,
          " is CPU-only (--gpus 0 --cpus N); its GPUs cannot change "
          "(submit it again)"));
    }
    if (gpus < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpus: expected at least 1, got ", gpus));
    }
    if (old.nodes > 0) {
      if (gpus % old.nodes != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("gpus: job ", id, " has a shape of ", old.nodes,
                         " nodes (--nodes); expected a multiple of ", old.nodes,
                         ", got ", gpus));
      }
      spec.gpus_per_node = gpus / old.nodes;
    }
    spec.num_gpus = gpus;
  }
  if (changes.qos) spec.qos = *changes.qos;
  if (changes.begin) spec.begin = *changes.begin;
  return spec;
}

std::string LimitText(Seconds limit) {
  if (limit <= Seconds{0}) return "none";
  return absl::FormatDuration(absl::Seconds(limit.count()));
}

std::string BeginText(Seconds begin) {
  if (begin <= Seconds{0}) return "none";
  return absl::FormatTime(
      "%Y-%m-%d %H:%M:%S UTC",
      absl::FromUnixSeconds(static_cast<int64_t>(begin.count())),
      absl::UTCTimeZone());
}

// "GPUs 4 -> 2, time limit 1h -> 30m": what differs.
std::string DescribeChanges(const JobRequest& a, const JobRequest& b) {
  std::vector<std::string> parts;
  if (a.num_gpus != b.num_gpus) {
    parts.push_back(absl::StrCat("GPUs ", a.num_gpus, " -> ", b.num_gpus));
  }
  if (a.time_limit != b.time_limit) {
    parts.push_back(absl::StrCat("time limit ", LimitText(a.time_limit), " -> ",
                                 LimitText(b.time_limit)));
  }
  if (a.qos != b.qos) {
    parts.push_back(absl::StrCat("QOS ", a.qos.empty() ? "none" : a.qos, " -> ",
                                 b.qos.empty() ? "none" : b.qos));
  }
  if (a.begin != b.begin) {
    parts.push_back(
        absl::StrCat("begin ", BeginText(a.begin), " -> ", BeginText(b.begin)));
  }
  return parts.empty() ? "no change" : absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<JobRecord> MasterState::ModifyJob(JobId id,
                                                 const JobChanges& changes,
                                                 const CheckRequest& check) {
  if (!changes.time_limit && !changes.gpus && !changes.qos && !changes.begin) {
    return absl::InvalidArgumentError(
        "nothing to change: give a time limit, GPUs, a QOS or a begin time");
  }
  JobRequest before;
  {
    MutexLock lock(&mu_);
    // An array's job not written yet is split off first (the caller
    // checked that it may act on it).
    RETURN_IF_ERROR(SplitThroughLocked(id, clock_->NowUnixSeconds()));
    auto it = records_.find(id);
    if (it == records_.end() || IsFinal(it->second.state)) {
      ASSIGN_OR_RETURN(JobRecord stored, store_->GetJob(id));
      return absl::FailedPreconditionError(
          absl::StrCat("job ", id, " has already ended (",
                       std::string(JobRecordStateName(stored.state)), ")"));
    }
    before = it->second.spec;
  }
  // Checked with no lock held, as a submission is.
  ASSIGN_OR_RETURN(JobRequest after, Changed(id, before, changes));
  RETURN_IF_ERROR(ValidateJobRequest(after));
  if (changes.gpus) RETURN_IF_ERROR(CheckFitsCluster(after));
  if (check) RETURN_IF_ERROR(check(after));

  MutexLock lock(&mu_);
  const Seconds now = clock_->NowUnixSeconds();
  auto it = records_.find(id);
  if (it == records_.end() || IsFinal(it->second.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " ended meanwhile"));
  }
  JobRecord& rec = it->second;
  if (!(rec.spec == before)) {
    return absl::AbortedError(
        absl::StrCat("job ", id, " was changed meanwhile; try again"));
  }
  const Job* job = scheduler_->Find(id);
  if (rec.cancel_requested || restart_.Adopting(id) || job == nullptr ||
      !job->waiting() || IsStarting(rec)) {
    // Running (or starting, or being re-adopted): its time limit alone.
    const bool time_only = after.num_gpus == before.num_gpus &&
                           after.gpus_per_node == before.gpus_per_node &&
                           after.qos == before.qos &&
                           after.begin == before.begin;
    if (!rec.cancel_requested && time_only) {
      if (after.time_limit == before.time_limit) {
        return absl::InvalidArgumentError(
            absl::StrCat("job ", id, " runs with that time limit already (",
                         LimitText(before.time_limit), "): nothing to change"));
      }
      if (rec.spec.warn.signal != 0) {
        // Its tasks were told when to expect the signal at the start.
        return absl::FailedPreconditionError(absl::StrCat(
            "job ", id,
            " is signalled before its time limit (--signal); its tasks were "
            "told when at their start, so its limit cannot change while it "
            "runs"));
      }
      return ChangeRunningTimeLimit(rec, after.time_limit, now);
    }
    JobRecord shown = rec;
    LiveView(shown, now);
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ",
        rec.cancel_requested ? "being stopped"
                             : std::string(JobRecordStateName(shown.state)),
        rec.cancel_requested
            ? "; it cannot be changed"
            : "; only its time limit can change while it runs (its GPUs, "
              "QOS and begin time: `tiresias requeue --hold` stops it and "
              "keeps it waiting, then update it)"));
  }
  if (changes.begin && after.begin != before.begin && rec.attempt > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id,
        " has run before; a begin time applies only to a job that never "
        "started"));
  }
  const std::string what = DescribeChanges(before, after);
  const bool rekey = after.num_gpus != before.num_gpus ||
                     after.gpus_per_node != before.gpus_per_node ||
                     after.qos != before.qos;
  const bool waited = WaitsForBegin(rec);
  rec.spec = std::move(after);
  // Written with the record at the next Commit whatever follows.
  to_write_.Respecified(id);
  if (rekey) {
    Job updated = *job;
    updated.Respecify(SchedulerSpecOf(rec));
    RETURN_IF_ERROR(ReplaceSchedulerJob(updated, now));
  }
  if (rec.spec.begin != before.begin) {
    if (waited) begin_waits_.erase({before.begin, id});
    RETURN_IF_ERROR(WaitForBegin(rec, now));
    if (WaitsForBegin(rec)) {
      // Begins later: its array slot, if it held one, goes to a sibling.
      LeaveArraySlot(rec, /*held=*/true);
    } else if (waited) {
      // Its begin time moved into the past: it runs unless held otherwise,
      // and may take its array's next free slot.
      if (WaitsForArraySlot(rec)) array_slots_.Recheck(rec.array_id);
      if (MayRelease(rec)) RETURN_IF_ERROR(scheduler_->Release(id, now));
    }
  }
  AddEvent(id, now, EventKind::kModified, what);
  pass_wanted_ = true;
  RETURN_IF_ERROR(Commit());
  JobRecord shown = rec;
  shown.events.clear();
  LiveView(shown, now);
  return shown;
}

absl::StatusOr<JobRecord> MasterState::ChangeRunningTimeLimit(JobRecord& rec,
                                                              Seconds limit,
                                                              Seconds now) {
  // Nothing else of the job changes: EnforceTimeLimits reads the record's
  // limit at every check, so a limit below what the job has run already
  // ends it at the next one, as Slurm's does.
  const std::string what =
      absl::StrCat("time limit ", LimitText(rec.spec.time_limit), " -> ",
                   LimitText(limit), " while it runs");
  rec.spec.time_limit = limit;
  // The 90% notice comes again, for the new limit.
  time_limit_told_.erase({rec.id, rec.attempt});
  to_write_.Respecified(rec.id);
  AddEvent(rec.id, now, EventKind::kModified, what);
  RETURN_IF_ERROR(Commit());
  JobRecord shown = rec;
  shown.events.clear();
  LiveView(shown, now);
  return shown;
}

absl::Status MasterState::WaitForBegin(const JobRecord& rec, Seconds now) {
  if (rec.spec.begin <= now || rec.attempt > 0) return absl::OkStatus();
  begin_waits_.insert({rec.spec.begin, rec.id});
  return scheduler_->Hold(rec.id);
}

bool MasterState::WaitsForBegin(const JobRecord& rec) const {
  return rec.spec.begin > Seconds{0} &&
         begin_waits_.contains({rec.spec.begin, rec.id});
}

void MasterState::ReleaseHold(JobId id, Seconds now) {
  if (absl::Status released = scheduler_->Release(id, now); !released.ok()) {
    std::fprintf(stderr, "tiresias master: invariant: job %lld: %s\n",
                 static_cast<long long>(id),
                 std::string(released.message()).c_str());
  }
  pass_wanted_ = true;
}

bool MasterState::MayRelease(const JobRecord& rec) const {
  return !rec.held && !deps_.Waiting(rec.id) && !WaitsForArraySlot(rec) &&
         !WaitsForBegin(rec);
}

void MasterState::ReleaseDueBegins(Seconds now) {
  while (!begin_waits_.empty() && begin_waits_.begin()->first <= now) {
    const JobId id = begin_waits_.begin()->second;
    begin_waits_.erase(begin_waits_.begin());
    auto it = records_.find(id);
    if (it == records_.end() || IsFinal(it->second.state)) continue;
    JobRecord& rec = it->second;
    // A job of a limited array now takes the next free slot first.
    if (WaitsForArraySlot(rec)) array_slots_.Recheck(rec.array_id);
    const bool runs = MayRelease(rec);
    if (runs) ReleaseHold(id, now);  // held by WaitForBegin
    AddEvent(id, now, EventKind::kBegin,
             runs ? "its begin time came"
                  : "its begin time came; still held otherwise");
  }
}

}  // namespace tiresias
