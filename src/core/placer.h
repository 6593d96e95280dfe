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
  // the same rule: if one cannot fit, neither can a larger one.
  virtual std::string_view SchemeFor(const Job& job) const { return name(); }
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_PLACER_H_
