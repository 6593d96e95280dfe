// SJF (oracle): non-preemptive, shortest duration first, skipping jobs that
// do not fit.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewSjf(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "sjf", PolicyTraits{.needs_duration = true}, [](const Job& job, Seconds) {
        return PriorityKey{job.spec().duration->count(), SubmitSeconds(job), 0,
                           0, job.id()};
      });
}

}  // namespace tiresias
