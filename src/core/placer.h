// The placement interface: which free GPUs a job gets. Declared in core so
// that the scheduler (src/sched) can call any scheme (src/place) without
// either depending on the other.
#ifndef TIRESIAS_CORE_PLACER_H_
#define TIRESIAS_CORE_PLACER_H_

#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/rng.h"

namespace tiresias {

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string_view name() const = 0;
  // Chooses job.num_gpus() free GPUs of `cluster` for `job` and appends them
  // to *gpus. Returns false when the job does not fit under this scheme,
  // leaving *gpus unchanged: never a partial allocation. Does not allocate;
  // the caller does. Randomness only from `rng`.
  virtual bool Place(const Cluster& cluster, const Job& job, Rng& rng,
                     std::vector<GpuId>* gpus) const = 0;
  // The scheme that places `job` (a composite scheme such as `profiled`
  // names the one it delegates to). Jobs with the same scheme are placed by
  // the same rule: if one cannot fit, neither can a larger one on the same
  // side of the largest server's size (consolidate takes one server for a
  // job that fits one, whole free servers for a larger one).
  virtual std::string_view SchemeFor(const Job& job) const { return name(); }
  // Whether SchemeFor is name() for every job (one rule for all). False
  // unless a placer says so, so that one that overrides SchemeFor and
  // forgets this only loses a shortcut of the walk.
  virtual bool single_scheme() const { return false; }
  // A cheap pre-check: could Place succeed on a cluster of this topology
  // where server s had avail[s] free GPUs (`total` in all)? It must never be
  // false where Place would succeed on such a cluster, and must not decrease
  // when an avail[s] grows; it may be true where Place would fail. The
  // default compares counts, exact for schemes that take any free GPUs.
  virtual bool MightFit(const Topology& topology, const std::vector<int>& avail,
                        int total, const Job& job) const {
    return job.num_gpus() <= total;
  }
  // How Place decides whether `job` fits, where it decides by free counts
  // alone and draws nothing from rng (so asking costs no draw):
  // kAnyGpus, any free GPUs (the free total); kServerOrWhole, one server
  // with the job's GPUs free or, for a job larger than every server, whole
  // free servers holding them. kOther: by anything else; only Place can
  // tell. The scheduler then weighs preemptions by counts (FreeCounts).
  enum class FitRule { kOther, kAnyGpus, kServerOrWhole };
  virtual FitRule FitRuleFor(const Job& job) const { return FitRule::kOther; }
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_PLACER_H_
