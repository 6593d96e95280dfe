#include "core/shape.h"

namespace tiresias {

bool PlaceShaped(const Cluster& cluster, const Job& job,
                 std::vector<GpuId>* gpus) {
  const JobSpec& spec = job.spec();
  const int per_node = spec.gpus_per_node;
  const int max_free = cluster.topology().max_gpus_per_server();
  if (per_node < 1 || per_node > max_free ||
      ServersWithAtLeast(cluster, per_node) < spec.nodes) {
    return false;
  }
  int taken = 0;
  for (int free = per_node; free <= max_free && taken < spec.nodes; ++free) {
    for (int server : cluster.ServersWithFree(free)) {
      cluster.AppendFreeGpus(server, per_node, gpus);
      if (++taken == spec.nodes) break;
    }
  }
  return true;
}

int ServersWithAtLeast(const Cluster& cluster, int gpus) {
  int count = 0;
  for (int free = std::max(gpus, 1);
       free <= cluster.topology().max_gpus_per_server(); ++free) {
    for ([[maybe_unused]] int server : cluster.ServersWithFree(free)) ++count;
  }
  return count;
}

bool PlaceJob(const Placer& placer, const Cluster& cluster, const Job& job,
              Rng& rng, std::vector<GpuId>* gpus) {
  if (job.spec().shaped()) return PlaceShaped(cluster, job, gpus);
  return placer.Place(cluster, job, rng, gpus);
}

bool JobMightFit(const Placer& placer, const Topology& topology,
                 const std::vector<int>& avail, int total, const Job& job) {
  if (!job.spec().shaped()) {
    return placer.MightFit(topology, avail, total, job);
  }
  int fitting = 0;
  for (int a : avail) fitting += a >= job.spec().gpus_per_node;
  return fitting >= job.spec().nodes;
}

}  // namespace tiresias
