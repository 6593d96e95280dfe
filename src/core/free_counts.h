// FreeCounts: a cluster's free GPUs as they would be if some held GPUs were
// given back, by count only. Answers "would a job of `want` GPUs fit?" for a
// placer that decides by counts (Placer::FitRule) without touching the
// cluster: the preemptive walk sets running jobs aside here, one at a time,
// instead of releasing and re-allocating them and asking Place each time.
//
// Valid while no server is reserved (an exclusive job's GPUs given back
// would free its server's others too). GPUs on cordoned servers never
// count free, as in Cluster.
#ifndef TIRESIAS_CORE_FREE_COUNTS_H_
#define TIRESIAS_CORE_FREE_COUNTS_H_

#include <cassert>
#include <span>
#include <vector>

#include "core/cluster.h"
#include "core/placer.h"

namespace tiresias {

class FreeCounts {
 public:
  // Starts from `cluster` as it is, for a job of `want` GPUs placed by
  // `rule` (not kOther). No per-server loop: a server's count is read
  // from the cluster when first given to (the servers holding `want` are
  // counted from the cluster's bitsets, a word per 64 servers).
  void Reset(const Cluster& cluster, Placer::FitRule rule, int want) {
    assert(rule != Placer::FitRule::kOther && cluster.reserved_servers() == 0);
    cluster_ = &cluster;
    rule_ = rule;
    want_ = want;
    const Topology& topo = cluster.topology();
    const int largest = topo.max_gpus_per_server();
    one_server_ = rule == Placer::FitRule::kServerOrWhole && want <= largest;
    holding_ = 0;
    if (one_server_) {
      for (int f = want; f <= largest; ++f) {
        holding_ += cluster.ServersWithFree(f).size();
      }
    }
    total_ = cluster.free_gpus();
    whole_ = cluster.whole_free_gpus();
    if (free_.size() != static_cast<size_t>(topo.num_servers()) ||
        ++epoch_ == 0) {
      free_.assign(topo.num_servers(), 0);
      read_in_.assign(topo.num_servers(), 0);
      epoch_ = 1;
    }
  }
  // `gpus` (held now) given back (+1), or held again after that (-1).
  void Give(std::span<const GpuId> gpus, int sign) {
    const Topology& topo = cluster_->topology();
    for (GpuId g : gpus) GiveOn(topo.ServerOf(g), 1, sign);
  }
  // As Give of `count` GPUs all on `server`, in one step: per GPU, each
  // of `whole_` and `holding_` changes by a term of the server's count
  // after less the same term before, so the steps add up to the term at
  // the end less the term at the start.
  void GiveOn(int server, int count, int sign) {
    if (cluster_->cordoned(server)) return;
    const int n = cluster_->topology().server(server).num_gpus;
    if (read_in_[server] != epoch_) {
      read_in_[server] = epoch_;
      free_[server] = cluster_->free_on(server);
    }
    const int before = free_[server];
    const int after = before + sign * count;
    free_[server] = after;
    total_ += sign * count;
    if (before == n) whole_ -= n;
    if (after == n) whole_ += n;
    holding_ += (after >= want_) - (before >= want_);
  }
  // Whether Place would succeed on the cluster as counted.
  bool fits() const {
    if (want_ > total_) return false;
    if (rule_ == Placer::FitRule::kAnyGpus) return true;
    return one_server_ ? holding_ > 0 : whole_ >= want_;
  }

 private:
  const Cluster* cluster_ = nullptr;
  Placer::FitRule rule_ = Placer::FitRule::kOther;
  int want_ = 0;
  bool one_server_ = false;
  std::vector<int> free_;          // per server, once read_in_ this epoch_
  std::vector<uint32_t> read_in_;  // the epoch_ free_[s] was read in
  uint32_t epoch_ = 0;
  int total_ = 0;
  int whole_ = 0;    // GPUs of servers entirely free
  int holding_ = 0;  // servers with at least `want_` free
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_FREE_COUNTS_H_
