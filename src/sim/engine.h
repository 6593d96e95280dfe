// The trace-driven simulator: a discrete-event engine that replays jobs
// against the scheduling core (src/sched) exactly as the master daemon calls
// it, in simulated time.
//
// Events are arrivals, completions and the instants the policy asks for
// (demotions, promotions); between events every running job progresses
// continuously. Completions sit in a heap (stale entries are skipped), so an
// event costs O(log jobs) plus the scheduler's pass.
//
// Performance models (perf_model.h), each switchable off:
//  - preemption cost: a resumed job first spends its model's checkpoint and
//    restore time holding its GPUs without progress;
//  - placement slowdown: a job spanning servers runs `spread_slowdown` times
//    slower for as long as that placement lasts.
#ifndef TIRESIAS_SIM_ENGINE_H_
#define TIRESIAS_SIM_ENGINE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/topology.h"
#include "place/pack_limit.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "sched/vcs.h"
#include "sim/perf_model.h"

namespace tiresias {

struct SimConfig {
  std::string policy = "tiresias-l";
  // Placement scheme; empty means the policy's default.
  std::string placement;
  SchedulerOptions scheduler;  // queues, PROMOTEKNOB, seed
  PolicyOptions policy_options;  // its `queues` is overridden by `scheduler`
  PlacementOptions placement_options;
  ModelTable models = ModelTable::Builtin();
  bool preemption_cost = true;
  bool placement_slowdown = true;
  // Whether a running job stopped and started again on other GPUs in one
  // pass (the walk set it aside, then placed it elsewhere) counts as a
  // preemption. The released simulator re-places every job at every pass
  // and counts only those left out (`simulate --original-simulator`: off).
  bool count_moves = true;
  // Learn PACKLIMIT as the run goes (runs whose placement is `profiled`;
  // others ignore it): starting from placement_options.pack_limit, every
  // finished job of a model with a known skew (place/model_skew.h) adds a
  // sample, labelled by its model's spread_slowdown in `models` whether it
  // ran spread or consolidated (the simulator knows what spreading would
  // have cost; with placement_slowdown off every job costs 1 and PACKLIMIT
  // stays put). Every `pack_limit_refresh_jobs` samples the classifier
  // (place/pack_limit.h) refits and, when PACKLIMIT crossed a model's skew,
  // the scheduler gets a `profiled` placer with the new value. `pack_limit_learning.start` is ignored.
  bool learn_pack_limit = false;
  PackLimitOptions pack_limit_learning;
  int pack_limit_refresh_jobs = 10;
  // Record the cluster time series (busy GPUs, pending and running jobs at
  // every change). Off saves memory when only the summary is wanted.
  bool record_timeseries = false;
  // Virtual clusters (sched/vcs.h); empty: none. Each job's JobSpec::vc
  // names its own ("" the first).
  std::vector<VcSpec> vcs;
};

// One finished job. Times in seconds.
struct JobResult {
  JobId id;
  int gpus;
  std::string model;
  double submit;
  double first_start;
  double end;
  double duration;  // from the trace: consolidated run time
  double executed;  // time holding GPUs, overhead and slowdown included
  double overhead;  // of `executed`, seconds spent restoring after preemption
  int preemptions;
  int promotions;
  int final_queue;
  std::string vc = "";  // its virtual cluster (JobSpec::vc)
  double jct() const { return end - submit; }
  // Time the job was not running: waiting to start and while preempted.
  double queueing() const { return jct() - executed; }
};

struct TimePoint {
  double time;
  int busy_gpus;
  int pending_jobs;
  int running_jobs;
};

// Appends `point` to a time series unless nothing changed since the last
// point; a second point at the same instant replaces the first.
void AppendTimePoint(const TimePoint& point, std::vector<TimePoint>* series);

struct SimResult {
  std::string policy;
  std::string placement;
  int total_gpus = 0;
  std::vector<JobResult> jobs;  // in trace order
  std::vector<TimePoint> timeseries;  // when recorded
  double busy_gpu_seconds = 0;  // integral of busy GPUs over time
  double first_submit = 0;
  double last_end = 0;
  int64_t events = 0;      // arrivals + completions + wakeups
  int64_t passes = 0;      // scheduling passes that decided something
  int64_t preemptions = 0;
  double overhead_seconds = 0;
  // With learn_pack_limit under `profiled`: the last PACKLIMIT, the
  // samples it was fitted on, the fit's state (PackLimitFitName) and how
  // many times it moved across a model's skew (and so changed the placer).
  std::optional<double> learnt_pack_limit;
  int64_t pack_limit_samples = 0;
  std::string pack_limit_fit;
  int64_t pack_limit_updates = 0;
};

// Called now and then with (simulated time reached, jobs finished); for a
// progress line. May be empty.
using ProgressFn = std::function<void(double sim_time, int64_t finished)>;

// Replays `jobs` (sorted by submit time; every job must have a duration and
// fit the cluster) on `topology`. Fails on a bad configuration (unknown
// policy or placement) or a job the scheduler refuses; FailedPrecondition
// when settings never let a job progress (preempted 200 times in a row
// before its restore ended: queue bounds shorter than a restore). Policy
// "gandiva" runs on its own engine (gandiva.h), which ignores the placement and
// the scheduler options.
absl::StatusOr<SimResult> Simulate(const std::vector<JobSpec>& jobs,
                                   const Topology& topology,
                                   const SimConfig& config,
                                   const ProgressFn& progress = {});

// Every policy the simulator runs: the scheduler's (PolicyNames()) and the
// simulator-only baselines (gandiva).
std::vector<std::string> SimulatorPolicyNames();
// OK if the simulator runs `name`; else the registry's error, naming the
// known policies.
absl::Status CheckSimulatorPolicy(std::string_view name);

// Gives every job without a model one drawn uniformly from `models` with a
// generator seeded by `seed` (the Philly trace names none).
void AssignModels(std::vector<JobSpec>* jobs, const ModelTable& models,
                  uint64_t seed);

// Splits off the jobs that can never run on `topology` (more GPUs than it
// has). Returns them; `jobs` keeps the rest, in order.
std::vector<JobSpec> RemoveUnfittable(std::vector<JobSpec>* jobs,
                                      const Topology& topology);

}  // namespace tiresias

#endif  // TIRESIAS_SIM_ENGINE_H_
