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
        return PriorityKey{0, RemainingSeconds(job, now) * job.num_gpus(),
                           SubmitSeconds(job), 0, job.id()};
      },
      [](const Job& job) { return -1.0 * job.num_gpus(); });
}

}  // namespace tiresias
