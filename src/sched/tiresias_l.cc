// Discretized 2D-LAS (Tiresias-L). Needs no job knowledge.
//
// Jobs are ordered by queue (the scheduler demotes a job the instant its
// attained service crosses its queue's bound); within a queue, by the
// scheduler's queue order (QueueOrder in scheduler.h): by default the
// original simulator's list, where running jobs keep their place and waiting
// ones follow in the order they joined; under start-time, by first start
// time, with jobs that never ran after those that did, by submit time. A job
// that does not fit is skipped so that smaller jobs behind it can run.
#include "sched/policies.h"

namespace tiresias {
namespace {

class TiresiasLas final : public Policy {
 public:
  std::string_view name() const override { return "tiresias-l"; }
  const PolicyTraits& traits() const override {
    static const PolicyTraits kTraits{.preemptive = true,
                                      .multi_level_queues = true,
                                      .default_placement = "profiled"};
    return kTraits;
  }
  PriorityKey Key(const Job& job, Seconds now) const override {
    return PriorityKey{static_cast<double>(job.queue()), StartOrderClass(job),
                       StartOrderTime(job), job.spec().submit_time.count(),
                       job.id()};
  }
};

}  // namespace

std::unique_ptr<Policy> NewTiresiasLas(const PolicyOptions&) {
  return std::make_unique<TiresiasLas>();
}

}  // namespace tiresias
