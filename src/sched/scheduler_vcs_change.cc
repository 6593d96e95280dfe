// Scheduler: virtual clusters set or changed while jobs run (ChangeVcs,
// the master's): cells bound again where they were, by server name, and
// running jobs adopted into their VC's cells where they run.
#include <algorithm>
#include <cassert>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sched/scheduler.h"

namespace tiresias {

absl::Status Scheduler::ChangeVcs(std::vector<VcSpec> vcs,
                                  const Topology& topology, Seconds now) {
  absl::flat_hash_map<std::string, int> index;
  for (size_t v = 0; v < vcs.size(); ++v) {
    if (!index.emplace(vcs[v].name, static_cast<int>(v)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "virtual cluster \"", vcs[v].name, "\" is defined twice"));
    }
  }
  std::vector<uint32_t> unfinished;
  for (uint32_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].finished()) continue;
    if (!vcs.empty() && !index.contains(jobs_[i].spec().vc) &&
        !jobs_[i].spec().vc.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", jobs_[i].id(), " is in virtual cluster \"",
                       jobs_[i].spec().vc, "\", which would be gone"));
    }
    unfinished.push_back(i);
  }
  // Every unfinished job leaves the queues as they stand, and rejoins
  // them in the new VCs (a CPU-only job's queues have no VC).
  for (uint32_t i : unfinished) {
    if (!jobs_[i].cpu_only()) Dequeue(i);
  }
  // Where each VC's cells are bound, by server name: bound there again
  // where the new VCs and cluster still have them (a cluster re-numbered
  // by a node coming or going keeps its bindings).
  struct OldCell {
    std::string vc, server;
    int offset, size;
  };
  std::vector<OldCell> old_cells;
  for (size_t v = 0; v < vcs_.size(); ++v) {
    for (const PhysicalCell& cell : vcs_[v].bound) {
      if (cell.server < 0) continue;
      old_cells.push_back({vc_specs_[v].name,
                           vc_topology_->server(cell.server).name, cell.offset,
                           cell.size});
    }
  }
  all_ = Queues{};
  vcs_.clear();
  vc_index_ = std::move(index);
  vc_specs_ = std::move(vcs);
  cells_.reset();
  vc_topology_.reset();
  user_step_.clear();
  any_fair_ = false;
  total_borrowed_ = 0;
  vcs_.resize(vc_specs_.size());
  if (!vc_specs_.empty()) {
    cells_ = std::make_unique<CellPool>(topology);
    vc_topology_ = std::make_unique<Topology>(topology);
  }
  for (size_t v = 0; v < vc_specs_.size(); ++v) {
    Vc& vc = vcs_[v];
    const std::vector<int>& cells = vc_specs_[v].cells;
    any_fair_ = any_fair_ || vc_specs_[v].fair_per_user;
    vc.bound.assign(cells.size(), PhysicalCell{});
    vc.home.assign(cells.size(), -1);
    if (cells.empty()) continue;
    // Cell i of a server's size is at home on server i (in its rack): so
    // one VC whose cells are the whole cluster sees the cluster itself.
    std::vector<ServerSpec> servers;
    for (size_t i = 0; i < cells.size(); ++i) {
      ServerSpec server{0, cells[i], absl::StrCat(vc_specs_[v].name, "/", i)};
      const int c = static_cast<int>(i);
      if (c < topology.num_servers() &&
          topology.server(c).num_gpus == cells[i]) {
        server.rack = topology.server(c).rack;
        vc.home[i] = c;
      }
      servers.push_back(std::move(server));
    }
    absl::StatusOr<Topology> own = Topology::Create(std::move(servers));
    assert(own.ok());
    vc.cluster = std::make_unique<Cluster>(*std::move(own));
  }
  if (!old_cells.empty()) {
    absl::flat_hash_map<std::string, int> server_of;
    for (int i = 0; i < topology.num_servers(); ++i) {
      server_of[topology.server(i).name] = i;
    }
    for (const OldCell& old : old_cells) {
      auto v = vc_index_.find(old.vc);
      auto server = server_of.find(old.server);
      if (v == vc_index_.end() || server == server_of.end()) continue;
      Vc& vc = vcs_[v->second];
      const std::vector<int>& sizes = vc_specs_[v->second].cells;
      const PhysicalCell cell{server->second, old.offset, old.size};
      for (size_t c = 0; c < sizes.size(); ++c) {
        if (sizes[c] != old.size || vc.bound[c].server >= 0) continue;
        if (cells_->BindAt(cell)) vc.bound[c] = cell;
        break;
      }
    }
  }
  // Running jobs that held their quota first (the largest first: they
  // need the largest cells), then the others: each is adopted into its
  // VC's cells where it runs, or borrows.
  std::vector<std::pair<int, uint32_t>> adopt;
  for (uint32_t i : unfinished) {
    Slot& slot = slots_[i];
    const bool was_guaranteed = slot.guaranteed;
    slot.vc = vc_specs_.empty() ? 0 : VcIndex(jobs_[i].spec().vc);
    slot.guaranteed = false;
    slot.vgpus.clear();
    if (jobs_[i].running() && !jobs_[i].cpu_only() && !vc_specs_.empty()) {
      adopt.push_back(
          {(was_guaranteed ? 0 : 1 << 20) - jobs_[i].num_gpus(), i});
    }
  }
  std::sort(adopt.begin(), adopt.end());
  // First the jobs inside the cells carried over; then the carried cells
  // no job holds go (a job stopped with a lost node, a smaller quota), so
  // they neither block the others' adoption nor hide a safety breach;
  // then the rest bind cells of their own.
  std::vector<uint32_t> rest;
  for (auto [order, i] : adopt) {
    if (!AdoptOnQuota(i, /*bind=*/false)) rest.push_back(i);
  }
  for (size_t v = 0; v < vcs_.size(); ++v) {
    if (vcs_[v].cluster) UnbindIdleCells(static_cast<int>(v));
  }
  for (uint32_t i : rest) AdoptOnQuota(i, /*bind=*/true);
  for (uint32_t i : unfinished) {
    if (!jobs_[i].cpu_only()) Enqueue(i, now);
  }
  dirty_ = true;
  return absl::OkStatus();
}

int Scheduler::VcIndex(const std::string& name) const {
  auto it = vc_index_.find(name);
  return it == vc_index_.end() ? 0 : it->second;
}

bool Scheduler::AdoptOnQuota(uint32_t index, bool bind) {
  const Job& job = jobs_[index];
  Slot& slot = slots_[index];
  Vc& vc = vcs_[slot.vc];
  if (!vc.cluster) return false;
  const Topology& physical = *vc_topology_;
  const Topology& own = vc.cluster->topology();
  const std::vector<int>& sizes = vc_specs_[slot.vc].cells;
  std::vector<int> newly_bound;
  std::vector<GpuId> vgpus;
  auto undo = [&] {
    for (int c : newly_bound) {
      cells_->Unbind(vc.bound[c]);
      vc.bound[c] = PhysicalCell{};
    }
    return false;
  };
  // The virtual GPU of a bound cell for physical GPU `g`, if the cell
  // holds it and no other job of the VC has it.
  auto virtual_gpu = [&](int c, GpuId g) -> std::optional<GpuId> {
    const PhysicalCell& cell = vc.bound[c];
    if (cell.server < 0) return std::nullopt;
    const int offset = g - physical.server(cell.server).first_gpu;
    if (physical.ServerOf(g) != cell.server || offset < cell.offset ||
        offset >= cell.offset + cell.size) {
      return std::nullopt;
    }
    const GpuId v = own.server(c).first_gpu + (offset - cell.offset);
    if (!vc.cluster->gpu_unheld(v)) return std::nullopt;
    return v;
  };
  // Adopting must not break the safety of core/cells.h (every other
  // cell still bindable) where it holds; a job that would borrows instead.
  std::optional<bool> fit_before;  // known once a cell must be bound
  for (GpuId g : job.gpus()) {
    if (g < 0 || g >= physical.total_gpus()) return undo();
    std::optional<GpuId> v;
    for (size_t c = 0; c < sizes.size() && !v; ++c) {
      v = virtual_gpu(static_cast<int>(c), g);
    }
    if (!v && !bind) return undo();
    if (!v) {
      // Bind a free cell on the block holding g: the size that wastes the
      // fewest GPUs the job does not use there, then the largest.
      const int server = physical.ServerOf(g);
      const GpuId first = physical.server(server).first_gpu;
      const int offset = g - first;
      int best = -1;
      std::pair<int, int> best_rank;
      for (size_t c = 0; c < sizes.size(); ++c) {
        const int k = sizes[c];
        const PhysicalCell cell{server, offset - offset % k, k};
        if (vc.bound[c].server >= 0 || !cells_->CanBindAt(cell)) continue;
        int used = 0;
        for (GpuId other : job.gpus()) {
          used +=
              other >= first + cell.offset && other < first + cell.offset + k;
        }
        const std::pair<int, int> rank{k - used, -k};
        if (best < 0 || rank < best_rank) {
          best = static_cast<int>(c);
          best_rank = rank;
        }
      }
      if (best < 0) return undo();
      if (!fit_before) fit_before = UnboundCellsFit();
      vc.bound[best] =
          PhysicalCell{server, offset - offset % sizes[best], sizes[best]};
      cells_->BindAt(vc.bound[best]);
      newly_bound.push_back(best);
      v = virtual_gpu(best, g);
    }
    vgpus.push_back(*v);
  }
  if ((fit_before.value_or(false) && !UnboundCellsFit()) ||
      // (An exclusive job holds its cells' servers alone, as a job
      // started there does.)
      !vc.cluster->Allocate(job.id(), vgpus, job.spec().exclusive).ok()) {
    return undo();
  }
  slot.guaranteed = true;
  slot.vgpus = std::move(vgpus);
  return true;
}

}  // namespace tiresias
