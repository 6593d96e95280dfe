#include "core/cluster.h"

#include <cassert>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tiresias {

Cluster::Cluster(Topology topology)
    : topology_(std::move(topology)),
      owner_(topology_.total_gpus(), kNoJob),
      exclusive_gpu_(topology_.total_gpus(), 0),
      free_gpus_(topology_.total_gpus()) {
  for (int s = 0; s < topology_.num_servers(); ++s) Track(s);
}

absl::StatusOr<int> Cluster::AddServer(ServerSpec spec) {
  const int gpus = spec.num_gpus;
  RETURN_IF_ERROR(topology_.AddServer(std::move(spec)));
  owner_.resize(topology_.total_gpus(), kNoJob);
  exclusive_gpu_.resize(topology_.total_gpus(), 0);
  free_gpus_ += gpus;
  const int server = topology_.num_servers() - 1;
  Track(server);
  return server;
}

void Cluster::Track(int s) {
  const int servers = topology_.num_servers();
  const int gpus = topology_.server(s).num_gpus;
  free_on_.resize(servers);
  cordoned_.resize(servers, 0);
  reserved_.resize(servers, 0);
  spare_cpus_.resize(servers, 0);
  spare_mem_.resize(servers, 0);
  if (by_free_.size() <= static_cast<size_t>(gpus)) by_free_.resize(gpus + 1);
  // Bitsets grow a word per 64 servers: amortized O(1) each.
  for (ServerSet& set : by_free_) set.Grow(servers);
  free_on_[s] = gpus;
  by_free_[gpus].insert(s);
  whole_free_gpus_ += gpus;
  spare_cpus_[s] = topology_.server(s).spare_cpus;
  spare_mem_[s] = topology_.server(s).spare_memory_mib;
}

int64_t Cluster::SpareMemoryFor(int server, const JobSpec& spec) const {
  if (spec.mem_mib > 0) return spec.mem_mib;
  const Server& s = topology_.server(server);
  return s.spare_cpus > 0 ? s.spare_memory_mib * spec.cpus / s.spare_cpus : 0;
}

bool Cluster::SpareFits(int server, const JobSpec& spec) const {
  return !cordoned_[server] && reserved_[server] == 0 &&
         spec.cpus <= spare_cpus_[server] &&
         SpareMemoryFor(server, spec) <= spare_mem_[server];
}

absl::Status Cluster::AllocateSpare(int server, const JobSpec& spec) {
  if (server < 0 || server >= topology_.num_servers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server ", server, " is outside the cluster"));
  }
  const int64_t mem = SpareMemoryFor(server, spec);
  if (spec.cpus < 1 || spec.cpus > spare_cpus_[server] ||
      mem > spare_mem_[server]) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", server, " has ", spare_cpus_[server],
                     " spare CPUs and ", spare_mem_[server], " MiB free; job ",
                     spec.id, " needs ", spec.cpus, " and ", mem));
  }
  spare_cpus_[server] -= spec.cpus;
  spare_mem_[server] -= mem;
  return absl::OkStatus();
}

void Cluster::ReleaseJob(const Job& job) {
  if (!job.cpu_only()) {
    Release(job.id(), job.gpus());
    return;
  }
  const int server = job.cpu_server();
  if (server < 0) return;
  spare_cpus_[server] += job.spec().cpus;
  spare_mem_[server] += SpareMemoryFor(server, job.spec());
  assert(spare_cpus_[server] <= topology_.server(server).spare_cpus);
}

absl::Status Cluster::Allocate(JobId job, std::span<const GpuId> gpus,
                               bool exclusive) {
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
  if (!Fits(gpus, exclusive)) {
    return absl::FailedPreconditionError(
        exclusive ? "a server of these GPUs is reserved or holds another job"
                  : "a server of these GPUs is reserved by an exclusive job");
  }
  for (GpuId g : gpus) {
    owner_[g] = job;
    const int server = topology_.ServerOf(g);
    Adjust(server, -1);
    if (exclusive) {
      exclusive_gpu_[g] = 1;
      if (reserved_[server]++ == 0) {
        ++reserved_servers_;
        Recount(server);
      }
    }
  }
  return absl::OkStatus();
}

bool Cluster::Fits(std::span<const GpuId> gpus, bool exclusive) const {
  for (GpuId g : gpus) {
    if (owner_[g] != kNoJob) return false;
    const int server = topology_.ServerOf(g);
    if (reserved_[server] > 0) return false;
    if (exclusive) {
      const Server& s = topology_.server(server);
      for (int i = 0; i < s.num_gpus; ++i) {
        if (owner_[s.first_gpu + i] != kNoJob) return false;
      }
    }
  }
  return true;
}

void Cluster::Release(JobId job, std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    assert(owner_[g] == job);
    (void)job;
    owner_[g] = kNoJob;
    const int server = topology_.ServerOf(g);
    Adjust(server, +1);
    if (exclusive_gpu_[g]) {
      exclusive_gpu_[g] = 0;
      if (--reserved_[server] == 0) {
        --reserved_servers_;
        Recount(server);
      }
    }
  }
}

void Cluster::Adjust(int server, int delta) {
  if (cordoned_[server]) {
    cordoned_idle_ += delta;
    return;
  }
  if (reserved_[server] > 0) return;  // none of its GPUs is free
  const int old_free = free_on_[server];
  free_on_[server] += delta;
  free_gpus_ += delta;
  Reindex(server, old_free);
}

void Cluster::SetCordoned(int server, bool cordoned) {
  if ((cordoned_[server] != 0) == cordoned) return;
  const Server& s = topology_.server(server);
  int idle = 0;
  for (int i = 0; i < s.num_gpus; ++i) {
    if (owner_[s.first_gpu + i] == kNoJob) ++idle;
  }
  cordoned_[server] = cordoned;
  const int sign = cordoned ? 1 : -1;
  cordoned_gpus_ += sign * s.num_gpus;
  cordoned_idle_ += sign * idle;
  Recount(server);
}

void Cluster::Recount(int server) {
  const Server& s = topology_.server(server);
  int idle = 0;
  if (!cordoned_[server] && reserved_[server] == 0) {
    for (int i = 0; i < s.num_gpus; ++i) {
      if (owner_[s.first_gpu + i] == kNoJob) ++idle;
    }
  }
  const int old_free = free_on_[server];
  free_on_[server] = idle;
  free_gpus_ += idle - old_free;
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
  if (cordoned_[server] || reserved_[server] > 0) return;
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
