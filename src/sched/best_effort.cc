// Best-effort: the paper's second testbed baseline beside YARN-CS.
// Non-preemptive FIFO by submit time; a job starts as soon as enough GPUs are
// free anywhere in the cluster (no consolidation: `pack` takes a best-fit
// server if one has room, else the fullest servers, spanning), and a job that
// cannot start does not hold back the jobs behind it.
#include "sched/policies.h"
#include "sched/simple_policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewBestEffort(const PolicyOptions&) {
  return std::make_unique<SimplePolicy>(
      "best-effort", PolicyTraits{.default_placement = "pack"},
      [](const Job& job, Seconds) {
        return PriorityKey{SubmitSeconds(job), 0, 0, 0, job.id()};
      });
}

}  // namespace tiresias
