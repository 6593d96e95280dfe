// Discretized 2D-Gittins index (Tiresias-G). Uses a job-size distribution.
//
// Same queues as Tiresias-L. The rank of a job in queue i (not the last) is
// its Gittins index with quantum D_i = queue i's upper bound, highest first;
// in the last queue D is infinite and the index reduces to LAS: least
// attained service first. Under the stable queue order (the default; see
// QueueOrder in scheduler.h) the rank orders only a queue's waiting jobs,
// so an index that changes while jobs run never preempts a peer; under
// start-time it orders every job of the queue. Ties (and too few samples
// to trust the distribution) fall back to Tiresias-L's order.
//
// The distribution is the given samples and, when learning is on, the sizes
// (GPU-seconds) of jobs as they finish, summarized as at most 2,000
// quantiles; the per-queue tables are rebuilt each time the sample count
// doubles, so learning costs O(log n) rebuilds.
#include <cmath>
#include <limits>
#include <optional>

#include "sched/gittins.h"
#include "sched/policies.h"

namespace tiresias {
namespace {

class TiresiasGittins final : public Policy {
 public:
  explicit TiresiasGittins(const PolicyOptions& options)
      : queues_(options.queues),
        samples_(options.gittins_samples),
        learn_(!options.gittins_original_index &&
               (options.gittins_learn_from_finished ||
                options.gittins_samples.empty())),
        min_samples_(std::max(1, options.gittins_min_samples)) {
    if (options.gittins_original_index) {
      original_.emplace(options.gittins_samples);
    } else {
      Rebuild();
    }
  }

  std::string_view name() const override { return "tiresias-g"; }
  const PolicyTraits& traits() const override {
    static const PolicyTraits kTraits{.preemptive = true,
                                      .multi_level_queues = true,
                                      .keys_drift_while_running = true,
                                      .default_placement = "profiled"};
    static const PolicyTraits kOriginal{.preemptive = true,
                                        .multi_level_queues = true,
                                        .keys_drift_while_running = true,
                                        .resorts_every_event = true,
                                        .default_placement = "profiled"};
    return original_ ? kOriginal : kTraits;
  }

  PriorityKey Key(const Job& job, Seconds now) const override {
    if (original_) {
      // run_sim.py: queue.sort(key=(rank, -submit_time), reverse=True).
      return PriorityKey{static_cast<double>(job.queue()),
                         -original_->Lookup(job.AttainedGpuSeconds(now)),
                         job.spec().submit_time.count(), 0, job.id()};
    }
    return PriorityKey{static_cast<double>(job.queue()), Rank(job, now),
                       StartOrderClass(job), StartOrderTime(job), job.id()};
  }

  double WaitingRank(const Job& job, Seconds now) const override {
    return Rank(job, now);
  }

  double DriftSlope(const Job& job) const override {
    if (original_) {
      return original_->empty() ? 0 : std::numeric_limits<double>::quiet_NaN();
    }
    if (tables_.empty()) return 0;  // Tiresias-L order: fixed while running
    // The last queue orders by attained service, which grows by GPUs per
    // second; elsewhere the index is a step function of it.
    return queues_.is_last(job.queue()) ? job.num_gpus()
                                        : std::numeric_limits<double>::quiet_NaN();
  }

  void SetQueues(const QueueConfig& queues) override {
    queues_ = queues;
    if (!original_) Rebuild();  // the original's one quantum stays
  }

  bool LearnFinished(const Job& job, Seconds now) override {
    if (!learn_) return false;
    samples_.push_back(job.num_gpus() * job.TotalExecuted(now).count());
    if (static_cast<int>(samples_.size()) < min_samples_ ||
        samples_.size() < 2 * built_with_) {
      return false;
    }
    Rebuild();
    return true;
  }

 private:
  // Lower runs first: the index, highest first, in a bounded queue; the
  // attained service in the last; 0 (Tiresias-L's order) without a usable
  // distribution.
  double Rank(const Job& job, Seconds now) const {
    if (tables_.empty()) return 0;
    const int q = job.queue();
    const double attained = job.AttainedGpuSeconds(now);
    return queues_.is_last(q) ? attained : -tables_[q].Lookup(attained);
  }

  void Rebuild() {
    tables_.clear();
    built_with_ = samples_.size();
    if (static_cast<int>(samples_.size()) < min_samples_) return;
    GittinsDistribution dist(
        GittinsDistribution::Quantiles(samples_, kMaxDistributionPoints));
    for (int q = 0; q + 1 < queues_.num_queues(); ++q) {
      tables_.push_back(dist.MakeTable(queues_.upper_bound(q)));
    }
    // The last queue orders by attained service; keep a placeholder so that
    // tables_ is non-empty exactly when the distribution is usable.
    if (tables_.empty()) tables_.push_back(dist.MakeTable(1.0));
  }

  // Enough to resolve the distribution's shape; bounds a rebuild's cost.
  static constexpr size_t kMaxDistributionPoints = 2000;

  QueueConfig queues_;
  std::vector<double> samples_;
  bool learn_;
  int min_samples_;
  size_t built_with_ = 0;
  std::vector<GittinsDistribution::Table> tables_;  // one per bounded queue
  std::optional<OriginalGittinsIndex> original_;    // gittins_original_index
};

}  // namespace

std::unique_ptr<Policy> NewTiresiasGittins(const PolicyOptions& options) {
  return std::make_unique<TiresiasGittins>(options);
}

}  // namespace tiresias
