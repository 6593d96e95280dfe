// SRSF (oracle): preemptive, shortest remaining service first, where
// service = remaining time x GPUs (GPU-seconds).
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewSrsf(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "srsf",
      PolicyTraits{.preemptive = true,
                   .keys_drift_while_running = true,
                   .needs_duration = true},
      [](const Job& job, Seconds now) {
        return PriorityKey{RemainingSeconds(job, now) * job.num_gpus(),
                           SubmitSeconds(job), 0, 0, job.id()};
      });
}

}  // namespace tiresias
