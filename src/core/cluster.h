// Allocation state of a cluster: which job holds which GPU.
//
// Invariant: a GPU is held by at most one job; Allocate is all-or-nothing.
// Servers are also indexed by their free-GPU count so that placement can find
// "a server with at least k free GPUs" or "the emptiest server" without
// scanning the cluster; moving a server between counts is O(1).
//
// A server can be cordoned (the master's drained nodes): it takes no new
// job. Its GPUs are never counted free (free_gpus, free_on, gpu_free,
// ServersWithFree and AppendFreeGpus all leave them out), so every
// placement scheme skips it; jobs already holding its GPUs keep them and
// may release them as usual.
//
// A server where an exclusive job (`submit --exclusive`) holds GPUs is
// reserved: its other GPUs are not free either, until the job releases
// them all. It is not cordoned (not drained): cordoned_gpus and
// cordoned_idle_gpus leave it out.
//
// Besides GPUs, each server's spare CPUs and memory (Server::spare_cpus,
// spare_memory_mib: outside every GPU's slice) are counted for CPU-only
// jobs (JobSpec::cpu_only). A cordoned server takes no new CPU-only job
// either, nor does one an exclusive job holds; but an exclusive job may
// go where CPU-only jobs already run (on CPUs none of its GPUs have).
//
// Not thread-safe; the host serializes access.
#ifndef TIRESIAS_CORE_CLUSTER_H_
#define TIRESIAS_CORE_CLUSTER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/server_set.h"
#include "core/topology.h"

namespace tiresias {

inline constexpr JobId kNoJob = -1;

class Cluster {
 public:
  explicit Cluster(Topology topology);

  // Appends a server (Topology::AddServer), free and not cordoned, and
  // returns its index; servers and GPUs numbered before keep their numbers
  // and holders. Amortized O(its GPUs + the largest server's GPUs).
  absl::StatusOr<int> AddServer(ServerSpec spec);
  const Topology& topology() const { return topology_; }
  int total_gpus() const { return topology_.total_gpus(); }
  // Free GPUs a new job may take (cordoned servers' excluded).
  int free_gpus() const { return free_gpus_; }
  // GPUs held by a job, or idle on a cordoned server.
  int busy_gpus() const { return total_gpus() - free_gpus_; }
  int free_on(int server) const { return free_on_[server]; }
  // GPUs on servers that are entirely free (and not cordoned).
  int whole_free_gpus() const { return whole_free_gpus_; }
  bool gpu_free(GpuId gpu) const {
    const int server = topology_.ServerOf(gpu);
    return owner_[gpu] == kNoJob && !cordoned_[server] &&
           reserved_[server] == 0;
  }
  // GPUs held by nobody whatever their server (cordoned ones included).
  bool gpu_unheld(GpuId gpu) const { return owner_[gpu] == kNoJob; }

  // Cordons (or uncordons) `server`: see the class comment. O(its GPUs).
  void SetCordoned(int server, bool cordoned);
  bool cordoned(int server) const { return cordoned_[server]; }
  // GPUs of cordoned servers, and of those the ones no job holds.
  int cordoned_gpus() const { return cordoned_gpus_; }
  int cordoned_idle_gpus() const { return cordoned_idle_; }
  // The job holding `gpu`, or kNoJob.
  JobId owner(GpuId gpu) const { return owner_[gpu]; }
  // Whether an exclusive job holds `gpu`; whether one holds any GPU of
  // `server` (then none of its GPUs is free).
  bool exclusive_gpu(GpuId gpu) const { return exclusive_gpu_[gpu]; }
  bool reserved(int server) const { return reserved_[server] > 0; }
  int reserved_servers() const { return reserved_servers_; }

  // Gives every GPU in `gpus` to `job`. Fails, changing nothing, if a GPU is
  // out of range, listed twice, or already held, or on a reserved server;
  // `exclusive`: also if another job holds a GPU of one of its servers.
  // An exclusive job's servers take no other job while it holds GPUs
  // there (see the class comment).
  absl::Status Allocate(JobId job, std::span<const GpuId> gpus,
                        bool exclusive = false);
  // Whether Allocate of `gpus` (valid GPU ids, none twice) would succeed:
  // O(their servers' GPUs) when `exclusive`, else O(gpus).
  bool Fits(std::span<const GpuId> gpus, bool exclusive) const;
  // Frees `gpus`, which must all be held by `job` (asserted).
  void Release(JobId job, std::span<const GpuId> gpus);

  // Spare CPUs and memory (MiB) of `server` no CPU-only job holds.
  int spare_free_cpus(int server) const { return spare_cpus_[server]; }
  int64_t spare_free_memory_mib(int server) const { return spare_mem_[server]; }
  // The memory (MiB) CPU-only `spec` takes on `server`: its own, else a
  // per-CPU share of the server's spare memory (rounded down).
  int64_t SpareMemoryFor(int server, const JobSpec& spec) const;
  // Whether CPU-only `spec` fits `server`'s free spare CPUs and memory
  // now (never on a cordoned or reserved server).
  bool SpareFits(int server, const JobSpec& spec) const;
  // Gives CPU-only job `job` its CPUs and memory on `server`. Fails,
  // changing nothing, where they do not fit (SpareFits, cordons aside:
  // a restarted master puts back what runs on a drained node).
  absl::Status AllocateSpare(int server, const JobSpec& spec);
  // What a running job holds back to the cluster: its GPUs, or a CPU-only
  // job's spare CPUs and memory.
  void ReleaseJob(const Job& job);

  // Servers with exactly `free` free GPUs, ascending by index.
  const ServerSet& ServersWithFree(int free) const {
    return by_free_[free];
  }
  // Appends up to `max` free GPUs of `server`, ascending, to `out`.
  void AppendFreeGpus(int server, int max, std::vector<GpuId>* out) const;

 private:
  // Counts server `s` (the last added) free: its per-server entries.
  void Track(int s);
  void Reindex(int server, int old_free);
  // One GPU of `server` taken (-1) or given back (+1).
  void Adjust(int server, int delta);
  // free_on_[server] recounted after a cordon or a reservation changed.
  void Recount(int server);

  Topology topology_;
  std::vector<JobId> owner_;
  std::vector<int> free_on_;  // 0 on a cordoned server
  // Bytes, not vector<bool>: read for every GPU a walk sets aside.
  std::vector<uint8_t> cordoned_;
  std::vector<uint8_t> exclusive_gpu_;
  std::vector<int> reserved_;  // per server: GPUs exclusive jobs hold
  std::vector<int> spare_cpus_;     // per server, free
  std::vector<int64_t> spare_mem_;  // per server, free, MiB
  int cordoned_gpus_ = 0;
  int cordoned_idle_ = 0;
  int reserved_servers_ = 0;
  std::vector<ServerSet> by_free_;
  int free_gpus_;
  int whole_free_gpus_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_CLUSTER_H_
