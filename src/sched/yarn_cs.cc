// YARN-CS: the production default the paper compares against. Non-preemptive
// FIFO by submit time with head-of-line blocking: when the oldest waiting job
// does not fit, nothing behind it starts. Consolidated placement.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewYarnCs(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "yarn-cs", PolicyTraits{.head_of_line_blocking = true},
      [](const Job& job, Seconds) {
        return PriorityKey{SubmitSeconds(job), 0, 0, 0, job.id()};
      });
}

}  // namespace tiresias
