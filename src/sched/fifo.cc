// FIFO with skipping: non-preemptive, by submit time; a job that does not fit
// is skipped so that later, smaller jobs can start.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewFifo(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "fifo", PolicyTraits{}, [](const Job& job, Seconds) {
        return PriorityKey{SubmitSeconds(job), 0, 0, 0, job.id()};
      });
}

}  // namespace tiresias
