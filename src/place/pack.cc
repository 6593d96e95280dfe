// Pack placement: a job that fits in one server takes the fullest server
// that holds it (best fit); otherwise it takes free GPUs from the fullest
// servers first, spanning servers rather than waiting. Fills the holes that
// other jobs leave, so whole servers stay free for jobs that need them.
#include <algorithm>

#include "place/best_fit.h"
#include "place/placement.h"

namespace tiresias {
namespace {

class PackPlacer final : public Placer {
 public:
  std::string_view name() const override { return "pack"; }
  bool single_scheme() const override { return true; }
  FitRule FitRuleFor(const Job&) const override { return FitRule::kAnyGpus; }

  bool Place(const Cluster& cluster, const Job& job, Rng&,
             std::vector<GpuId>* gpus) const override {
    int want = job.num_gpus();
    if (want > cluster.free_gpus()) return false;
    const int server = BestFitServer(cluster, want);
    if (server >= 0) {
      cluster.AppendFreeGpus(server, want, gpus);
      return true;
    }
    for (int free = 1; want > 0; ++free) {
      for (int s : cluster.ServersWithFree(free)) {
        const int take = std::min(want, free);
        cluster.AppendFreeGpus(s, take, gpus);
        want -= take;
        if (want == 0) break;
      }
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Placer> NewPackPlacer() {
  return std::make_unique<PackPlacer>();
}

}  // namespace tiresias
