// The physical shape of a GPU cluster: racks (switches) of servers of GPUs.
// Servers may differ in GPU count (the Philly cluster mixes 2- and 8-GPU
// servers). GPUs are numbered 0..total_gpus()-1, server by server, so a
// server's GPUs are a contiguous range.
#ifndef TIRESIAS_CORE_TOPOLOGY_H_
#define TIRESIAS_CORE_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"

namespace tiresias {

struct ServerSpec {
  int rack = 0;      // 0-based rack (switch) index
  int num_gpus = 0;  // > 0, or 0 with spare_cpus > 0
  std::string name;  // optional; "" gets "sN"
  // What a job's node filter (core/node_filter.h) is matched against:
  // the model of its GPUs ("" unknown) and its features.
  std::string gpu_model;
  std::vector<std::string> features;
  // The CPUs and memory (MiB) its GPUs share out, an equal slice each;
  // 0: unknown (no job that asks for either goes there).
  int cpus = 0;
  int64_t memory_mib = 0;
  // CPUs and memory (MiB) kept out of its GPUs' slices for CPU-only jobs
  // (JobSpec::cpus); 0: none.
  int spare_cpus = 0;
  int64_t spare_memory_mib = 0;
};

struct Server {
  int rack;
  int num_gpus;
  GpuId first_gpu;
  std::string name;
  std::string gpu_model;              // ServerSpec::gpu_model
  std::vector<std::string> features;  // ServerSpec::features
  int cpus = 0;                       // ServerSpec::cpus
  int64_t memory_mib = 0;             // ServerSpec::memory_mib
  int spare_cpus = 0;                 // ServerSpec::spare_cpus
  int64_t spare_memory_mib = 0;       // ServerSpec::spare_memory_mib
};

class Topology {
 public:
  // Validates: at least one server, every server has >= 1 GPU (or none and
  // spare CPUs: a node for CPU-only jobs), racks >= 0.
  static absl::StatusOr<Topology> Create(std::vector<ServerSpec> servers);
  // racks x servers_per_rack x gpus_per_server, all arguments > 0.
  static Topology Uniform(int racks, int servers_per_rack, int gpus_per_server);
  // Appends a server (validated as Create does), numbered after the others
  // with GPUs after theirs: what is numbered already stays. Amortized
  // O(its GPUs).
  absl::Status AddServer(ServerSpec spec);

  int num_racks() const { return num_racks_; }
  int num_servers() const { return static_cast<int>(servers_.size()); }
  int total_gpus() const { return total_gpus_; }
  int max_gpus_per_server() const { return max_gpus_per_server_; }
  const Server& server(int index) const { return servers_[index]; }
  int ServerOf(GpuId gpu) const { return server_of_gpu_[gpu]; }
  // "60 servers x 8 GPUs, 1 rack" or "552 servers (321x2, 231x8), 1 rack".
  std::string Describe() const;

 private:
  Topology() = default;
  std::vector<Server> servers_;
  std::vector<int> server_of_gpu_;
  int num_racks_ = 0;
  int total_gpus_ = 0;
  int max_gpus_per_server_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_TOPOLOGY_H_
