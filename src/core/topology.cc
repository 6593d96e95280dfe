#include "core/topology.h"

#include <algorithm>
#include <cassert>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace tiresias {

absl::StatusOr<Topology> Topology::Create(std::vector<ServerSpec> specs) {
  if (specs.empty()) {
    return absl::InvalidArgumentError("a cluster needs at least one server");
  }
  Topology t;
  for (ServerSpec& s : specs) RETURN_IF_ERROR(t.AddServer(std::move(s)));
  return t;
}

absl::Status Topology::AddServer(ServerSpec s) {
  const int i = num_servers();
  // A server without GPUs is there for CPU-only jobs alone.
  if (s.num_gpus < 0 || (s.num_gpus == 0 && s.spare_cpus <= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server ", i,
        ": expected a positive GPU count (0 only with spare CPUs), got ",
        s.num_gpus));
  }
  if (s.rack < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("server ", i, ": negative rack index ", s.rack));
  }
  if (s.name.empty()) s.name = absl::StrCat("s", i);
  servers_.push_back(Server{s.rack, s.num_gpus, static_cast<GpuId>(total_gpus_),
                            std::move(s.name), std::move(s.gpu_model),
                            std::move(s.features), s.cpus, s.memory_mib,
                            s.spare_cpus, s.spare_memory_mib});
  server_of_gpu_.insert(server_of_gpu_.end(), s.num_gpus, i);
  total_gpus_ += s.num_gpus;
  num_racks_ = std::max(num_racks_, s.rack + 1);
  max_gpus_per_server_ = std::max(max_gpus_per_server_, s.num_gpus);
  return absl::OkStatus();
}

Topology Topology::Uniform(int racks, int servers_per_rack,
                           int gpus_per_server) {
  assert(racks > 0 && servers_per_rack > 0 && gpus_per_server > 0);
  std::vector<ServerSpec> specs;
  for (int r = 0; r < racks; ++r) {
    for (int s = 0; s < servers_per_rack; ++s) {
      specs.push_back(ServerSpec{r, gpus_per_server, ""});
    }
  }
  return *Create(std::move(specs));
}

std::string Topology::Describe() const {
  std::map<int, int> servers_by_size;
  for (const Server& s : servers_) ++servers_by_size[s.num_gpus];
  std::string shape;
  if (servers_by_size.size() == 1) {
    shape = absl::StrCat(num_servers(), " servers x ",
                         servers_by_size.begin()->first, " GPUs");
  } else {
    std::vector<std::string> parts;
    for (auto [size, count] : servers_by_size) {
      parts.push_back(absl::StrCat(count, "x", size));
    }
    shape = absl::StrCat(num_servers(), " servers (",
                         absl::StrJoin(parts, ", "), ")");
  }
  return absl::StrCat(shape, ", ", total_gpus_, " GPUs, ", num_racks_,
                      num_racks_ == 1 ? " rack" : " racks");
}

}  // namespace tiresias
