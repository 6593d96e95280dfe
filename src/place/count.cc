// Topology-free placement: any free GPUs, lowest-numbered first. Fits
// whenever enough GPUs are free, as the original Tiresias simulator counted.
#include "place/placement.h"

namespace tiresias {
namespace {

class CountPlacer final : public Placer {
 public:
  std::string_view name() const override { return "count"; }
  bool single_scheme() const override { return true; }
  FitRule FitRuleFor(const Job&) const override { return FitRule::kAnyGpus; }

  bool Place(const Cluster& cluster, const Job& job, Rng&,
             std::vector<GpuId>* gpus) const override {
    int want = job.num_gpus();
    if (want > cluster.free_gpus()) return false;
    const Topology& topo = cluster.topology();
    for (int s = 0; s < topo.num_servers() && want > 0; ++s) {
      const int take = std::min(want, cluster.free_on(s));
      if (take == 0) continue;
      cluster.AppendFreeGpus(s, take, gpus);
      want -= take;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Placer> NewCountPlacer() {
  return std::make_unique<CountPlacer>();
}

}  // namespace tiresias
