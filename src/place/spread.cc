// Spread placement: one GPU at a time from the server with the most free
// GPUs (ties: lowest index), so a job lands on the least-loaded servers and
// never waits for a whole server.
#include <queue>
#include <utility>

#include "place/placement.h"

namespace tiresias {
namespace {

class SpreadPlacer final : public Placer {
 public:
  std::string_view name() const override { return "spread"; }
  bool single_scheme() const override { return true; }
  FitRule FitRuleFor(const Job&) const override { return FitRule::kAnyGpus; }

  bool Place(const Cluster& cluster, const Job& job, Rng&,
             std::vector<GpuId>* gpus) const override {
    const int want = job.num_gpus();
    if (want > cluster.free_gpus()) return false;
    // Only the `want` emptiest servers can receive a GPU: each pick takes
    // one GPU, so some untouched candidate always has at least as many free
    // GPUs as any server outside the candidates.
    using Candidate = std::pair<int, int>;  // (free, -server): max-heap
    std::priority_queue<Candidate> heap;
    int collected = 0;
    for (int free = cluster.topology().max_gpus_per_server();
         free > 0 && collected < want; --free) {
      for (int s : cluster.ServersWithFree(free)) {
        heap.push({free, -s});
        if (++collected == want) break;
      }
    }
    std::vector<std::pair<int, int>> taken;  // (server, count), in pick order
    for (int i = 0; i < want; ++i) {
      auto [free, neg_server] = heap.top();
      heap.pop();
      const int server = -neg_server;
      if (taken.empty() || !AddTo(&taken, server)) taken.push_back({server, 1});
      if (free > 1) heap.push({free - 1, neg_server});
    }
    for (auto [server, count] : taken) {
      cluster.AppendFreeGpus(server, count, gpus);
    }
    return true;
  }

 private:
  static bool AddTo(std::vector<std::pair<int, int>>* taken, int server) {
    for (auto& [s, count] : *taken) {
      if (s == server) {
        ++count;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Placer> NewSpreadPlacer() {
  return std::make_unique<SpreadPlacer>();
}

}  // namespace tiresias
