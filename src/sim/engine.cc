#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/cluster.h"
#include "core/status_macros.h"
#include "place/model_skew.h"
#include "sim/gandiva.h"

namespace tiresias {
namespace {

// Simulator-side state of a job: how much work is left and how fast it
// goes. The scheduler's Job holds the rest.
struct Progress {
  double remaining_work = 0;  // seconds of consolidated running left
  double overhead_left = 0;   // restore seconds left in the current run
  double slowdown = 1;        // current run-time multiplier
  double segment_start = 0;   // start of the current run
  double overhead_total = 0;
  int moves = 0;  // preemptions not counted (SimConfig::count_moves)
  // Preemptions in a row that came before the job's restore ended: it
  // made no progress (see kMaxBarrenPreemptions).
  int stalled_runs = 0;
  bool spread = false;        // the current (or last) run spans servers
  uint32_t version = 0;       // bumps on every stop; stale heap entries skip
  // Its model's restore seconds, looked up when first needed (NaN: not
  // yet).
  double restore_cost = std::numeric_limits<double>::quiet_NaN();
};

// Settings whose quanta are shorter than a restore (queue bounds of a few
// GPU-seconds with PROMOTEKNOB) can pass jobs back and forth for ever, each
// preempted before its restore ends. A single job starved that way is
// legal (LAS does it to big jobs under load while others finish), so the
// run fails only when this many preemptions in a row cost a restore and
// no job finished or progressed in between: nothing ever will.
constexpr int64_t kMaxBarrenPreemptions = 20'000;

struct Completion {
  double time;
  uint32_t version;
  uint32_t index;
  bool operator>(const Completion& o) const {
    return time != o.time ? time > o.time : index > o.index;
  }
};

class Engine {
 public:
  Engine(const std::vector<JobSpec>& specs, const Topology& topology,
         const SimConfig& config, Scheduler scheduler,
         std::optional<PackLimitClassifier> learner, const ProgressFn& progress)
      : specs_(specs),
        config_(config),
        cluster_(topology),
        scheduler_(std::move(scheduler)),
        learner_(std::move(learner)),
        progress_fn_(progress),
        progress_(specs.size()),
        started_in_(specs.size(), 0) {
    consecutive_ = true;
    for (uint32_t i = 0; i < specs.size() && consecutive_; ++i) {
      consecutive_ = specs[i].id == specs[0].id + i;
    }
    if (consecutive_) return;
    index_of_.reserve(specs.size());
    for (uint32_t i = 0; i < specs.size(); ++i) index_of_[specs[i].id] = i;
  }

  absl::StatusOr<SimResult> Run() {
    SimResult result;
    result.policy = std::string(scheduler_.policy().name());
    result.placement = std::string(scheduler_.placer().name());
    result.total_gpus = cluster_.total_gpus();
    if (specs_.empty()) return result;
    result.first_submit = specs_.front().submit_time.count();
    double now = result.first_submit;
    size_t next = 0;
    int64_t finished = 0;
    while (true) {
      double t = std::numeric_limits<double>::infinity();
      if (next < specs_.size()) t = specs_[next].submit_time.count();
      DropStale();
      if (!completions_.empty()) t = std::min(t, completions_.front().time);
      t = std::min(t, scheduler_.NextWakeup().count());
      if (std::isinf(t)) break;
      result.busy_gpu_seconds += cluster_.busy_gpus() * (t - now);
      now = t;

      while (next < specs_.size() &&
             specs_[next].submit_time.count() <= now) {
        RETURN_IF_ERROR(scheduler_.Submit(specs_[next++], Seconds{now}));
        ++result.events;
      }
      for (DropStale();
           !completions_.empty() && completions_.front().time <= now;
           DropStale()) {
        const uint32_t index = completions_.front().index;
        PopCompletion();
        Progress& p = progress_[index];
        p.overhead_total += p.overhead_left;
        p.overhead_left = 0;
        ++p.version;
        RETURN_IF_ERROR(
            scheduler_.Finish(specs_[index].id, Seconds{now}, cluster_));
        ++result.events;
        ++finished;
        barren_preemptions_ = 0;
        if (learner_) RETURN_IF_ERROR(Learn(index, &result));
      }
      if (scheduler_.NextWakeup().count() <= now) ++result.events;
      Decisions decisions = scheduler_.Schedule(Seconds{now}, cluster_);
      if (!decisions.empty()) ++result.passes;
      Apply(decisions, now, &result);
      RETURN_IF_ERROR(thrashing_);
      if (config_.record_timeseries) Record(now, &result);
      if (progress_fn_ && (result.events & 0x3fff) == 0) {
        progress_fn_(now, finished);
      }
    }
    result.last_end = now;
    if (learner_) {
      result.learnt_pack_limit = learner_->pack_limit();
      result.pack_limit_samples = learner_->fitted_samples();
      result.pack_limit_fit = std::string(PackLimitFitName(learner_->fit()));
    }
    return Collect(std::move(result));
  }

 private:
  // Adds the finished job `index` to the PACKLIMIT classifier; every
  // pack_limit_refresh_jobs samples refits it and, when PACKLIMIT crossed a
  // model's skew, gives the scheduler a `profiled` placer with the new value.
  absl::Status Learn(uint32_t index, SimResult* result) {
    const JobSpec& spec = specs_[index];
    const std::optional<double> skew = ModelSkew(spec.model);
    if (!skew) return absl::OkStatus();  // nothing to learn from
    const double slowdown = config_.placement_slowdown
                                ? config_.models.SpreadSlowdown(spec.model)
                                : 1.0;
    RETURN_IF_ERROR(
        learner_->AddSlowdown(*skew, progress_[index].spread, slowdown));
    if (learner_->samples().size() % config_.pack_limit_refresh_jobs != 0) {
      return absl::OkStatus();
    }
    const double before = learner_->pack_limit();
    learner_->Refresh();
    // A new placer (and the scheduler's O(jobs) re-read of every job's
    // scheme) only when some model's side of PACKLIMIT changed: the limit
    // moves a little at every refit.
    const double after = learner_->pack_limit();
    bool moved = false;
    for (const ModelInfo& m : BuiltinModels()) {
      moved |= (m.skew > before) != (m.skew > after);
    }
    if (!moved) return absl::OkStatus();
    PlacementOptions options = config_.placement_options;
    options.pack_limit = learner_->pack_limit();
    ASSIGN_OR_RETURN(std::unique_ptr<Placer> placer,
                     MakePlacer(kProfiledPlacement, options));
    scheduler_.SetPlacer(std::move(placer));
    ++result->pack_limit_updates;
    return absl::OkStatus();
  }

  bool Live(const Completion& c) const {
    return c.version == progress_[c.index].version;
  }
  void PushCompletion(const Completion& c) {
    completions_.push_back(c);
    std::push_heap(completions_.begin(), completions_.end(),
                   std::greater<Completion>());
  }
  void PopCompletion() {
    std::pop_heap(completions_.begin(), completions_.end(),
                  std::greater<Completion>());
    completions_.pop_back();
  }
  void DropStale() {
    while (!completions_.empty() && !Live(completions_.front())) {
      PopCompletion();
      if (stale_ > 0) --stale_;
    }
  }
  // Rebuilds the heap from its live entries once the stale are at least
  // half (a job preempted many times would otherwise leave an entry per
  // run, and every pop would walk a heap mostly of them). The order the
  // live ones come up in is (time, index), whatever the heap's shape.
  void DropAllStale() {
    if (stale_ < 64 || 2 * stale_ < completions_.size()) return;
    std::erase_if(completions_, [&](const Completion& c) { return !Live(c); });
    std::make_heap(completions_.begin(), completions_.end(),
                   std::greater<Completion>());
    stale_ = 0;
  }

  // The index of job `id` in specs_: by arithmetic where the ids are
  // consecutive (a trace's are), else from index_of_.
  uint32_t IndexOf(JobId id) const {
    if (consecutive_) return static_cast<uint32_t>(id - specs_.front().id);
    return index_of_.find(id)->second;
  }

  double RestoreCost(uint32_t index) {
    double& cost = progress_[index].restore_cost;
    if (std::isnan(cost)) {
      cost = config_.models.PreemptionCostSeconds(specs_[index].model);
    }
    return cost;
  }

  void Apply(const Decisions& decisions, double now, SimResult* result) {
    // A job both stopped and started by this pass only moved.
    if (++apply_ == 0) {  // wrapped: no stamp may match by chance
      std::fill(started_in_.begin(), started_in_.end(), 0);
      apply_ = 1;
    }
    started_.clear();
    for (const StartDecision& start : decisions.started) {
      const uint32_t index = IndexOf(start.job);
      started_.push_back(index);
      started_in_[index] = apply_;
    }
    for (JobId id : decisions.preempted) {
      const uint32_t index = IndexOf(id);
      Progress& p = progress_[index];
      const double elapsed = now - p.segment_start;
      const double paid = std::min(elapsed, p.overhead_left);
      p.overhead_total += paid;
      p.overhead_left = 0;
      p.remaining_work =
          std::max(0.0, p.remaining_work - (elapsed - paid) / p.slowdown);
      ++p.version;
      ++stale_;  // its completion, pushed when it started
      if (!config_.count_moves && started_in_[index] == apply_) {
        ++p.moves;
      } else {
        ++result->preemptions;
        const bool progressed = elapsed - paid > 0;
        p.stalled_runs = progressed ? 0 : p.stalled_runs + 1;
        barren_preemptions_ = progressed ? 0 : barren_preemptions_ + 1;
        if (barren_preemptions_ >= kMaxBarrenPreemptions && thrashing_.ok()) {
          thrashing_ = absl::FailedPreconditionError(absl::StrCat(
              kMaxBarrenPreemptions,
              " preemptions in a row came before the job's restore ended, "
              "with no job finishing in between (the last: job ",
              id, ", ", specs_[index].num_gpus, " GPUs, preempted ",
              p.stalled_runs, " times in a row before its ", RestoreCost(index),
              " s restore): these settings never let a job progress (queue "
              "bounds shorter than a restore?)"));
        }
      }
    }
    for (size_t k = 0; k < decisions.started.size(); ++k) {
      const StartDecision& start = decisions.started[k];
      const uint32_t index = started_[k];
      const JobSpec& spec = specs_[index];
      Progress& p = progress_[index];
      if (!start.resumed) p.remaining_work = spec.duration->count();
      p.segment_start = now;
      p.overhead_left =
          start.resumed && config_.preemption_cost ? RestoreCost(index) : 0;
      p.spread = SpansServers(start.gpus);
      p.slowdown = config_.placement_slowdown && p.spread
                       ? config_.models.SpreadSlowdown(spec.model)
                       : 1.0;
      PushCompletion(
          Completion{now + p.overhead_left + p.remaining_work * p.slowdown,
                     p.version, index});
    }
    DropAllStale();
  }

  bool SpansServers(const std::vector<GpuId>& gpus) const {
    const Topology& topo = cluster_.topology();
    for (GpuId g : gpus) {
      if (topo.ServerOf(g) != topo.ServerOf(gpus.front())) return true;
    }
    return false;
  }

  void Record(double now, SimResult* result) {
    TimePoint point{now, cluster_.busy_gpus(), scheduler_.num_waiting(),
                    scheduler_.num_running()};
    AppendTimePoint(point, &result->timeseries);
  }

  absl::StatusOr<SimResult> Collect(SimResult result) {
    result.jobs.reserve(specs_.size());
    for (uint32_t i = 0; i < specs_.size(); ++i) {
      const Job& job = *scheduler_.Find(specs_[i].id);
      if (!job.finished()) {
        return absl::InternalError(absl::StrCat(
            "simulation ended with job ", job.id(), " ",
            std::string(JobStateName(job.state()))));
      }
      const double end = job.finish_time().count();
      result.jobs.push_back(JobResult{
          job.id(), job.num_gpus(), job.spec().model,
          job.spec().submit_time.count(), job.first_start()->count(), end,
          job.spec().duration->count(), job.TotalExecuted(Seconds{end}).count(),
          progress_[i].overhead_total, job.preemptions() - progress_[i].moves,
          job.promotions(), job.queue(), job.spec().vc});
      result.overhead_seconds += progress_[i].overhead_total;
    }
    return result;
  }

  const std::vector<JobSpec>& specs_;
  const SimConfig& config_;
  Cluster cluster_;
  Scheduler scheduler_;
  std::optional<PackLimitClassifier> learner_;  // learn_pack_limit only
  const ProgressFn& progress_fn_;
  std::vector<Progress> progress_;
  // Apply's: the indices of the jobs started, and per job the last Apply
  // that started it.
  std::vector<uint32_t> started_, started_in_;
  uint32_t apply_ = 0;
  absl::Status thrashing_;  // set at kMaxBarrenPreemptions
  // Preemptions in a row before a restore ended, since a job last
  // finished or progressed.
  int64_t barren_preemptions_ = 0;
  bool consecutive_ = false;  // specs_' ids: the first's, + 1, + 2, ...
  absl::flat_hash_map<JobId, uint32_t> index_of_;  // else
  // A heap (least first) of completions, one live per running job: a
  // preempted job's stays, stale (its version moved on), until it comes
  // up or the stale outnumber the live (DropAllStale).
  std::vector<Completion> completions_;
  size_t stale_ = 0;  // at most this many of completions_ are stale
};

}  // namespace

void AppendTimePoint(const TimePoint& point, std::vector<TimePoint>* series) {
  if (!series->empty()) {
    const TimePoint& last = series->back();
    if (last.busy_gpus == point.busy_gpus &&
        last.pending_jobs == point.pending_jobs &&
        last.running_jobs == point.running_jobs) {
      return;
    }
    if (last.time == point.time) series->pop_back();
  }
  series->push_back(point);
}

absl::StatusOr<SimResult> Simulate(const std::vector<JobSpec>& jobs,
                                   const Topology& topology,
                                   const SimConfig& config,
                                   const ProgressFn& progress) {
  RETURN_IF_ERROR(CheckSimulatorPolicy(config.policy));
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].duration || !(jobs[i].duration->count() >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", jobs[i].id,
          ": expected a non-negative duration to simulate"));
    }
    if (jobs[i].num_gpus > topology.total_gpus()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", jobs[i].id, " needs ", jobs[i].num_gpus,
          " GPUs; the cluster has ", topology.total_gpus()));
    }
    if (i > 0 && jobs[i].submit_time < jobs[i - 1].submit_time) {
      return absl::InvalidArgumentError("jobs must be sorted by submit time");
    }
  }
  // Gandiva time-slices GPUs, which the Scheduler cannot: its own engine.
  if (config.policy == kGandivaPolicy) {
    if (!config.vcs.empty()) {
      return absl::InvalidArgumentError(
          "gandiva runs on its own engine, without virtual clusters");
    }
    return SimulateGandiva(jobs, topology, config, progress);
  }
  PolicyOptions policy_options = config.policy_options;
  policy_options.queues = config.scheduler.queues;
  ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                   MakePolicy(config.policy, policy_options));
  const std::string placement =
      config.placement.empty()
          ? std::string(policy->traits().default_placement)
          : config.placement;
  ASSIGN_OR_RETURN(std::unique_ptr<Placer> placer,
                   MakePlacer(placement, config.placement_options));
  std::optional<PackLimitClassifier> learner;
  if (config.learn_pack_limit && placement == kProfiledPlacement) {
    if (config.pack_limit_refresh_jobs < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("pack limit refresh every ",
                       config.pack_limit_refresh_jobs,
                       " jobs: expected at least 1"));
    }
    PackLimitOptions options = config.pack_limit_learning;
    options.start = config.placement_options.pack_limit;
    ASSIGN_OR_RETURN(learner, PackLimitClassifier::Create(options));
  }
  Scheduler scheduler(std::move(policy), std::move(placer), config.scheduler);
  RETURN_IF_ERROR(scheduler.SetVcs(config.vcs, topology));
  Engine engine(jobs, topology, config, std::move(scheduler),
                std::move(learner), progress);
  return engine.Run();
}

std::vector<std::string> SimulatorPolicyNames() {
  std::vector<std::string> names = PolicyNames();
  names.emplace_back(kGandivaPolicy);
  return names;
}

absl::Status CheckSimulatorPolicy(std::string_view name) {
  if (name == kGandivaPolicy) return absl::OkStatus();
  return MakePolicy(name, {}).status();
}

void AssignModels(std::vector<JobSpec>* jobs, const ModelTable& models,
                  uint64_t seed) {
  if (models.models().empty()) return;
  std::mt19937_64 gen(seed);
  for (JobSpec& job : *jobs) {
    if (!job.model.empty()) continue;
    job.model = models.models()[gen() % models.models().size()].name;
  }
}

std::vector<JobSpec> RemoveUnfittable(std::vector<JobSpec>* jobs,
                                      const Topology& topology) {
  std::vector<JobSpec> kept, removed;
  for (JobSpec& job : *jobs) {
    (job.num_gpus > topology.total_gpus() ? removed : kept)
        .push_back(std::move(job));
  }
  *jobs = std::move(kept);
  return removed;
}

}  // namespace tiresias
