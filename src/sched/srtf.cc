// SRTF (oracle): preemptive, shortest remaining time first.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewSrtf(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "srtf",
      PolicyTraits{.preemptive = true,
                   .keys_drift_while_running = true,
                   .needs_duration = true},
      [](const Job& job, Seconds now) {
        return PriorityKey{0, RemainingSeconds(job, now), SubmitSeconds(job),
                           0, job.id()};
      },
      [](const Job&) { return -1.0; });
}

}  // namespace tiresias
