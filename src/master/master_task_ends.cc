// MasterState: what a task an agent reports means for its job (HandleTask):
// progress and profiles, a launch fully running, and each kind of end
// (LaunchTable::ClassifyEnd) applied in one switch (OnPartEnded): a finish,
// a failure, a failed gang start, a system stop, a stop that reached every
// part. The protocol around it (register, heartbeat, reconcile, failure
// detection): master_agents.cc.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "master/master_state.h"

namespace tiresias {
namespace {

// Lower-case name of a stop reason, for events: "fenced", "shutdown", ...
std::string StopReasonWord(v1::StopReason reason) {
  std::string name = v1::StopReason_Name(reason);
  constexpr std::string_view kPrefix = "STOP_REASON_";
  if (name.starts_with(kPrefix)) name.erase(0, kPrefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

// " (out of memory: ...)" for a task the kernel killed at its cgroup's
// memory limit; "" otherwise.
std::string OutOfMemory(const v1::TaskStatus& task) {
  return task.out_of_memory()
             ? " (out of memory: killed at its cgroup's memory limit)"
             : "";
}

}  // namespace

void MasterState::HandleTask(
    int64_t node_id, const v1::TaskStatus& task, Seconds now,
    google::protobuf::RepeatedPtrField<v1::TaskRef>* acks) {
  const LaunchTable::Applied applied = table_.Apply(node_id, task, now);
  using Kind = LaunchTable::Applied::Kind;
  bool ack = applied.ack;
  if (applied.kind == Kind::kNotAPart && applied.ack &&
      table_.Find({task.task().job_id(), task.task().attempt()}) == nullptr) {
    // An ended orphan is done with, once it has said whether a job whose
    // launch the master forgot or gave up ended; not if that could not be
    // read (asked again at its next report).
    ack = LateOwnEnd(node_id, task, now).ok();
  }
  if (ack) *acks->Add() = task.task();
  if (applied.kind == Kind::kNotAPart || applied.kind == Kind::kAlreadyEnded) {
    return;
  }
  Launch& launch = *applied.launch;
  NoteUsage(launch, task, applied.kind == Kind::kEnded);
  if (applied.kind == Kind::kProgress) {
    // A long task's profile, read once its recording stopped (repeated in
    // every report: kept only if better).
    if (task.has_profile()) OnProfile(launch, task.profile(), now);
    MaybeMarkRunning(launch, now);
    return;
  }
  // A run shorter than the heartbeat interval is marked running at its
  // reported start first (LaunchTable::Apply), with its "started" or
  // "resumed" event; its end is processed after.
  if (applied.started) MaybeMarkRunning(launch, now);
  pass_wanted_ = true;  // its GPUs are free
  if (task.has_profile()) OnProfile(launch, task.profile(), now);
  OnPartEnded(launch, task, now);  // may erase `launch`
}

void MasterState::NoteUsage(Launch& launch, const v1::TaskStatus& task,
                            bool ended) {
  const int rank = task.task().rank();
  if (rank < 0 || rank >= static_cast<int>(launch.parts.size())) return;
  Part& part = launch.parts[rank];
  // Readings only grow; a late, older one is no news.
  if (task.has_cpu_seconds()) {
    part.cpu_seconds = std::max(part.cpu_seconds, task.cpu_seconds());
  }
  if (task.has_memory_peak_bytes()) {
    part.memory_peak_bytes =
        std::max(part.memory_peak_bytes, task.memory_peak_bytes());
  }
  if (ended) AddPartUsage(launch.job, part);
}

void MasterState::AddPartUsage(JobId job, const Part& part) {
  if (part.cpu_seconds == 0 && part.memory_peak_bytes == 0) return;
  auto it = records_.find(job);
  if (it == records_.end()) return;
  it->second.cpu_seconds += part.cpu_seconds;
  it->second.max_memory_bytes =
      std::max(it->second.max_memory_bytes, part.memory_peak_bytes);
  MarkDirty(job);
}

void MasterState::OnProfile(Launch& launch,
                            const v1::TrafficProfile& reported, Seconds now) {
  const JobId job = launch.job;
  auto it = records_.find(job);
  if (it == records_.end()) return;
  JobRecord& rec = it->second;
  JobProfile measured;
  measured.periodic = reported.periodic();
  measured.measured_job_id = job;
  auto finite = [](double v) { return std::isfinite(v) && v >= 0; };
  if (measured.periodic) {
    // An agent's figures: a skew outside [0, 1] or a non-finite number
    // would mislead placement, so the profile is not kept.
    if (!reported.has_tensor_skew() || !finite(reported.tensor_skew()) ||
        reported.tensor_skew() > 1) {
      return;
    }
    measured.tensor_skew = reported.tensor_skew();
    if (reported.has_iteration_s() && finite(reported.iteration_s())) {
      measured.iteration_s = reported.iteration_s();
    }
    if (reported.has_bytes_per_iteration() &&
        finite(reported.bytes_per_iteration())) {
      measured.bytes_per_iteration = reported.bytes_per_iteration();
    }
    if (reported.has_messages_per_iteration() &&
        finite(reported.messages_per_iteration())) {
      measured.messages_per_iteration = reported.messages_per_iteration();
    }
  }
  RecordPlacementRun(launch, measured, now);
  // An inherited profile gives way to the job's own; the job's own only to
  // a better one (another rank: the worker of a parameter-server job).
  if (rec.profile && rec.profile->measured_job_id == job &&
      !BetterProfile(measured, *rec.profile)) {
    return;
  }
  const std::optional<double> old_skew = PlacementSkew(rec.profile);
  rec.profile = measured;
  absl::Status saved =
      store_->SaveProfile(job, JobSignature(rec.spec), measured);
  AddEvent(job, now, EventKind::kProfiled,
           measured.periodic
               ? absl::StrFormat("tensor skew %.4f, iteration %.4f s, %.0f "
                                 "bytes per iteration%s",
                                 *measured.tensor_skew,
                                 measured.iteration_s.value_or(0),
                                 measured.bytes_per_iteration.value_or(0),
                                 saved.ok() ? "" : " (not stored)")
               : absl::StrCat("not periodic: no skew",
                              saved.ok() ? "" : " (not stored)"));
  const std::optional<double> skew = PlacementSkew(rec.profile);
  if (skew == old_skew) return;
  if (const Job* current = scheduler_->Find(job); current != nullptr) {
    Job updated = *current;
    updated.set_measured_skew(skew);
    // Found just above: Replace cannot fail.
    ReplaceSchedulerJob(updated, now).IgnoreError();
    pass_wanted_ = true;
  }
}

void MasterState::MaybeMarkRunning(Launch& launch, Seconds now) {
  if (launch.phase != Phase::kActive || launch.all_running) return;
  // Being re-adopted after a master restart: AdoptOnto decides, and calls
  // this again for a launch that was still starting.
  if (restart_.Adopting(launch.job)) return;
  // The job runs once its last part does: the latest reported start.
  std::optional<Seconds> start;
  for (const Part& part : launch.parts) {
    if (!part.running()) return;
    if (part.start_time && (!start || *part.start_time > *start)) {
      start = part.start_time;
    }
  }
  launch.all_running = true;
  auto rec = records_.find(launch.job);
  if (rec == records_.end()) return;
  if (rec->second.failed_starts != 0) {
    rec->second.failed_starts = 0;  // this launch ran: the streak is over
    MarkDirty(launch.job);
  }
  if (!start) start = now;
  // Every launch that runs says so, with its attempt ("started attempt 1
  // on ...", "resumed attempt 2 on ..."), also one whose record was left
  // running by the launch before it: an event list never shows an attempt
  // preempted or ended that it did not show start.
  const bool ran_before = rec->second.first_start_time.has_value();
  if (rec->second.state == JobRecordState::kRunning) {
    AddEvent(launch.job, std::min(*start, now),
             ran_before ? EventKind::kResumed : EventKind::kStarted,
             table_.Describe(launch));
    MarkDirty(launch.job);
    return;
  }
  const Job* job = scheduler_->Find(launch.job);
  if (job != nullptr && job->running()) {
    // Executed time counts from the reported start, never before the
    // decision nor after now (clocks differ).
    const Seconds shifted =
        std::max(job->run_start(), std::min(*start, now));
    if (shifted > job->run_start()) {
      // The job was just found running in the scheduler: Replace cannot
      // fail.
      ReplaceSchedulerJob(ShiftRunStart(*job, shifted), now).IgnoreError();
      pass_wanted_ = true;  // its demotion instant moved
    }
    start = shifted;
  }
  MoveJob(rec->second, JobRecordState::kRunning);
  if (!rec->second.first_start_time) rec->second.first_start_time = *start;
  // "resumed": it ran before this launch (and resumes from its checkpoint).
  AddEvent(launch.job, *start,
           ran_before ? EventKind::kResumed : EventKind::kStarted,
           table_.Describe(launch));
  MarkDirty(launch.job);
}

void MasterState::AccountStop(const Launch& launch) {
  if (!launch.all_running || launch.stop_reason != v1::STOP_REASON_PREEMPT) {
    return;
  }
  const std::optional<Seconds> end = launch.LatestEnd();
  const Job* job = scheduler_->Find(launch.job);
  // Only while the scheduler still holds the stop it decided (not started
  // again, promoted or rebuilt since).
  if (!end || job == nullptr || !job->waiting() ||
      job->last_stop() != launch.stop_decided) {
    return;
  }
  const Seconds now = clock_->NowUnixSeconds();
  const Seconds at = std::min(*end, now);
  if (at <= job->last_stop()) return;
  // Found waiting in the scheduler just above: Replace cannot fail.
  ReplaceSchedulerJob(ShiftStop(*job, at), now).IgnoreError();
  pass_wanted_ = true;
}

void MasterState::OnStartFailed(Launch& launch, const v1::TaskStatus& task,
                                Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  JobRecord& rec = records_.at(launch.job);
  const int failures = ++rec.failed_starts;
  MarkDirty(launch.job);
  const int rank = task.task().rank();
  const NodeInfo* node = table_.FindNode(launch.parts[rank].node_id);
  const std::string where = absl::StrCat(
      "rank ", rank, " on ",
      node == nullptr ? absl::StrCat("node ", launch.parts[rank].node_id)
                      : node->record.name,
      " failed to start (exit code ", kStartFailedExitCode, "; `tiresias logs ",
      launch.job, " --rank ", rank, " --attempt ", launch.attempt,
      "` says why)");
  const bool give_up = failures >= kMaxFailedStarts;
  table_.Stop(launch,
              give_up ? v1::STOP_REASON_CANCEL : v1::STOP_REASON_PREEMPT);
  if (give_up) {
    // Remove only fails for a job the scheduler does not hold: then there
    // is nothing to remove.
    scheduler_->Remove(launch.job, now, cluster()).IgnoreError();
    Finalize(rec, JobRecordState::kFailed, now, kStartFailedExitCode,
             absl::StrCat(where, "; ", failures,
                          " failed starts in a row, giving up"));
  } else {
    const Job* job = scheduler_->Find(launch.job);
    if (job != nullptr && job->running()) {
      cluster().ReleaseJob(*job);
      ReplaceSchedulerJob(UndoRun(*job, now), now).IgnoreError();  // found
    }
    // A job that ran before counts its restart when it starts again.
    if (!rec.first_start_time) ++rec.restarts;
    MoveJob(rec, rec.first_start_time ? JobRecordState::kPreempted
                                      : JobRecordState::kPending);
    AddEvent(
        launch.job, now, EventKind::kStartFailed,
        absl::StrCat(where, "; stopping the other parts, back to waiting (",
                     failures, " of ", kMaxFailedStarts,
                     " failed starts in a row)"));
    MarkDirty(launch.job);
    pass_wanted_ = true;
  }
  if (launch.AllEnded()) table_.Erase(key);
}

void MasterState::OnSystemStop(Launch& launch, int rank, Seconds end,
                               Seconds now, const std::string& why) {
  JobRecord& rec = records_.at(launch.job);
  const Job* job = scheduler_->Find(launch.job);
  const bool ran = launch.all_running;
  if (job != nullptr && job->running()) {
    cluster().ReleaseJob(*job);
    const Seconds at = std::clamp(end, job->run_start(), now);
    // Counted up to the reported end if it ran; not at all if it never
    // fully started. The job was just found running: Replace cannot fail.
    ReplaceSchedulerJob(ran ? StopRunAt(*job, at) : UndoRun(*job, now), now)
        .IgnoreError();
    launch.stop_decided = ran ? at : now;
  } else {
    launch.stop_decided = now;
  }
  table_.Stop(launch, v1::STOP_REASON_PREEMPT);
  if (ran) {
    MoveJob(rec, JobRecordState::kPreempted);
    ++rec.preemptions;
    launch.preemption_counted = true;
  } else {
    MoveJob(rec, rec.first_start_time ? JobRecordState::kPreempted
                                      : JobRecordState::kPending);
  }
  AddEvent(launch.job, now, EventKind::kPreempted,
           absl::StrCat(table_.Describe(launch),
                        ran ? "" : " (while starting: it had not run yet)",
                        "; ", rank >= 0 ? absl::StrCat("rank ", rank, " ") : "",
                        "stopped by the system: ", why));
  MarkDirty(launch.job);
  pass_wanted_ = true;
}

void MasterState::ClassifyEndedGang(Launch& launch, Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  JobRecord& rec = records_.at(launch.job);
  const auto [rank, code] = *launch.first_failure;
  const Job* job = scheduler_->Find(launch.job);
  if (launch.system_stopped) {
    // Its failure followed a rank stopped by the system: a preemption.
    const std::optional<Seconds> end = launch.LatestEnd();
    if (job != nullptr && job->running()) {
      cluster().ReleaseJob(*job);
      const Seconds at = std::clamp(end.value_or(now), job->run_start(), now);
      // Found running just above: Replace cannot fail.
      ReplaceSchedulerJob(StopRunAt(*job, at), now).IgnoreError();
    }
    MoveJob(rec, JobRecordState::kPreempted);
    ++rec.preemptions;
    AddEvent(launch.job, now, EventKind::kPreempted,
             absl::StrCat(table_.Describe(launch),
                          "; a rank was stopped by the "
                          "system and rank ",
                          rank, " then exited with code ", code));
    MarkDirty(launch.job);
    pass_wanted_ = true;
  } else {
    // Remove only fails for a job the scheduler does not hold.
    scheduler_->Remove(launch.job, now, cluster()).IgnoreError();
    Finalize(rec, JobRecordState::kFailed, now, code,
             absl::StrCat("rank ", rank, " exit code ", code));
  }
  table_.Erase(key);
}

void MasterState::MaybeFinishCancel(JobId job, Seconds now,
                                    const std::string& detail) {
  auto rec = records_.find(job);
  const Job* scheduled = scheduler_->Find(job);
  if (rec == records_.end() || IsFinal(rec->second.state) ||
      (scheduled != nullptr && !scheduled->finished()) || table_.AnyLive(job)) {
    return;  // still scheduled (not cancelled), or a task still runs
  }
  Finalize(rec->second,
           rec->second.timeout_requested ? JobRecordState::kTimeout
                                         : JobRecordState::kCancelled,
           now, std::nullopt, detail);
}

void MasterState::OnPartEnded(Launch& launch, const v1::TaskStatus& task,
                              Seconds now) {
  const LaunchKey key = launch.key();
  auto rec_it = records_.find(launch.job);
  const bool job_open =
      rec_it != records_.end() && !IsFinal(rec_it->second.state);
  using EndKind = LaunchTable::EndKind;
  const EndKind kind = LaunchTable::ClassifyEnd(launch, task, job_open,
                                                restart_.Adopting(launch.job));
  const int rank = task.task().rank();
  const int code = task.has_exit_code() ? task.exit_code() : -1;
  switch (kind) {
    case EndKind::kGangWaits:
    case EndKind::kStopWaits:
    case EndKind::kFinishWaits:
      return;
    case EndKind::kGangDecided:
      ClassifyEndedGang(launch, now);  // erases it
      return;
    case EndKind::kOwnEndWhileStopping:
      OnOwnEndWhileStopping(launch, now);  // erases it
      return;
    case EndKind::kStopEnded: {
      AccountStop(launch);
      const bool cancelling = launch.stop_reason == v1::STOP_REASON_CANCEL;
      table_.Erase(key);
      if (cancelling) MaybeFinishCancel(key.first, now, "its tasks stopped");
      return;
    }
    case EndKind::kFinished: {
      // Accounted up to the latest reported end (clamped to its run).
      Seconds end = now;
      const Job* job = scheduler_->Find(launch.job);
      const std::optional<Seconds> reported = launch.LatestEnd();
      if (reported && job != nullptr && job->running()) {
        end = std::max(job->run_start(), std::min(*reported, now));
      }
      // Finish only fails for a job the scheduler does not run: then it has
      // nothing to free.
      scheduler_->Finish(launch.job, end, cluster()).IgnoreError();
      Finalize(rec_it->second, JobRecordState::kFinished, now, 0,
               "every task exited 0");
      table_.Erase(key);
      return;
    }
    case EndKind::kStartFailed:
      OnStartFailed(launch, task, now);  // may erase `launch`
      return;
    case EndKind::kSystemStop:
      // Nobody here asked for this stop: the agent shut down or was
      // fenced, or the task's status was lost.
      OnSystemStop(
          launch, rank, task.has_end_time() ? Seconds{task.end_time()} : now,
          now,
          absl::StrCat(task.state() == v1::TASK_STATE_EXITED
                           ? "its exit status was lost"
                       : task.stop_reason() == v1::STOP_REASON_UNSPECIFIED
                           ? "its task vanished from its agent"
                           : StopReasonWord(task.stop_reason()),
                       task.has_exit_code()
                           ? absl::StrCat(", exit code ", task.exit_code())
                           : ""));
      if (launch.AllEnded()) {
        AccountStop(launch);
        table_.Erase(key);
      }
      return;
    case EndKind::kRankFailed:
      // A gang's other ranks are stopped first: whether the job failed or
      // was preempted is decided once they have all ended.
      launch.first_failure = std::make_pair(rank, code);
      table_.Stop(launch, v1::STOP_REASON_PREEMPT);
      AddEvent(launch.job, now, EventKind::kRankFailed,
               absl::StrCat("rank ", rank, " exited with code ", code,
                            OutOfMemory(task), "; stopping the other ranks"));
      MarkDirty(launch.job);  // no longer live (JobRecord::live_attempt)
      return;
    case EndKind::kFailed:
      // Remove only fails for a job the scheduler does not hold.
      scheduler_->Remove(launch.job, now, cluster()).IgnoreError();
      Finalize(
          rec_it->second, JobRecordState::kFailed, now,
          task.has_exit_code() ? std::optional<int>(code) : std::nullopt,
          absl::StrCat("rank ", rank, " exit code ", code, OutOfMemory(task)));
      table_.Stop(launch, v1::STOP_REASON_CANCEL);
      if (launch.AllEnded()) table_.Erase(key);
      return;
  }
}

}  // namespace tiresias
