// Smallest-first: preemptive, fewest GPUs first, then by submit time.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewSmallestFirst(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "smallest-first", PolicyTraits{.preemptive = true},
      [](const Job& job, Seconds) {
        return PriorityKey{static_cast<double>(job.num_gpus()),
                           SubmitSeconds(job), 0, 0, job.id()};
      });
}

}  // namespace tiresias
