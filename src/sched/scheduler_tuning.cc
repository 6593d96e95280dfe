// Scheduler::Retune: an operator's new K queues, PROMOTEKNOB and queue
// order on a live scheduler (`tiresias tune --apply`).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "sched/scheduler.h"

namespace tiresias {

absl::Status Scheduler::Retune(const Tuning& tuning, Seconds now) {
  retuned_.clear();
  if (!(tuning.promote_knob > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PROMOTEKNOB ", tuning.promote_knob, ": expected a positive number or inf"));
  }
  std::vector<uint32_t>& unfinished = scratch_indices_;
  unfinished.clear();
  for (uint32_t index = 0; index < jobs_.size(); ++index) {
    if (!jobs_[index].finished()) unfinished.push_back(index);
  }
  // In the order the old settings put them, so that the new lists keep it.
  std::sort(unfinished.begin(), unfinished.end(), [&](uint32_t a, uint32_t b) {
    return slots_[a].key < slots_[b].key;
  });
  for (uint32_t index : unfinished) {
    Dequeue(index);
    ClearWakeups(index);
  }
  options_.queues = tuning.queues;
  options_.promote_knob = tuning.promote_knob;
  options_.queue_order = tuning.queue_order;
  const bool multi_level = policy_->traits().multi_level_queues;
  stable_ = options_.queue_order == QueueOrder::kStable && multi_level &&
            !policy_->traits().resorts_every_event;
  policy_->SetQueues(options_.queues);
  for (uint32_t index : unfinished) {
    Job& job = jobs_[index];
    const int old_queue = job.queue();
    if (multi_level && !job.cpu_only()) {
      job.set_queue(options_.queues.QueueFor(job.AttainedGpuSeconds(now)));
    }
    // Each at the tail of its queue, in the old order. A running job moved
    // down joins as a demoted one does (behind the queue's waiting jobs,
    // moved among its running ones at the end of the next pass: it is in
    // that pass's requeued list); others keep their tier.
    Tier tier = job.running() ? Tier::kRunning : Tier::kWaiting;
    if (job.queue() != old_queue) {
      retuned_.push_back(job.id());
      if (job.running() && job.queue() > old_queue) tier = Tier::kJoined;
    }
    Join(index, tier);
    Enqueue(index, now);
    ScheduleWakeups(index, now);
  }
  dirty_ = true;
  return absl::OkStatus();
}

}  // namespace tiresias
