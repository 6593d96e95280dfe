#include "sim/gandiva.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/gandiva_node_sets.h"

namespace tiresias {
namespace {

constexpr double kStepSeconds = 10;   // the original's step
constexpr double kSliceSeconds = 60;  // its time slice
constexpr double kEpsilon = 1e-9;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The original switches slices at a step where int(cur_time % 60) == 0.
bool SliceInstant(double t) {
  return std::floor(t - kSliceSeconds * std::floor(t / kSliceSeconds)) == 0;
}

constexpr int kWaiting = -1;   // JobState::running_set of a waiting job
constexpr int kFinished = -2;  // ... and of a finished one

// Simulator-side state of a job, what a suspension or a resume touches:
// one cache line (a step of a busy cluster suspends and resumes hundreds).
// While it runs, its work accrues at `rate` from `since`.
struct alignas(64) JobState {
  double since = 0;
  double remaining = 0;  // seconds of consolidated running left at `since`
  double rate = 1;
  double executed = 0;  // wall seconds run until `since`
  // The time of its one live entry in the completion heap, or infinity.
  // While it runs the entry is at most its completion time (a reminder:
  // when it comes up, the completion time is recomputed), so a job that is
  // suspended and resumed every step does not push an entry every step.
  double heap_time = kInfinity;
  double suspended_at = -1;        // its last suspension
  int32_t running_set = kWaiting;  // the set running it, or the above
  int32_t gpus = 1;
  int32_t preemptions = 0;
  uint32_t seen = 0;  // == the engine's stamp: in a new running prefix
};
static_assert(sizeof(JobState) == 64);

// The rest, seldom touched.
struct JobRecord {
  double spread_rate = 1;  // rate on a set of several servers
  double first_start = -1;
  double end = -1;
};

struct Completion {
  double time;
  uint32_t index;
  bool operator>(const Completion& o) const {
    return time != o.time ? time > o.time : index > o.index;
  }
};

std::vector<int> GpusOf(const std::vector<JobSpec>& specs) {
  std::vector<int> gpus;
  gpus.reserve(specs.size());
  for (const JobSpec& s : specs) gpus.push_back(s.num_gpus);
  return gpus;
}

// Changes to the busy GPUs and running jobs, summed over one Refresh.
struct Delta {
  int64_t busy_gpus = 0;
  int64_t running = 0;
};

class GandivaEngine {
 public:
  GandivaEngine(const std::vector<JobSpec>& specs, const Topology& topology,
                const SimConfig& config, const ProgressFn& progress)
      : specs_(specs),
        config_(config),
        topology_(topology),
        progress_fn_(progress),
        sets_(topology, GpusOf(specs)),
        jobs_(specs.size()),
        records_(specs.size()) {
    for (size_t j = 0; j < specs.size(); ++j) {
      JobState& job = jobs_[j];
      job.remaining = specs[j].duration->count();
      job.gpus = specs[j].num_gpus;
      if (config.placement_slowdown && job.gpus > 1) {
        records_[j].spread_rate =
            1 / config.models.SpreadSlowdown(specs[j].model);
      }
    }
  }

  absl::StatusOr<SimResult> Run() {
    result_.policy = std::string(kGandivaPolicy);
    result_.placement = "node-sets";
    result_.total_gpus = topology_.total_gpus();
    if (specs_.empty()) return std::move(result_);
    result_.first_submit = specs_.front().submit_time.count();
    double t = result_.first_submit;
    Step(t, t);
    while (next_ < specs_.size() || !pending_.empty() || in_sets_ > 0) {
      const double arrival =
          next_ < specs_.size() ? specs_[next_].submit_time.count() : kInfinity;
      double step, prev;
      if (Quiet()) {
        step = arrival;
        DropStale();
        if (!completions_.empty()) {
          const double c = completions_.top().time;
          const double k =
              std::max(1.0, std::ceil((c - t) / kStepSeconds - kEpsilon));
          step = std::min(step, t + k * kStepSeconds);
        }
        if (sets_.num_oversubscribed() > 0) {
          for (int k = 1; k <= kSliceSeconds / kStepSeconds; ++k) {
            const double s = t + k * kStepSeconds;
            if (s >= step) break;
            if (SliceInstant(s)) {
              step = s;
              break;
            }
          }
        }
        if (std::isinf(step)) {
          return absl::InternalError(absl::StrCat(
              "gandiva: stalled at ", t, " s with ", pending_.size(),
              " pending jobs and ", in_sets_, " placed"));
        }
        if (step == arrival) {
          const double m =
              std::ceil((arrival - t) / kStepSeconds - kEpsilon) - 1;
          prev = t + std::max(0.0, m) * kStepSeconds;
        } else {
          prev = step - kStepSeconds;
        }
      } else {
        step = std::min(t + kStepSeconds, arrival);
        prev = t;
      }
      Step(step, prev);
      t = step;
    }
    return Collect();
  }

 private:
  // A step of the original at time `s`; the previous one was at `prev`.
  void Step(double s, double prev) {
    ++result_.passes;
    Integrate(prev);
    // gandiva_node_set_adjust comes first, so the jobs it makes run are the
    // ones credited with the time since the previous step.
    const GandivaNodeSets::AdjustOutcome adjusted = sets_.Adjust(false);
    bool released = adjusted.releases;
    Refresh(prev);
    if (config_.record_timeseries) Record(prev);
    Integrate(s);
    // time_slicing_execute: finish the running jobs whose work is done,
    // switch slices, release empty sets.
    ended_.clear();
    for (DropStale();
         !completions_.empty() && completions_.top().time <= s + kEpsilon;
         DropStale()) {
      const uint32_t j = completions_.top().index;
      completions_.pop();
      JobState& job = jobs_[j];
      job.heap_time = kInfinity;
      if (job.running_set < 0) continue;  // it will push again on resuming
      if (CompletionTime(j) <= s + kEpsilon) {
        ended_.push_back({j, job.running_set});
        Finish(j, s);
      } else {
        PushCompletion(j);
      }
    }
    if (SliceInstant(s)) sets_.RotateOversubscribed();
    for (const auto& [j, set] : ended_) sets_.RemoveJob(j, set);
    if (sets_.ReleaseEmpty()) released = true;
    // New jobs, then (only if a set was released) the pending ones.
    while (next_ < specs_.size() && specs_[next_].submit_time.count() <= s) {
      const uint32_t j = static_cast<uint32_t>(next_++);
      ++result_.events;
      if (sets_.Place(j, specs_[j].num_gpus)) {
        ++in_sets_;
      } else {
        pending_.push_back(j);
        ++pending_by_gpus_[specs_[j].num_gpus];
      }
    }
    if (released) RetryPending();
    Refresh(s);
    if (config_.record_timeseries) Record(s);
    if (progress_fn_ && (result_.passes & 0xfff) == 0) {
      progress_fn_(s, finished_);
    }
    result_.last_end = s;
  }

  // The original walks its pending list while removing the jobs it places,
  // so the job after each placed one is skipped until the next retry.
  void RetryPending() {
    for (size_t i = 0; i < pending_.size(); ++i) {
      const uint32_t j = pending_[i];
      if (!sets_.Place(j, specs_[j].num_gpus)) continue;
      ++in_sets_;
      --pending_by_gpus_[specs_[j].num_gpus];
      pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
    }
  }

  // Whether the steps until the next arrival, completion or slice switch
  // change nothing: the adjustment would be a no-op, and if it makes empty
  // sets (which retries pending jobs) no pending job could be placed.
  bool Quiet() {
    const GandivaNodeSets::AdjustOutcome would = sets_.Adjust(true);
    if (would.changed) return false;
    if (!would.releases || pending_.empty()) return true;
    for (const auto& [gpus, count] : pending_by_gpus_) {
      if (count > 0 && sets_.CanPlace(gpus)) return false;
    }
    return true;
  }

  // Brings the running jobs in line with the node sets: in every set whose
  // jobs changed, the first min(jobs, capacity) run. Changes take effect
  // from `at`.
  void Refresh(double at) {
    sets_.TakeTouched(&touched_);
    if (touched_.empty()) return;
    if (prefix_.size() < sets_.sets().size()) {
      prefix_.resize(sets_.sets().size());
    }
    ++stamp_;
    Delta delta;  // in locals: kept in registers through the loops
    for (int id : touched_) {
      const GandivaNodeSets::NodeSet& set = sets_.set(id);
      for (size_t k = 0; k < RunningCount(set); ++k) {
        jobs_[set.jobs[k]].seen = stamp_;
      }
    }
    for (int id : touched_) {
      for (uint32_t j : prefix_[id]) {
        const JobState& job = jobs_[j];
        if (job.seen != stamp_ && job.running_set != kFinished)
          Leave(j, at, &delta);
      }
    }
    for (int id : touched_) {
      const GandivaNodeSets::NodeSet& set = sets_.set(id);
      std::vector<uint32_t>& prefix = prefix_[id];
      prefix.assign(set.jobs.begin(), set.jobs.begin() + RunningCount(set));
      for (uint32_t j : prefix) {
        JobState& job = jobs_[j];
        if (job.running_set < 0) {
          Enter(j, id, at, &delta);
        } else if (job.running_set != id) {
          job.running_set = id;
          Move(j, at);
        }
      }
    }
    busy_gpus_ += delta.busy_gpus;
    running_ += delta.running;
  }

  static size_t RunningCount(const GandivaNodeSets::NodeSet& set) {
    return std::min(set.jobs.size(), static_cast<size_t>(set.capacity));
  }

  double RateIn(uint32_t j, int set) const {
    if (!config_.placement_slowdown) return 1;
    const double spread = records_[j].spread_rate;
    return spread == 1 || sets_.set(set).servers.size() < 2 ? 1 : spread;
  }

  // When the running job `j` reaches its duration if it keeps running.
  double CompletionTime(uint32_t j) const {
    const JobState& job = jobs_[j];
    return job.since + std::max(0.0, job.remaining) / job.rate;
  }

  void PushCompletion(uint32_t j) {
    JobState& job = jobs_[j];
    if (job.heap_time <= job.since) return;  // an earlier reminder stands
    const double c = job.rate == 1 ? job.since + std::max(0.0, job.remaining)
                                   : CompletionTime(j);
    if (!(c < job.heap_time)) return;
    job.heap_time = c;
    completions_.push(Completion{c, j});
  }

  void Enter(uint32_t j, int set, double at, Delta* delta) {
    JobState& job = jobs_[j];
    if (job.suspended_at == at) {
      // Suspended and resumed at the same instant (a slice switch at one
      // step, a re-deal at the next that brings it back): it never stopped.
      --job.preemptions;
      --result_.preemptions;
    }
    job.running_set = set;
    job.since = at;
    job.rate = RateIn(j, set);
    delta->busy_gpus += job.gpus;
    ++delta->running;
    PushCompletion(j);
  }

  // Time run from `since` to `at`, credited.
  void Credit(uint32_t j, double at) {
    JobState& job = jobs_[j];
    const double ran = at - job.since;
    if (ran > 0 && job.executed == 0) records_[j].first_start = job.since;
    job.executed += ran;
    job.remaining -= ran * job.rate;
    job.since = at;
  }

  // A running job changed sets (migration) and keeps running.
  void Move(uint32_t j, double at) {
    JobState& job = jobs_[j];
    const double rate = RateIn(j, job.running_set);
    if (rate == job.rate) return;
    Credit(j, at);
    job.rate = rate;
    PushCompletion(j);
  }

  // Suspended: it stays in its set, waiting for a slice.
  void Leave(uint32_t j, double at, Delta* delta) {
    JobState& job = jobs_[j];
    const bool ran = at > job.since;
    Credit(j, at);
    job.running_set = kWaiting;
    delta->busy_gpus -= job.gpus;
    --delta->running;
    if (ran) {
      ++job.preemptions;
      ++result_.preemptions;
      job.suspended_at = at;
    }
  }

  void Finish(uint32_t j, double at) {
    JobState& job = jobs_[j];
    Credit(j, at);
    if (records_[j].first_start < 0) records_[j].first_start = at;
    records_[j].end = at;
    job.running_set = kFinished;
    busy_gpus_ -= job.gpus;
    --running_;
    --in_sets_;
    ++finished_;
    ++result_.events;
  }

  void DropStale() {
    while (!completions_.empty() &&
           completions_.top().time !=
               jobs_[completions_.top().index].heap_time) {
      completions_.pop();
    }
  }

  void Integrate(double to) {
    result_.busy_gpu_seconds += busy_gpus_ * (to - integrated_to_);
    integrated_to_ = to;
  }

  void Record(double now) {
    TimePoint point{now, static_cast<int>(busy_gpus_),
                    static_cast<int>(pending_.size() + in_sets_ - running_),
                    static_cast<int>(running_)};
    AppendTimePoint(point, &result_.timeseries);
  }

  absl::StatusOr<SimResult> Collect() {
    result_.jobs.reserve(specs_.size());
    for (uint32_t i = 0; i < specs_.size(); ++i) {
      const JobSpec& spec = specs_[i];
      const JobState& job = jobs_[i];
      if (job.running_set != kFinished) {
        return absl::InternalError(absl::StrCat(
            "gandiva: simulation ended with job ", spec.id, " unfinished"));
      }
      result_.jobs.push_back(
          JobResult{spec.id, spec.num_gpus, spec.model,
                    spec.submit_time.count(), records_[i].first_start,
                    records_[i].end, spec.duration->count(), job.executed,
                    /*overhead=*/0, job.preemptions, /*promotions=*/0,
                    /*final_queue=*/0});
    }
    return std::move(result_);
  }

  const std::vector<JobSpec>& specs_;
  const SimConfig& config_;
  const Topology& topology_;
  const ProgressFn& progress_fn_;
  GandivaNodeSets sets_;
  std::vector<JobState> jobs_;
  std::vector<JobRecord> records_;
  std::vector<std::vector<uint32_t>> prefix_;    // running jobs, by set id
  std::vector<std::pair<uint32_t, int>> ended_;  // (job, its set)
  std::vector<int> touched_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> pending_;
  absl::flat_hash_map<int, int64_t> pending_by_gpus_;
  std::priority_queue<Completion, std::vector<Completion>,
                      std::greater<Completion>>
      completions_;
  size_t next_ = 0;
  int64_t in_sets_ = 0;  // jobs placed in sets, unfinished
  int64_t running_ = 0;  // of those, in a running prefix
  int64_t busy_gpus_ = 0;

  int64_t finished_ = 0;
  double integrated_to_ = 0;
  SimResult result_;
};

}  // namespace

absl::StatusOr<SimResult> SimulateGandiva(const std::vector<JobSpec>& jobs,
                                          const Topology& topology,
                                          const SimConfig& config,
                                          const ProgressFn& progress) {
  GandivaEngine engine(jobs, topology, config, progress);
  return engine.Run();
}

}  // namespace tiresias
