// Test helper: a cluster and a scheduler driven by hand, one instant at a
// time, so tests can check decisions against timelines worked out on paper.
#ifndef TIRESIAS_SCHED_TESTING_HARNESS_H_
#define TIRESIAS_SCHED_TESTING_HARNESS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/node_filter.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace tiresias::testing {

struct HarnessOptions {
  std::string policy = "tiresias-l";
  std::string placement = "count";
  SchedulerOptions scheduler;
  PolicyOptions policy_options;
};

class Harness {
 public:
  Harness(Topology topology, HarnessOptions options)
      : cluster_(std::move(topology)),
        scheduler_(*MakePolicy(options.policy, [&] {
          PolicyOptions p = options.policy_options;
          p.queues = options.scheduler.queues;
          return p;
        }()),
                   *MakePlacer(options.placement), options.scheduler) {}

  void Submit(JobId id, int gpus, double submit,
              std::optional<double> duration = std::nullopt,
              std::string model = "") {
    JobSpec spec{id, gpus, Seconds{submit}, std::nullopt, std::move(model)};
    if (duration) spec.duration = Seconds{*duration};
    ASSERT_TRUE(scheduler_.Submit(spec, Seconds{submit}).ok());
  }
  // A job of `nodes` servers with `per_node` GPUs each (core/shape.h).
  void SubmitShaped(JobId id, int nodes, int per_node, double submit) {
    JobSpec spec{.id = id,
                 .num_gpus = nodes * per_node,
                 .submit_time = Seconds{submit},
                 .nodes = nodes,
                 .gpus_per_node = per_node};
    ASSERT_TRUE(scheduler_.Submit(spec, Seconds{submit}).ok());
  }
  // A job that may run only on the servers `filter` admits.
  void SubmitFiltered(JobId id, int gpus, double submit, NodeFilter filter) {
    JobSpec spec{
        .id = id,
        .num_gpus = gpus,
        .submit_time = Seconds{submit},
        .filter = std::make_shared<const NodeFilter>(std::move(filter))};
    ASSERT_TRUE(scheduler_.Submit(spec, Seconds{submit}).ok());
  }
  // A job whose servers run nothing else (JobSpec::exclusive).
  void SubmitExclusive(JobId id, int gpus, double submit) {
    JobSpec spec{.id = id,
                 .num_gpus = gpus,
                 .submit_time = Seconds{submit},
                 .exclusive = true};
    ASSERT_TRUE(scheduler_.Submit(spec, Seconds{submit}).ok());
  }
  Decisions At(double t) { return scheduler_.Schedule(Seconds{t}, cluster_); }
  void Finish(JobId id, double t) {
    ASSERT_TRUE(scheduler_.Finish(id, Seconds{t}, cluster_).ok());
  }
  const Job& job(JobId id) const { return *scheduler_.Find(id); }
  double next_wakeup() const { return scheduler_.NextWakeup().count(); }
  Cluster& cluster() { return cluster_; }
  Scheduler& scheduler() { return scheduler_; }

 private:
  Cluster cluster_;
  Scheduler scheduler_;
};

// Sorted ids of the jobs a pass started / preempted.
inline std::vector<JobId> Started(const Decisions& d) {
  std::vector<JobId> ids;
  for (const StartDecision& s : d.started) ids.push_back(s.job);
  std::sort(ids.begin(), ids.end());
  return ids;
}
inline std::vector<JobId> Preempted(const Decisions& d) {
  std::vector<JobId> ids = d.preempted;
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Tiresias-L with two queues, the bound at 100 GPU-seconds: the job
// control, CPU-only and QOS tests' scheduler.
inline HarnessOptions TiresiasL100() {
  HarnessOptions o;
  o.policy = "tiresias-l";
  o.scheduler.queues = *QueueConfig::Create({100});
  return o;
}

// The VC tests' scheduler: Tiresias-L with one threshold at 3,600
// GPU-seconds, placement `placement`.
inline HarnessOptions VcOptions(std::string placement = "consolidate") {
  HarnessOptions o;
  o.policy = "tiresias-l";
  o.placement = std::move(placement);
  o.scheduler.queues = *QueueConfig::Create({3600});
  return o;
}
// Submits a plain job of `gpus` GPUs in VC `vc` at `at`.
inline void SubmitInVc(Harness& h, JobId id, int gpus, double at,
                       std::string vc) {
  JobSpec spec{.id = id, .num_gpus = gpus, .submit_time = Seconds{at}};
  spec.vc = std::move(vc);
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{at}).ok());
}

}  // namespace tiresias::testing

#endif  // TIRESIAS_SCHED_TESTING_HARNESS_H_
