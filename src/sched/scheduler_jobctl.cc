// Scheduler: what a host does to one job between passes (it ended, was
// corrected, removed, held, released or requeued).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "sched/scheduler.h"

namespace tiresias {

absl::StatusOr<uint32_t> Scheduler::IndexOf(JobId id) const {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  return it->second;
}

absl::Status Scheduler::Finish(JobId id, Seconds now, Cluster& cluster) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(id));
  Job& job = jobs_[index];
  if (!job.running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", std::string(JobStateName(job.state())),
                     ", not running"));
  }
  cluster.ReleaseJob(job);
  ReleaseQuota(index);
  Dequeue(index);
  slots_[index].guaranteed = false;
  ClearWakeups(index);
  job.Finish(now);
  dirty_ = true;
  // A CPU-only job's run says nothing of GPU jobs' service.
  if (!job.cpu_only() && policy_->LearnFinished(job, now)) RekeyAll(now);
  return absl::OkStatus();
}

absl::Status Scheduler::Replace(const Job& job, Seconds now) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(job.id()));
  if (jobs_[index].finished() || job.finished()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.id(), ": only an unfinished job can be replaced"));
  }
  Dequeue(index);
  ClearWakeups(index);
  const bool was_running = jobs_[index].running();
  // A record that no longer runs gives back its quota; one that now runs
  // holds GPUs no walk gave it, so it borrows them.
  if (was_running != job.running()) {
    ReleaseQuota(index);
    slots_[index].guaranteed = false;
  }
  const double position = jobs_[index].queue_position();
  jobs_[index] = job;
  // Keeps its place unless the correction changed whether it runs.
  if (std::isnan(job.queue_position())) {
    jobs_[index].set_queue_position(position);
  }
  slots_[index].scheme = placer_->SchemeFor(job);
  slots_[index].qos = QosIndex(job.spec().qos);
  if (job.spec().no_preempt) {
    no_preempt_bits_.insert(index);
  } else {
    no_preempt_bits_.erase(index);
  }
  if (stable_ && was_running != job.running()) {
    Join(index, job.running() ? Tier::kRunning : Tier::kWaiting);
  }
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Remove(JobId id, Seconds now, Cluster& cluster) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(id));
  Job& job = jobs_[index];
  if (job.finished()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " has already finished"));
  }
  if (job.running()) {
    cluster.ReleaseJob(job);
    ReleaseQuota(index);
  }
  Dequeue(index);
  slots_[index].guaranteed = false;
  ClearWakeups(index);
  job.Abandon(now);
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Hold(JobId id) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(id));
  const Job& job = jobs_[index];
  if (!job.waiting()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", std::string(JobStateName(job.state())),
                     "; only a waiting job can be held"));
  }
  if (slots_[index].held) return absl::OkStatus();
  Dequeue(index);
  ClearWakeups(index);
  slots_[index].held = true;
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Release(JobId id, Seconds now) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(id));
  if (!slots_[index].held) return absl::OkStatus();
  slots_[index].held = false;
  if (!jobs_[index].finished()) {
    Enqueue(index, now);
    ScheduleWakeups(index, now);
  }
  dirty_ = true;
  return absl::OkStatus();
}

bool Scheduler::held(JobId id) const {
  auto it = index_of_.find(id);
  return it != index_of_.end() && slots_[it->second].held;
}

absl::Status Scheduler::Requeue(JobId id, Seconds now, Cluster& cluster) {
  ASSIGN_OR_RETURN(const uint32_t index, IndexOf(id));
  if (!jobs_[index].running()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", std::string(JobStateName(jobs_[index].state())),
        ", not running"));
  }
  cluster.ReleaseJob(jobs_[index]);
  ReleaseQuota(index);
  // As a preemption by the walk: back to its queue's waiting tier, first
  // (a CPU-only job: to its place by submit time).
  if (stable_ && !jobs_[index].cpu_only()) {
    Join(index, Tier::kWaiting, /*front=*/true);
  }
  Decisions unused;
  Preempt(index, now, &unused);
  dirty_ = true;
  return absl::OkStatus();
}

}  // namespace tiresias
