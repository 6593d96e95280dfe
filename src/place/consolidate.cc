// Consolidated placement: fewest servers, then fewest racks.
#include <algorithm>

#include "place/best_fit.h"
#include "place/placement.h"

namespace tiresias {
namespace {

class ConsolidatePlacer final : public Placer {
 public:
  std::string_view name() const override { return "consolidate"; }
  bool single_scheme() const override { return true; }

  bool Place(const Cluster& cluster, const Job& job, Rng&,
             std::vector<GpuId>* gpus) const override {
    const int want = job.num_gpus();
    if (want > cluster.free_gpus()) return false;
    const Topology& topo = cluster.topology();
    if (want <= topo.max_gpus_per_server()) {
      const int server = BestFitServer(cluster, want);
      if (server < 0) return false;
      cluster.AppendFreeGpus(server, want, gpus);
      return true;
    }
    return PlaceOnWholeServers(cluster, want, gpus);
  }

  // Exact: one server holding `want`, or whole servers holding it.
  bool MightFit(const Topology& topo, const std::vector<int>& avail, int total,
                const Job& job) const override {
    const int want = job.num_gpus();
    if (want > total) return false;
    int whole = 0;
    for (int s = 0; s < topo.num_servers(); ++s) {
      if (want <= topo.max_gpus_per_server() && avail[s] >= want) return true;
      if (avail[s] == topo.server(s).num_gpus) whole += avail[s];
    }
    return want > topo.max_gpus_per_server() && whole >= want;
  }
  FitRule FitRuleFor(const Job&) const override {
    return FitRule::kServerOrWhole;
  }

 private:
  // A job larger than any server takes whole free servers: as few as
  // possible, then from as few racks as possible.
  static bool PlaceOnWholeServers(const Cluster& cluster, int want,
                                  std::vector<GpuId>* gpus) {
    if (cluster.whole_free_gpus() < want) return false;
    const Topology& topo = cluster.topology();
    std::vector<int> all;
    std::vector<std::vector<int>> by_rack(topo.num_racks());
    for (int s = 0; s < topo.num_servers(); ++s) {
      if (cluster.free_on(s) == topo.server(s).num_gpus) {
        all.push_back(s);
        by_rack[topo.server(s).rack].push_back(s);
      }
    }
    std::vector<int> chosen = FewestServers(topo, all, want);
    if (chosen.empty()) return false;
    // The same number of servers from one rack, if some rack has them.
    for (const std::vector<int>& rack : by_rack) {
      std::vector<int> in_rack = FewestServers(topo, rack, want);
      if (!in_rack.empty() && in_rack.size() == chosen.size()) {
        chosen = std::move(in_rack);
        break;
      }
    }
    int left = want;
    for (int s : chosen) {
      const int take = std::min(left, topo.server(s).num_gpus);
      cluster.AppendFreeGpus(s, take, gpus);
      left -= take;
    }
    return true;
  }

  // Fewest of `servers` holding `want` GPUs: the largest ones while no
  // single remaining server covers what is left, then the smallest one that
  // does (best fit). Empty if they cannot hold `want`.
  static std::vector<int> FewestServers(const Topology& topo,
                                        std::vector<int> servers, int want) {
    std::sort(servers.begin(), servers.end(), [&](int a, int b) {
      const int ga = topo.server(a).num_gpus, gb = topo.server(b).num_gpus;
      return ga != gb ? ga > gb : a < b;
    });
    std::vector<int> chosen;
    size_t next = 0;  // servers[next..] are still free to choose
    while (want > 0 && next < servers.size()) {
      // servers is sorted largest first: the best fit is the last one that
      // still covers `want`.
      size_t fit = servers.size();
      for (size_t i = next; i < servers.size(); ++i) {
        if (topo.server(servers[i]).num_gpus >= want) fit = i;
      }
      if (fit < servers.size()) {
        chosen.push_back(servers[fit]);
        return chosen;
      }
      want -= topo.server(servers[next]).num_gpus;
      chosen.push_back(servers[next++]);
    }
    if (want > 0) chosen.clear();
    return chosen;
  }
};

}  // namespace

std::unique_ptr<Placer> NewConsolidatePlacer() {
  return std::make_unique<ConsolidatePlacer>();
}

}  // namespace tiresias
