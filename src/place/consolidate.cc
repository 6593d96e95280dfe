// Consolidated placement: fewest servers, then fewest racks.
#include <algorithm>

#include "place/best_fit.h"
#include "place/placement.h"

namespace tiresias {
namespace {

class ConsolidatePlacer final : public Placer {
 public:
  std::string_view name() const override { return "consolidate"; }

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

 private:
  // A job larger than any server takes whole free servers, largest first,
  // from the single rack that needs the fewest; else across racks.
  static bool PlaceOnWholeServers(const Cluster& cluster, int want,
                                  std::vector<GpuId>* gpus) {
    if (cluster.whole_free_gpus() < want) return false;
    const Topology& topo = cluster.topology();
    std::vector<std::vector<int>> free_servers(topo.num_racks());
    std::vector<int> free_gpus_in_rack(topo.num_racks(), 0);
    for (int s = 0; s < topo.num_servers(); ++s) {
      const Server& server = topo.server(s);
      if (cluster.free_on(s) == server.num_gpus) {
        free_servers[server.rack].push_back(s);
        free_gpus_in_rack[server.rack] += server.num_gpus;
      }
    }
    auto larger_first = [&](int a, int b) {
      int ga = topo.server(a).num_gpus, gb = topo.server(b).num_gpus;
      return ga != gb ? ga > gb : a < b;
    };
    for (auto& servers : free_servers) {
      std::sort(servers.begin(), servers.end(), larger_first);
    }
    // Servers needed from a rack when taking its largest free servers first.
    auto servers_needed = [&](int rack) {
      int got = 0, used = 0;
      for (int s : free_servers[rack]) {
        if (got >= want) break;
        got += topo.server(s).num_gpus;
        ++used;
      }
      return got >= want ? used : -1;
    };
    int best_rack = -1, best_used = 0;
    for (int r = 0; r < topo.num_racks(); ++r) {
      int used = servers_needed(r);
      if (used > 0 && (best_rack < 0 || used < best_used)) {
        best_rack = r;
        best_used = used;
      }
    }
    std::vector<int> chosen;
    if (best_rack >= 0) {
      chosen = free_servers[best_rack];
    } else {
      // Spans racks: the racks with the most free GPUs first.
      std::vector<int> racks(topo.num_racks());
      for (int r = 0; r < topo.num_racks(); ++r) racks[r] = r;
      std::stable_sort(racks.begin(), racks.end(), [&](int a, int b) {
        return free_gpus_in_rack[a] > free_gpus_in_rack[b];
      });
      for (int r : racks) {
        chosen.insert(chosen.end(), free_servers[r].begin(),
                      free_servers[r].end());
      }
    }
    int total = 0;
    size_t used = 0;
    while (used < chosen.size() && total < want) {
      total += topo.server(chosen[used++]).num_gpus;
    }
    if (total < want) return false;
    int left = want;
    for (size_t i = 0; i < used; ++i) {
      int take = std::min(left, topo.server(chosen[i]).num_gpus);
      cluster.AppendFreeGpus(chosen[i], take, gpus);
      left -= take;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Placer> NewConsolidatePlacer() {
  return std::make_unique<ConsolidatePlacer>();
}

}  // namespace tiresias
