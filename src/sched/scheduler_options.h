// What a Scheduler (scheduler.h) is configured with: its queues and their
// order, PROMOTEKNOB, fair share, the released simulator's timings; and the
// priority levels (QOS) a host may set.
#ifndef TIRESIAS_SCHED_SCHEDULER_OPTIONS_H_
#define TIRESIAS_SCHED_SCHEDULER_OPTIONS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sched/queues.h"
#include "sched/vcs.h"

namespace tiresias {

// How jobs are ordered inside one of the K queues (multi-level-queue
// policies only: tiresias-l, tiresias-g).
enum class QueueOrder {
  // The released Tiresias simulator's (run_sim.py, dlas_sim_jobs): a queue
  // is a list. A job joins its tail when it arrives, is demoted or is
  // promoted; after each pass the queue's waiting jobs move behind its
  // running ones, those just preempted first. So a running job keeps its
  // place and is never preempted by a peer of its own queue; the queue's
  // waiting jobs take what its running jobs leave, in list order
  // (tiresias-g: by Gittins index, then list order). Preemption comes from
  // a higher queue, or from the queue a job was just demoted into.
  kStable,
  // The paper's prose read literally: within a queue, FIFO by first start,
  // re-sorted every pass, so a waiting job that first started earlier
  // preempts a running peer (tiresias-g: its index, which changes while
  // jobs run, re-sorts running jobs too).
  kStartTime,
};
// "stable" or "start-time".
absl::StatusOr<QueueOrder> ParseQueueOrder(std::string_view text);
std::string_view QueueOrderName(QueueOrder order);

struct SchedulerOptions {
  QueueConfig queues = QueueConfig::PaperDefault();
  QueueOrder queue_order = QueueOrder::kStable;
  // The released Tiresias simulator's demotion timing (run_sim.py,
  // dlas_sim_jobs), for `simulate --original-simulator`. A job whose
  // attained service crosses its queue's bound is demoted at the first pass
  // at or after that instant, one queue per pass, several in submit order;
  // and the scheduler asks for a pass when the original would: after each
  // pass, at (bound - executed seconds) / GPUs seconds later, rounded down.
  // That subtracts seconds from GPU-seconds, so for a multi-GPU job the
  // pass comes late and the demotion waits for another event. Off: a job is
  // demoted at the exact instant it crosses.
  bool original_demotion_timing = false;
  // PROMOTEKNOB: a waiting job whose wait since it last ran reaches
  // knob x its executed time goes back to queue 0, its executed time reset.
  // Infinity turns it off.
  double promote_knob = std::numeric_limits<double>::infinity();
  // The released simulator's PROMOTEKNOB (run_sim.py, dlas_sim_jobs'
  // last_pending_time), for `simulate --original-simulator`: the wait is
  // every wait since the job's last promotion (from when it had run since
  // then: Job::earlier_waits), not only the current one.
  bool original_promotion_wait = false;
  uint64_t seed = 1;
  // Per-user fair share for the whole cluster (without VCs; with them,
  // each VC's own VcSpec::fair_per_user): jobs are ordered first by their
  // user's attained GPU service (JobSpec::user; the GPU-seconds of the
  // user's unfinished jobs) in steps of `fair_quantum` GPU-seconds, then
  // by the policy. So a user's share does not grow with the number of
  // jobs they submit.
  bool fair_per_user = false;
  double fair_quantum = kDefaultFairQuantum;
};

// A priority level (QOS): see Scheduler::SetQos. Its priority is within
// +-kMaxQosPriority.
inline constexpr int kMaxQosPriority = 1000;
struct QosSpec {
  std::string name;
  int priority = 0;  // higher runs first; 0: as a job without a QOS
  // GPUs one user's running jobs of it may hold at once.
  int max_gpus_per_user = kUnlimited;
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_SCHEDULER_OPTIONS_H_
