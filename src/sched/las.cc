// Continuous (undiscretized) 2D-LAS: preemptive, least attained service
// (GPU-seconds) first, re-evaluated at every scheduling event. Without
// Tiresias' queues, jobs of equal service take turns at every event: the
// preemption churn that discretization avoids.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewLas(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "las",
      PolicyTraits{.preemptive = true, .keys_drift_while_running = true},
      [](const Job& job, Seconds now) {
        return PriorityKey{0, job.AttainedGpuSeconds(now), SubmitSeconds(job),
                           0, job.id()};
      },
      [](const Job& job) { return 1.0 * job.num_gpus(); });
}

}  // namespace tiresias
