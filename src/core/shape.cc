#include "core/shape.h"

#include "core/node_filter.h"

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

namespace {

bool PlaceUnfiltered(const Placer& placer, const Cluster& cluster,
                     const Job& job, Rng& rng, std::vector<GpuId>* gpus) {
  if (job.spec().shaped()) return PlaceShaped(cluster, job, gpus);
  return placer.Place(cluster, job, rng, gpus);
}

bool MightFitUnfiltered(const Placer& placer, const Topology& topology,
                        const std::vector<int>& avail, int total,
                        const Job& job) {
  if (!job.spec().shaped()) {
    return placer.MightFit(topology, avail, total, job);
  }
  int fitting = 0;
  for (int a : avail) fitting += a >= job.spec().gpus_per_node;
  return fitting >= job.spec().nodes;
}

}  // namespace

bool PlaceJob(const Placer& placer, const Cluster& cluster, const Job& job,
              Rng& rng, std::vector<GpuId>* gpus) {
  const NodeFilter* filter = job.spec().filter.get();
  const bool exclusive = job.spec().exclusive;
  if (filter == nullptr && !exclusive) {
    return PlaceUnfiltered(placer, cluster, job, rng, gpus);
  }
  const Topology& topology = cluster.topology();
  std::vector<int> refused;
  int free = 0;
  for (int s = 0; s < topology.num_servers(); ++s) {
    const Server& server = topology.server(s);
    // An exclusive job takes only servers no other job holds GPUs of.
    if ((filter == nullptr || filter->Admits(server)) &&
        (!exclusive || cluster.free_on(s) == server.num_gpus)) {
      free += cluster.free_on(s);
    } else if (cluster.free_on(s) > 0) {
      refused.push_back(s);
    }
  }
  if (free < job.num_gpus()) return false;
  if (refused.empty()) return PlaceUnfiltered(placer, cluster, job, rng, gpus);
  Cluster view = cluster;
  for (int s : refused) view.SetCordoned(s, true);
  return PlaceUnfiltered(placer, view, job, rng, gpus);
}

bool JobMightFit(const Placer& placer, const Topology& topology,
                 const std::vector<int>& avail, int total, const Job& job) {
  const NodeFilter* filter = job.spec().filter.get();
  const bool exclusive = job.spec().exclusive;
  if (filter == nullptr && !exclusive) {
    return MightFitUnfiltered(placer, topology, avail, total, job);
  }
  std::vector<int> admitted(avail.size(), 0);
  int admitted_total = 0;
  for (int s = 0; s < topology.num_servers(); ++s) {
    const Server& server = topology.server(s);
    if ((filter == nullptr || filter->Admits(server)) &&
        (!exclusive || avail[s] == server.num_gpus)) {
      admitted[s] = avail[s];
      admitted_total += avail[s];
    }
  }
  return MightFitUnfiltered(placer, topology, admitted, admitted_total, job);
}

}  // namespace tiresias
