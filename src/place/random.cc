// Random placement: `num_gpus` distinct free GPUs chosen uniformly with the
// scheduler's seeded generator.
#include <algorithm>

#include "place/placement.h"

namespace tiresias {
namespace {

class RandomPlacer final : public Placer {
 public:
  std::string_view name() const override { return "random"; }
  bool single_scheme() const override { return true; }

  bool Place(const Cluster& cluster, const Job& job, Rng& rng,
             std::vector<GpuId>* gpus) const override {
    const int want = job.num_gpus();
    if (want > cluster.free_gpus()) return false;
    std::vector<GpuId> free;
    free.reserve(cluster.free_gpus());
    for (GpuId g = 0; g < cluster.total_gpus(); ++g) {
      if (cluster.gpu_free(g)) free.push_back(g);
    }
    // Partial Fisher-Yates: the first `want` entries become the sample.
    for (int i = 0; i < want; ++i) {
      size_t j = i + rng.Below(free.size() - i);
      std::swap(free[i], free[j]);
    }
    std::sort(free.begin(), free.begin() + want);
    gpus->insert(gpus->end(), free.begin(), free.begin() + want);
    return true;
  }
};

}  // namespace

std::unique_ptr<Placer> NewRandomPlacer() {
  return std::make_unique<RandomPlacer>();
}

}  // namespace tiresias
