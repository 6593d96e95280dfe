// WalkLeft: the waiting jobs a preemptive walk has yet to visit, by GPU
// count, and which of them it already knows it cannot place. The walk
// ends as soon as what is left of the cluster fits none of them, or none
// of them could be placed at all (not only when no waiting job fits), and
// passes over a known-unplaceable job from its GPU count alone, without
// reading the job.
//
// "Cannot place" is the walk's rule for one scheme (Scheduler::PlaceInWalk):
// a job needing at least as many GPUs as one that could not be placed even
// with every lower running job set aside cannot be placed either, unless
// only the other fits in one server. It is applied here only while every
// job left is placed by the one scheme of the placer and by no rule of its
// own (`uniform`).
#ifndef TIRESIAS_SCHED_WALK_LEFT_H_
#define TIRESIAS_SCHED_WALK_LEFT_H_

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace tiresias {

class WalkLeft {
 public:
  static constexpr int kNone = std::numeric_limits<int>::max();

  // From GPU count -> jobs (all counts positive). `largest`: GPUs of the
  // largest server. O(distinct counts).
  void Start(const std::map<int, int>& jobs_by_gpus, bool uniform,
             int largest) {
    counts_.assign(jobs_by_gpus.begin(), jobs_by_gpus.end());
    first_ = 0;
    last_ = counts_.size();
    uniform_ = uniform;
    largest_ = largest;
    failed_small_ = failed_large_ = kNone;
  }
  // A job visited (it was counted).
  void Visit(int gpus) {
    const size_t i = Find(gpus);
    assert(i < counts_.size() && counts_[i].first == gpus &&
           counts_[i].second > 0);
    --counts_[i].second;
    while (first_ < counts_.size() && counts_[first_].second == 0) ++first_;
    while (last_ > 0 && counts_[last_ - 1].second == 0) --last_;
  }
  // A job to visit again (displaced in the walk); `own`: placed by a rule
  // of its own, so nothing more is known unplaceable from counts.
  void Add(int gpus, bool own) {
    const size_t i = Find(gpus);
    if (i == counts_.size() || counts_[i].first != gpus) {
      counts_.insert(counts_.begin() + static_cast<std::ptrdiff_t>(i),
                     {gpus, 0});
      if (i < last_) ++last_;  // (first_ is min'd below)
    }
    ++counts_[i].second;
    first_ = std::min(first_, i);
    last_ = std::max(last_, i + 1);
    if (own) uniform_ = false;
  }
  // A job of the placer's one scheme could not be placed at all.
  void Unplaceable(int gpus) {
    int& failed = gpus <= largest_ ? failed_small_ : failed_large_;
    failed = std::min(failed, gpus);
  }
  // Whether a job of `gpus` (of the one scheme) is known unplaceable.
  bool KnownUnplaceable(int gpus) const {
    return uniform_ &&
           (gpus <= largest_ ? gpus >= failed_small_ : gpus >= failed_large_);
  }
  // Whether every job left is.
  bool AllKnownUnplaceable() const {
    if (!uniform_) return false;
    if (first_ == counts_.size()) return true;
    const int fewest = counts_[first_].first;
    if (fewest <= largest_ && fewest < failed_small_) return false;
    if (counts_[last_ - 1].first <= largest_) return true;
    for (size_t i = first_; i < last_; ++i) {  // the fewest above `largest`
      if (counts_[i].second > 0 && counts_[i].first > largest_) {
        return counts_[i].first >= failed_large_;
      }
    }
    return true;
  }
  // The fewest GPUs a job left needs; kNone when none is left.
  int min() const {
    return first_ < counts_.size() ? counts_[first_].first : kNone;
  }

 private:
  size_t Find(int gpus) const {
    return static_cast<size_t>(std::lower_bound(counts_.begin(), counts_.end(),
                                                std::pair<int, int>{gpus, 0}) -
                               counts_.begin());
  }
  std::vector<std::pair<int, int>> counts_;  // ascending; zeros stay
  size_t first_ = 0;  // first non-zero count (size() when none)
  size_t last_ = 0;   // one past the last non-zero count (0 when none)
  bool uniform_ = false;
  int largest_ = 0;
  int failed_small_ = kNone;  // fewest GPUs unplaceable, <= largest_
  int failed_large_ = kNone;  // and above
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_WALK_LEFT_H_
