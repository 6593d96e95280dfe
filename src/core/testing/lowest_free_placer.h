// Test-only: a placer that takes the lowest-numbered free GPUs anywhere,
// whatever the job's shape, and counts its calls. Shared by the tests of
// shapes and node filters, where what is placed matters more than how.
#ifndef TIRESIAS_CORE_TESTING_LOWEST_FREE_PLACER_H_
#define TIRESIAS_CORE_TESTING_LOWEST_FREE_PLACER_H_

#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/placer.h"

namespace tiresias::test_support {

class LowestFreePlacer : public Placer {
 public:
  std::string_view name() const override { return "lowest"; }
  bool Place(const Cluster& cluster, const Job& job, Rng&,
             std::vector<GpuId>* gpus) const override {
    ++calls;
    std::vector<GpuId> out;
    for (GpuId g = 0; g < cluster.total_gpus(); ++g) {
      if (cluster.gpu_free(g) &&
          static_cast<int>(out.size()) < job.num_gpus()) {
        out.push_back(g);
      }
    }
    if (static_cast<int>(out.size()) < job.num_gpus()) return false;
    gpus->insert(gpus->end(), out.begin(), out.end());
    return true;
  }
  mutable int calls = 0;
};

}  // namespace tiresias::test_support

#endif  // TIRESIAS_CORE_TESTING_LOWEST_FREE_PLACER_H_
