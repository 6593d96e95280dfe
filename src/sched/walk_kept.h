// WalkKept: what a preemptive walk has kept so far, per server: the GPUs
// of the running jobs it passed and of the waiting jobs it placed. The
// rest of a server is free or held by running jobs it may still displace,
// which bounds what a waiting job could get (Scheduler::PlaceInWalk).
//
// A passed job is only noted (its index); its GPUs are counted per server
// when a placement first asks for the counts, as most passes never ask
// after their first few jobs, and then each passed job is read once.
#ifndef TIRESIAS_SCHED_WALK_KEPT_H_
#define TIRESIAS_SCHED_WALK_KEPT_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/cluster.h"

namespace tiresias {

class WalkKept {
 public:
  // Tracking starts from nothing kept on `cluster`'s servers; without it
  // every call below does nothing (no running job may be displaced).
  void Start(const Cluster& cluster, bool tracking) {
    tracking_ = tracking;
    if (!tracking) return;
    kept_.assign(cluster.topology().num_servers(), 0);
    later_.clear();
    total_ = 0;
    open_.clear();
  }
  bool tracking() const { return tracking_; }
  // `gpus` GPUs of `server` are kept (VCs' quotas, in a borrowers' walk).
  void KeepOn(int server, int gpus) {
    kept_[server] += gpus;
    total_ += gpus;
  }
  // The job at `index`, of `gpus` GPUs, passed and kept.
  void Passed(uint32_t index, int gpus) {
    if (!tracking_) return;
    later_.push_back({index, gpus});
    total_ += gpus;
  }
  // `gpus` of `cluster` kept (a job placed).
  void Keep(const Cluster& cluster, std::span<const GpuId> gpus) {
    if (!tracking_) return;
    total_ += static_cast<int>(gpus.size());
    for (GpuId g : gpus) ++kept_[cluster.topology().ServerOf(g)];
  }
  // GPUs kept in all.
  int total() const { return total_; }
  // Per server, what is not kept (0 on a cordoned server: it takes no new
  // job, whoever is displaced there), and *sum its sum.
  // `count(index, gpus, &kept)` adds a passed job's GPUs to kept[server].
  template <typename Count>
  const std::vector<int>& NotKept(const Cluster& cluster, Count count,
                                  int* sum) {
    const Topology& topo = cluster.topology();
    for (const auto& [index, gpus] : later_) count(index, gpus, &kept_);
    later_.clear();
    const size_t n = kept_.size();
    if (open_.size() != n) {  // first asked in this walk
      open_.resize(n);
      for (size_t s = 0; s < n; ++s) {
        const int server = static_cast<int>(s);
        open_[s] = cluster.cordoned(server) ? 0 : topo.server(server).num_gpus;
      }
    }
    avail_.resize(n);
    int total = 0;
    for (size_t s = 0; s < n; ++s) {
      avail_[s] = open_[s] == 0 ? 0 : open_[s] - kept_[s];
      total += avail_[s];
    }
    *sum = total;
    return avail_;
  }

 private:
  bool tracking_ = false;
  std::vector<int> kept_;
  // (index, GPUs) passed, not yet counted in kept_
  std::vector<std::pair<uint32_t, int>> later_;
  int total_ = 0;
  std::vector<int> avail_;
  // Per server, its GPUs (0 when cordoned), read at the walk's first
  // NotKept (empty before).
  std::vector<int> open_;
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_WALK_KEPT_H_
