#include "core/cluster.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace tiresias {

Cluster::Cluster(Topology topology)
    : topology_(std::move(topology)),
      owner_(topology_.total_gpus(), kNoJob),
      free_on_(topology_.num_servers()),
      cordoned_(topology_.num_servers(), false),
      by_free_(topology_.max_gpus_per_server() + 1,
               ServerSet(topology_.num_servers())),
      free_gpus_(topology_.total_gpus()) {
  for (int s = 0; s < topology_.num_servers(); ++s) {
    free_on_[s] = topology_.server(s).num_gpus;
    by_free_[free_on_[s]].insert(s);
    whole_free_gpus_ += free_on_[s];
  }
}

absl::Status Cluster::Allocate(JobId job, std::span<const GpuId> gpus) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    GpuId g = gpus[i];
    if (g < 0 || g >= total_gpus()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU ", g, " is outside the cluster (0..",
                       total_gpus() - 1, ")"));
    }
    if (owner_[g] != kNoJob) {
      return absl::FailedPreconditionError(absl::StrCat(
          "GPU ", g, " is already held by job ", owner_[g]));
    }
    for (size_t j = 0; j < i; ++j) {
      if (gpus[j] == g) {
        return absl::InvalidArgumentError(
            absl::StrCat("GPU ", g, " is listed twice"));
      }
    }
  }
  for (GpuId g : gpus) {
    owner_[g] = job;
    Adjust(topology_.ServerOf(g), -1);
  }
  return absl::OkStatus();
}

void Cluster::Release(JobId job, std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    assert(owner_[g] == job);
    (void)job;
    owner_[g] = kNoJob;
    Adjust(topology_.ServerOf(g), +1);
  }
}

void Cluster::Adjust(int server, int delta) {
  if (cordoned_[server]) {
    cordoned_idle_ += delta;
    return;
  }
  const int old_free = free_on_[server];
  free_on_[server] += delta;
  free_gpus_ += delta;
  Reindex(server, old_free);
}

void Cluster::SetCordoned(int server, bool cordoned) {
  if (cordoned_[server] == cordoned) return;
  const Server& s = topology_.server(server);
  int idle = 0;
  for (int i = 0; i < s.num_gpus; ++i) {
    if (owner_[s.first_gpu + i] == kNoJob) ++idle;
  }
  const int old_free = free_on_[server];
  cordoned_[server] = cordoned;
  const int sign = cordoned ? 1 : -1;
  cordoned_gpus_ += sign * s.num_gpus;
  cordoned_idle_ += sign * idle;
  free_gpus_ -= sign * idle;
  free_on_[server] = cordoned ? 0 : idle;
  Reindex(server, old_free);
}

void Cluster::Reindex(int server, int old_free) {
  const int n = topology_.server(server).num_gpus;
  if (old_free == n) whole_free_gpus_ -= n;
  if (free_on_[server] == n) whole_free_gpus_ += n;
  by_free_[old_free].erase(server);
  by_free_[free_on_[server]].insert(server);
}

void Cluster::AppendFreeGpus(int server, int max,
                             std::vector<GpuId>* out) const {
  if (cordoned_[server]) return;
  const Server& s = topology_.server(server);
  for (int i = 0; i < s.num_gpus && max > 0; ++i) {
    GpuId g = s.first_gpu + i;
    if (owner_[g] == kNoJob) {
      out->push_back(g);
      --max;
    }
  }
}

}  // namespace tiresias
