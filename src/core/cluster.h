// Allocation state of a cluster: which job holds which GPU.
//
// Invariant: a GPU is held by at most one job; Allocate is all-or-nothing.
// Servers are also indexed by their free-GPU count so that placement can find
// "a server with at least k free GPUs" or "the emptiest server" without
// scanning the cluster; moving a server between counts is O(1).
//
// Not thread-safe; the host serializes access.
#ifndef TIRESIAS_CORE_CLUSTER_H_
#define TIRESIAS_CORE_CLUSTER_H_

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "core/job.h"
#include "core/server_set.h"
#include "core/topology.h"

namespace tiresias {

inline constexpr JobId kNoJob = -1;

class Cluster {
 public:
  explicit Cluster(Topology topology);

  const Topology& topology() const { return topology_; }
  int total_gpus() const { return topology_.total_gpus(); }
  int free_gpus() const { return free_gpus_; }
  int busy_gpus() const { return total_gpus() - free_gpus_; }
  int free_on(int server) const { return free_on_[server]; }
  // GPUs on servers that are entirely free.
  int whole_free_gpus() const { return whole_free_gpus_; }
  bool gpu_free(GpuId gpu) const { return owner_[gpu] == kNoJob; }
  // The job holding `gpu`, or kNoJob.
  JobId owner(GpuId gpu) const { return owner_[gpu]; }

  // Gives every GPU in `gpus` to `job`. Fails, changing nothing, if a GPU is
  // out of range, listed twice, or already held.
  absl::Status Allocate(JobId job, std::span<const GpuId> gpus);
  // Frees `gpus`, which must all be held by `job` (asserted).
  void Release(JobId job, std::span<const GpuId> gpus);

  // Servers with exactly `free` free GPUs, ascending by index.
  const ServerSet& ServersWithFree(int free) const {
    return by_free_[free];
  }
  // Appends up to `max` free GPUs of `server`, ascending, to `out`.
  void AppendFreeGpus(int server, int max, std::vector<GpuId>* out) const;

 private:
  void Reindex(int server, int old_free);

  Topology topology_;
  std::vector<JobId> owner_;
  std::vector<int> free_on_;
  std::vector<ServerSet> by_free_;
  int free_gpus_;
  int whole_free_gpus_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_CLUSTER_H_
