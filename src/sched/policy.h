// A scheduling policy: how jobs are ordered, and a few traits that tell the
// scheduler (scheduler.h) how to act on that order. One file per policy;
// adding one is adding a file and a line in registry.cc.
//
// Policies are pure: a key depends only on the job and `now`, plus state the
// policy learnt from jobs it was told finished (Tiresias-G's distribution).
#ifndef TIRESIAS_SCHED_POLICY_H_
#define TIRESIAS_SCHED_POLICY_H_

#include <compare>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "sched/queues.h"

namespace tiresias {

// Lower sorts first (runs first). `id` breaks every remaining tie, so two
// jobs never compare equal.
struct PriorityKey {
  double k0 = 0, k1 = 0, k2 = 0, k3 = 0;
  JobId id = 0;
  // The scheduler's grouping, compared before the rest (0 without it):
  // the job's priority level (Scheduler::SetQos), then its user's attained
  // GPU service in quanta (per-user fair share), as one number so that a
  // key stays 48 bytes: -priority x 2^40 + quanta (quanta < 2^40; both
  // integers, so the sum is exact).
  double group = 0;
  std::partial_ordering operator<=>(const PriorityKey& o) const {
    if (auto c = group <=> o.group; c != 0) return c;
    if (auto c = k0 <=> o.k0; c != 0) return c;
    if (auto c = k1 <=> o.k1; c != 0) return c;
    if (auto c = k2 <=> o.k2; c != 0) return c;
    if (auto c = k3 <=> o.k3; c != 0) return c;
    return id <=> o.id;
  }
  bool operator==(const PriorityKey&) const = default;
};

struct PolicyTraits {
  // May stop running jobs to run higher-priority ones.
  bool preemptive = false;
  // Stops at the first job that does not fit instead of skipping it.
  bool head_of_line_blocking = false;
  // Uses the K queues: demotion on crossing a queue bound, PROMOTEKNOB.
  bool multi_level_queues = false;
  // Keys of running jobs change as they run (las, srtf, srsf, tiresias-g
  // under QueueOrder::kStartTime); see Policy::DriftSlope.
  bool keys_drift_while_running = false;
  // Reads JobSpec::duration (oracle baselines); jobs without one are refused.
  bool needs_duration = false;
  // Orders every job of a queue, running or waiting, by Key at every
  // event, as the released simulator's Tiresias-G does (its index, with
  // PolicyOptions::gittins_original_index): never the stable discipline,
  // and every Schedule call is a full pass.
  bool resorts_every_event = false;
  // Placement scheme used unless the caller overrides it.
  std::string_view default_placement = "consolidate";
};

struct PolicyOptions {
  QueueConfig queues = QueueConfig::PaperDefault();
  // Tiresias-G: job sizes (GPU-seconds) of past jobs, e.g. yarn-gput1000.csv.
  std::vector<double> gittins_samples;
  // Tiresias-G: also learn from jobs as they finish. Default: only when no
  // samples were given.
  bool gittins_learn_from_finished = false;
  // Tiresias-G: below this many samples, order as Tiresias-L does.
  int gittins_min_samples = 10;
  // Tiresias-G: the released simulator's index (OriginalGittinsIndex in
  // gittins.h) and order instead of the paper's: every job of a queue, the
  // last one too, by its index (highest first), then by submit time,
  // re-sorted at every event; from the given samples only (no learning).
  bool gittins_original_index = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual const PolicyTraits& traits() const = 0;
  // The job's priority at `now`. Only called for unfinished jobs.
  virtual PriorityKey Key(const Job& job, Seconds now) const = 0;
  // How a running job's key changes while it keeps running: only k1 may
  // change, at this many units per second (srtf: -1, srsf: -GPUs, las:
  // +GPUs), fixed for the run; 0 if the key is constant; NaN if it changes
  // any other way (the scheduler then recomputes it before every pass).
  virtual double DriftSlope(const Job& running_job) const { return 0; }
  // QueueOrder::kStable (multi-level-queue policies): the order of a
  // queue's waiting jobs, lower first; ties keep the queue's list order.
  // Running jobs keep their place whatever this says.
  virtual double WaitingRank(const Job& job, Seconds now) const { return 0; }
  // Tells the policy `job` finished. Returns true when every key may have
  // changed (the scheduler then recomputes them all).
  virtual bool LearnFinished(const Job& job, Seconds now) { return false; }
  // The K queues changed (Scheduler::Retune): a policy that keeps
  // anything per queue rebuilds it; what it learnt stays.
  virtual void SetQueues(const QueueConfig& queues) {}
};

// Builds the policy registered under `name` (see registry.cc for the list).
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                   const PolicyOptions& options);
// Every registered name, in the order they are documented.
std::vector<std::string> PolicyNames();

// Shared by tiresias-l and tiresias-g under QueueOrder::kStartTime: FIFO by
// first start, then jobs that never ran by submit time.
inline double StartOrderClass(const Job& job) { return job.first_start() ? 0 : 1; }
inline double StartOrderTime(const Job& job) {
  return job.first_start() ? job.first_start()->count()
                           : job.spec().submit_time.count();
}

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_POLICY_H_
