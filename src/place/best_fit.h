// Best fit, shared by consolidate and pack: the server with the fewest free
// GPUs that still holds `want` of them (ties: lowest index), or -1.
#ifndef TIRESIAS_PLACE_BEST_FIT_H_
#define TIRESIAS_PLACE_BEST_FIT_H_

#include "core/cluster.h"

namespace tiresias {

inline int BestFitServer(const Cluster& cluster, int want) {
  for (int free = want; free <= cluster.topology().max_gpus_per_server();
       ++free) {
    const auto& servers = cluster.ServersWithFree(free);
    if (!servers.empty()) return *servers.begin();
  }
  return -1;
}

}  // namespace tiresias

#endif  // TIRESIAS_PLACE_BEST_FIT_H_
