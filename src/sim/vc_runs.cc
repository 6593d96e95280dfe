#include "sim/vc_runs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace tiresias {

absl::StatusOr<std::vector<VcSpec>> VcsFromTrace(std::vector<JobSpec>* jobs,
                                                 const Topology& topology) {
  std::map<std::string, double> demand;
  double total_demand = 0;
  for (JobSpec& job : *jobs) {
    if (job.vc.empty()) job.vc = "default";
    const double d = job.num_gpus * (job.duration ? job.duration->count() : 0);
    demand[job.vc] += d;
    total_demand += d;
  }
  if (demand.empty()) {
    return absl::InvalidArgumentError("no jobs to take virtual clusters from");
  }
  struct Share {
    std::string name;
    double demand;
    int gpus;
    double remainder;
  };
  std::vector<Share> shares;
  const int total = topology.total_gpus();
  int given = 0;
  for (const auto& [name, d] : demand) {
    const double exact = total_demand > 0 ? total * d / total_demand
                                          : double(total) / demand.size();
    const int gpus = static_cast<int>(std::floor(exact));
    shares.push_back({name, d, gpus, exact - gpus});
    given += gpus;
  }
  std::vector<size_t> by_remainder(shares.size());
  for (size_t i = 0; i < shares.size(); ++i) by_remainder[i] = i;
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](size_t a, size_t b) {
                     return shares[a].remainder > shares[b].remainder;
                   });
  for (size_t i = 0; given < total; ++i, ++given) {
    ++shares[by_remainder[i % shares.size()]].gpus;
  }
  std::stable_sort(
      shares.begin(), shares.end(),
      [](const Share& a, const Share& b) { return a.demand > b.demand; });
  const int server = static_cast<int>(
      std::bit_floor(static_cast<unsigned>(topology.max_gpus_per_server())));
  if (server < 1) {
    return absl::InvalidArgumentError(
        "virtual clusters need a cluster with GPUs");
  }
  std::vector<VcSpec> vcs;
  for (const Share& s : shares) {
    VcSpec vc;
    vc.name = s.name;
    int left = s.gpus;
    while (left >= server) {
      vc.cells.push_back(server);
      left -= server;
    }
    for (int size = server / 2; size >= 1; size /= 2) {
      if (left >= size) {
        vc.cells.push_back(size);
        left -= size;
      }
    }
    vcs.push_back(std::move(vc));
  }
  if (absl::Status fit = CheckVcsFit(vcs, topology); !fit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("quotas from the trace's shares: ", fit.message(),
                     "; write a VC file (--vcs FILE) instead"));
  }
  return vcs;
}

absl::StatusOr<Topology> PrivateTopology(const VcSpec& vc) {
  if (vc.cells.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("virtual cluster ", vc.name, " has no quota"));
  }
  std::vector<ServerSpec> servers;
  for (size_t i = 0; i < vc.cells.size(); ++i) {
    servers.push_back(
        ServerSpec{0, vc.cells[i], absl::StrCat(vc.name, "/", i)});
  }
  return Topology::Create(std::move(servers));
}

std::vector<JobSpec> JobsOf(const std::vector<JobSpec>& jobs,
                            const std::string& vc) {
  std::vector<JobSpec> own;
  for (const JobSpec& job : jobs) {
    if (job.vc != vc) continue;
    own.push_back(job);
    own.back().vc.clear();
  }
  return own;
}

SimResult MergeResults(const std::vector<const SimResult*>& parts,
                       std::string policy, int total_gpus) {
  SimResult merged;
  merged.policy = std::move(policy);
  merged.total_gpus = total_gpus;
  bool first = true;
  for (const SimResult* part : parts) {
    if (!part) continue;
    if (merged.placement.empty()) merged.placement = part->placement;
    merged.jobs.insert(merged.jobs.end(), part->jobs.begin(), part->jobs.end());
    merged.busy_gpu_seconds += part->busy_gpu_seconds;
    merged.first_submit =
        first ? part->first_submit
              : std::min(merged.first_submit, part->first_submit);
    merged.last_end = std::max(merged.last_end, part->last_end);
    merged.events += part->events;
    merged.passes += part->passes;
    merged.preemptions += part->preemptions;
    merged.overhead_seconds += part->overhead_seconds;
    first = false;
  }
  std::stable_sort(merged.jobs.begin(), merged.jobs.end(),
                   [](const JobResult& a, const JobResult& b) {
                     return a.submit < b.submit;
                   });
  return merged;
}

std::vector<VcRow> CompareVcs(const std::vector<VcSpec>& vcs,
                              const std::vector<JobSpec>& jobs,
                              const SimResult& shared,
                              const std::vector<const SimResult*>& privates) {
  std::vector<VcRow> rows(vcs.size());
  absl::flat_hash_map<std::string, size_t> row_of;
  double total_demand = 0;
  for (size_t v = 0; v < vcs.size(); ++v) {
    rows[v].name = vcs[v].name;
    rows[v].cells = CellsText(vcs[v].cells);
    rows[v].quota_gpus = vcs[v].quota_gpus();
    row_of[vcs[v].name] = v;
  }
  for (const JobSpec& job : jobs) {
    const double d = job.num_gpus * (job.duration ? job.duration->count() : 0);
    total_demand += d;
    auto it = row_of.find(job.vc.empty() ? vcs.front().name : job.vc);
    if (it != row_of.end()) rows[it->second].demand_share += d;
  }
  absl::flat_hash_map<JobId, const JobResult*> shared_of;
  for (const JobResult& r : shared.jobs) {
    shared_of[r.id] = &r;
    auto it = row_of.find(r.vc.empty() ? vcs.front().name : r.vc);
    if (it == row_of.end()) continue;
    VcRow& row = rows[it->second];
    ++row.jobs;
    row.shared_avg_jct_s += r.jct();
    row.shared_avg_queueing_s += r.queueing();
  }
  for (size_t v = 0; v < vcs.size(); ++v) {
    VcRow& row = rows[v];
    if (total_demand > 0) row.demand_share /= total_demand;
    if (row.jobs > 0) {
      row.shared_avg_jct_s /= row.jobs;
      row.shared_avg_queueing_s /= row.jobs;
    }
    const SimResult* own = v < privates.size() ? privates[v] : nullptr;
    if (!own) continue;
    row.has_private = true;
    for (const JobResult& r : own->jobs) {
      auto it = shared_of.find(r.id);
      if (it == shared_of.end()) continue;
      ++row.private_jobs;
      row.private_avg_jct_s += r.jct();
      row.private_avg_queueing_s += r.queueing();
      row.shared_same_avg_queueing_s += it->second->queueing();
    }
    if (row.private_jobs > 0) {
      row.private_avg_jct_s /= row.private_jobs;
      row.private_avg_queueing_s /= row.private_jobs;
      row.shared_same_avg_queueing_s /= row.private_jobs;
    }
  }
  return rows;
}

}  // namespace tiresias
