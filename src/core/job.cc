#include "core/job.h"

#include <cassert>

namespace tiresias {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kPending: return "pending";
    case JobState::kRunning: return "running";
    case JobState::kPreempted: return "preempted";
    case JobState::kFinished: return "finished";
  }
  return "unknown";
}

void Job::Start(Seconds now, std::vector<GpuId> gpus, int cpu_server) {
  assert(waiting());
  assert(static_cast<int>(gpus.size()) == num_gpus());
  assert(cpu_only() == (cpu_server >= 0));
  if (!first_start_) first_start_ = now;
  // A wait counts once the job has run since its last promotion (before
  // that the released simulator's last_pending_time does not grow).
  if (executed_base_ > Seconds{0}) earlier_waits_ += now - last_stop_;
  run_start_ = now;
  state_ = JobState::kRunning;
  gpus_ = std::move(gpus);
  cpu_server_ = cpu_server;
}

void Job::StopRun(Seconds now) {
  assert(running());
  executed_base_ += now - run_start_;
  total_executed_base_ += now - run_start_;
  last_stop_ = now;
  gpus_.clear();
  cpu_server_ = -1;
}

void Job::Preempt(Seconds now) {
  StopRun(now);
  state_ = JobState::kPreempted;
  ++preemptions_;
}

void Job::Finish(Seconds now) {
  StopRun(now);
  state_ = JobState::kFinished;
  finish_time_ = now;
}

void Job::Abandon(Seconds now) {
  if (running()) StopRun(now);
  state_ = JobState::kFinished;
  finish_time_ = now;
}

void Job::Promote(Seconds now) {
  assert(waiting());
  executed_base_ = Seconds{0};
  earlier_waits_ = Seconds{0};
  last_stop_ = now;
  queue_ = 0;
  ++promotions_;
}

}  // namespace tiresias
