// Scheduler: virtual clusters (SchedulerOptions-free: SetVcs). A pass
// first walks each VC's own jobs over its quota (a cluster of its cells,
// with virtual GPUs), binding cells to physical GPUs as its jobs start and
// reclaiming borrowers from them; then walks every waiting job over the
// physical GPUs no quota holds, as borrowers, within the VCs' limits.
#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sched/scheduler.h"

namespace tiresias {

absl::Status Scheduler::SetVcs(std::vector<VcSpec> vcs,
                               const Topology& topology) {
  if (!jobs_.empty() || !vcs_.empty()) {
    return absl::FailedPreconditionError(
        "virtual clusters are set once, before any job");
  }
  if (!vcs.empty()) {
    if (absl::Status fit = CheckVcsFit(vcs, topology); !fit.ok()) return fit;
  }
  return ChangeVcs(std::move(vcs), topology, Seconds{0});
}

bool Scheduler::FairShare(uint32_t index) const {
  return vcs_.empty() ? options_.fair_per_user
                      : vc_specs_[slots_[index].vc].fair_per_user;
}

double Scheduler::ShareOf(uint32_t index) const {
  if (!any_fair_ || !FairShare(index)) return 0;
  auto it = user_step_.find({slots_[index].vc, jobs_[index].spec().user});
  return it == user_step_.end() ? 0 : it->second;
}

void Scheduler::RefreshShares(Seconds now) {
  if (!any_fair_) return;
  struct Service {
    double gpu_seconds = 0;
    int running_gpus = 0;
  };
  absl::flat_hash_map<std::pair<int, std::string>, Service> service;
  std::vector<uint32_t>& fair = scratch_fair_;
  fair.clear();
  auto count = [&](uint32_t index) {
    if (!FairShare(index)) return;
    const Job& job = jobs_[index];
    Service& s = service[{slots_[index].vc, job.spec().user}];
    s.gpu_seconds += job.num_gpus() * job.TotalExecuted(now).count();
    if (job.running()) s.running_gpus += job.num_gpus();
    fair.push_back(index);
  };
  auto count_running = [&](const Queues& queues) {
    for (const RunningGroup& g : queues.running_groups) {
      for (const Entry& e : g.entries) count(e.index);
    }
  };
  for (const Entry& e : all_.waiting) count(e.index);
  count_running(all_);
  for (const Vc& vc : vcs_) count_running(vc.queues);
  bool changed = service.size() != user_step_.size();
  next_share_at_ = std::numeric_limits<double>::infinity();
  absl::flat_hash_map<std::pair<int, std::string>, double> steps;
  for (const auto& [who, s] : service) {
    const double quantum = vcs_.empty() ? options_.fair_quantum
                                        : vc_specs_[who.first].fair_quantum;
    // Below kLevelStep, so that it never reaches into the level's part of
    // the key (PriorityKey::group): 2^40 quanta is past any real service.
    const double step =
        std::min(std::floor(s.gpu_seconds / quantum + 1e-9), kLevelStep - 1);
    steps[who] = step;
    auto old = user_step_.find(who);
    changed = changed || old == user_step_.end() || old->second != step;
    // (A step at the clamp has no next one: no wakeup for it.)
    if (s.running_gpus > 0 && step < kLevelStep - 1) {
      // When its service reaches the next step, for a pass then.
      next_share_at_ = std::min(
          next_share_at_, now.count() + ((step + 1) * quantum - s.gpu_seconds) /
                                            s.running_gpus);
    }
  }
  if (!changed) return;
  user_step_ = std::move(steps);
  for (uint32_t index : fair) Rekey(index, now);
  dirty_ = true;
}

int Scheduler::VcOf(JobId id) const {
  auto it = index_of_.find(id);
  // A finished job's VC may be gone since (ChangeVcs leaves it alone).
  return vcs_.empty() || it == index_of_.end() || jobs_[it->second].finished()
             ? -1
             : slots_[it->second].vc;
}

bool Scheduler::Guaranteed(JobId id) const {
  auto it = index_of_.find(id);
  return it != index_of_.end() && slots_[it->second].guaranteed;
}

Scheduler::VcUsage Scheduler::Usage(int v) const {
  VcUsage usage;
  const Vc& vc = vcs_[v];
  usage.quota = vc_specs_[v].quota_gpus();
  for (const RunningGroup& g : vc.queues.running_groups) {
    for (const Entry& e : g.entries) usage.guaranteed += e.gpus;
  }
  usage.borrowed = vc.borrowed;
  usage.waiting_jobs = static_cast<int>(vc.queues.waiting.size());
  for (const PhysicalCell& cell : vc.bound)
    usage.bound_cells += cell.server >= 0;
  return usage;
}

std::vector<PhysicalCell> Scheduler::BoundCells(int vc) const {
  return vcs_[vc].bound;
}

bool Scheduler::UnboundCellsFit() const {
  if (!cells_) return true;
  std::vector<int> sizes;
  for (size_t v = 0; v < vcs_.size(); ++v) {
    for (size_t c = 0; c < vcs_[v].bound.size(); ++c) {
      if (vcs_[v].bound[c].server < 0) sizes.push_back(vc_specs_[v].cells[c]);
    }
  }
  return cells_->CanBindAll(std::move(sizes));
}

const std::vector<GpuId>& Scheduler::VirtualGpus(JobId id) const {
  static const std::vector<GpuId> kNone;
  auto it = index_of_.find(id);
  return it == index_of_.end() ? kNone : slots_[it->second].vgpus;
}

const std::vector<GpuId>& Scheduler::WalkGpus(uint32_t index) const {
  return walk_virtual_ ? slots_[index].vgpus : jobs_[index].gpus();
}

void Scheduler::ScheduleVcs(Seconds now, Cluster& cluster,
                            Decisions* decisions) {
  phys_ = &cluster;
  SyncCordons(cluster);
  const PolicyTraits& traits = policy_->traits();
  auto walk = [&](Cluster& over) {
    if (traits.preemptive) {
      PreemptiveWalk(now, over, decisions);
    } else {
      FillFreeGpus(now, over, traits.head_of_line_blocking, decisions);
    }
  };
  // Each VC's walk over its quota. A borrower reclaimed by a later VC's
  // walk, or displaced in the borrowers' walk, waits in its own VC: if it
  // fits there it starts in this pass too, by another round over the VCs
  // that got one back (each round only shrinks the borrowers).
  auto vc_rounds = [&] {
    walk_virtual_ = true;
    bool again = true;
    while (again) {
      again = false;
      for (size_t v = 0; v < vcs_.size(); ++v) {
        Vc& vc = vcs_[v];
        if (!vc.walk_again) continue;
        vc.walk_again = false;
        if (!vc.cluster || vc.queues.waiting.empty()) continue;
        walk_ = &vc.queues;
        walk_vc_ = static_cast<int>(v);
        const int64_t before = reclaims_;
        walk(*vc.cluster);
        UnbindIdleCells(walk_vc_);
        again = again || reclaims_ != before;
      }
    }
    walk_virtual_ = false;
    walk_vc_ = -1;
    walk_ = &all_;
  };
  for (Vc& vc : vcs_) vc.walk_again = true;
  vc_rounds();
  ComputeBorrowCaps();
  bool any_cap = false;
  for (const Vc& vc : vcs_) any_cap = any_cap || vc.borrow_cap > 0;
  if (any_cap && !all_.waiting.empty()) {
    // First each VC up to its weighted share, in priority order; then, if
    // a share held a job back, what is left to any, in priority order (so
    // a job of a higher queue may still displace a borrower of a lower
    // one, whichever VC it belongs to).
    // What a walk started or displaced is counted running (or not) once
    // it commits: its pending counts go.
    auto committed = [&] {
      for (Vc& vc : vcs_) vc.pending_borrow = 0;
      borrow_pending_ = 0;
    };
    borrow_walk_ = true;
    capped_ = false;
    walk(cluster);
    committed();
    if (capped_) {
      borrow_uncapped_ = true;
      walk(cluster);
      committed();
      borrow_uncapped_ = false;
    }
    borrow_walk_ = false;
    // A borrower reclaimed now that does not fit its own quota would wait
    // for the next event with GPUs free: another pass at once.
    const int64_t before = reclaims_;
    vc_rounds();
    if (reclaims_ != before) again_now_ = true;
  }
  phys_ = nullptr;
}

void Scheduler::SyncCordons(const Cluster& cluster) {
  for (int s = 0; s < cluster.topology().num_servers(); ++s) {
    cells_->SetCordoned(s, cluster.cordoned(s));
  }
  // A cell bound to a cordoned server takes no new job; once its jobs
  // leave it is unbound and binds elsewhere.
  for (Vc& vc : vcs_) {
    for (size_t c = 0; c < vc.bound.size(); ++c) {
      const bool cordoned =
          vc.bound[c].server >= 0 && cluster.cordoned(vc.bound[c].server);
      if (vc.cluster->cordoned(static_cast<int>(c)) != cordoned) {
        vc.cluster->SetCordoned(static_cast<int>(c), cordoned);
      }
    }
  }
}

void Scheduler::ComputeBorrowCaps() {
  const Topology& topology = phys_->topology();
  scratch_guaranteed_on_.assign(topology.num_servers(), 0);
  int quotas = 0;
  int lent = 0;
  lend_limited_ = false;
  std::vector<int> own_lent(vcs_.size());
  for (size_t v = 0; v < vcs_.size(); ++v) {
    const Vc& vc = vcs_[v];
    for (const RunningGroup& g : vc.queues.running_groups) {
      for (const Entry& e : g.entries) {
        for (GpuId gpu : jobs_[e.index].gpus()) {
          ++scratch_guaranteed_on_[topology.ServerOf(gpu)];
        }
      }
    }
    quotas += vc_specs_[v].quota_gpus();
    const int idle = vc.cluster ? vc.cluster->free_gpus() : 0;
    own_lent[v] = std::min(vc_specs_[v].lend_limit, idle);
    lent += own_lent[v];
    lend_limited_ = lend_limited_ || vc_specs_[v].lend_limit < idle;
  }
  const int unassigned =
      std::max(0, topology.total_gpus() - phys_->cordoned_gpus() - quotas);
  borrow_pool_ = unassigned + lent;
  // What each VC may borrow this pass: the pool shared by weight among
  // those that want more (weighted max-min: a VC that wants less than its
  // share gets what it wants, the rest is shared again).
  std::vector<double> demand(vcs_.size());
  std::vector<size_t> active;
  for (size_t v = 0; v < vcs_.size(); ++v) {
    Vc& vc = vcs_[v];
    int64_t waiting = 0;
    for (auto [gpus, jobs] : vc.queues.waiting_by_gpus) {
      waiting += int64_t{gpus} * jobs;
    }
    // Its own idle quota is not its to borrow: a job that did not fit
    // there does not fit as a borrower of it either.
    demand[v] = static_cast<double>(
        std::min<int64_t>({vc_specs_[v].borrow_limit, vc.borrowed + waiting,
                           borrow_pool_ - own_lent[v]}));
    vc.borrow_cap = 0;
    if (waiting > 0 && demand[v] > 0) active.push_back(v);
  }
  double remaining = borrow_pool_;
  while (!active.empty() && remaining > 0) {
    double weights = 0;
    for (size_t v : active) weights += vc_specs_[v].weight;
    const double per_weight = remaining / weights;
    std::vector<size_t> unmet;
    for (size_t v : active) {
      if (demand[v] <= per_weight * vc_specs_[v].weight) {
        vcs_[v].borrow_cap = demand[v];
        remaining -= demand[v];
      } else {
        unmet.push_back(v);
      }
    }
    if (unmet.size() == active.size()) {
      for (size_t v : unmet) {
        vcs_[v].borrow_cap = per_weight * vc_specs_[v].weight;
      }
      break;
    }
    active = std::move(unmet);
  }
}

Scheduler::BorrowRoom Scheduler::Lendable(const Cluster& cluster) const {
  BorrowRoom room;
  int quotas = 0;
  int lent = 0;
  for (size_t v = 0; v < vcs_.size(); ++v) {
    quotas += vc_specs_[v].quota_gpus();
    const int idle = vcs_[v].cluster ? vcs_[v].cluster->free_gpus() : 0;
    lent += std::min(vc_specs_[v].lend_limit, idle);
    room.lend_limited = room.lend_limited || vc_specs_[v].lend_limit < idle;
  }
  room.pool =
      std::max(0, cluster.total_gpus() - cluster.cordoned_gpus() - quotas) +
      lent;
  room.borrowed = total_borrowed_;
  return room;
}

bool Scheduler::MayBorrow(uint32_t index) const {
  // A borrower must give its GPUs back when their owner needs them.
  if (jobs_[index].spec().no_preempt) return false;
  const int gpus = jobs_[index].num_gpus();
  const int v = slots_[index].vc;
  const Vc& vc = vcs_[v];
  const int have = vc.borrowed + vc.pending_borrow;
  if (int64_t{have} + gpus > vc_specs_[v].borrow_limit) return false;
  // Without a lending limit the pool is every GPU no quota holds, which
  // the walk's cluster already counts.
  if (lend_limited_ &&
      total_borrowed_ + borrow_pending_ + gpus > borrow_pool_) {
    return false;
  }
  // Up to its share, the last job it starts may go past it.
  if (borrow_uncapped_ || have < vc.borrow_cap - 1e-9) return true;
  capped_ = true;
  return false;
}

bool Scheduler::StartOnQuota(uint32_t index, std::vector<GpuId>* gpus,
                             Decisions* decisions, Seconds now) {
  const Job& job = jobs_[index];
  Vc& vc = vcs_[walk_vc_];
  const Topology& own = vc.cluster->topology();
  const Topology& physical = phys_->topology();
  // A borrower started in this pass cannot be reclaimed in it (its host
  // has not started it yet): cells with one come last.
  auto just_started = [&](GpuId g) {
    const JobId owner = phys_->owner(g);
    return owner != kNoJob &&
           slots_[index_of_.at(owner)].started_in_pass == pass_;
  };
  // What reclaiming a cell's borrowers costs: each whole job loses its
  // GPUs, those of higher priority (lower queues) count more.
  const int queues = options_.queues.num_queues();
  auto held_in = [&](const PhysicalCell& cell) {
    // An exclusive borrower on the server goes too: all its server.
    int64_t cost = phys_->reserved(cell.server)
                       ? int64_t{physical.server(cell.server).num_gpus} * queues
                       : 0;
    JobId last = kNoJob;
    const GpuId first = physical.server(cell.server).first_gpu + cell.offset;
    for (int i = 0; i < cell.size; ++i) {
      const JobId owner = phys_->owner(first + i);
      if (owner == kNoJob || owner == last) continue;
      last = owner;
      const Job& borrower = jobs_[index_of_.at(owner)];
      cost += just_started(first + i)
                  ? 1'000'000
                  : int64_t{borrower.num_gpus()} * (queues - borrower.queue());
    }
    return cost;
  };
  std::vector<int> newly_bound;
  auto undo = [&](bool failure) {
    for (int c : newly_bound) {
      cells_->Unbind(vc.bound[c]);
      vc.bound[c] = PhysicalCell{};
    }
    vc.cluster->Release(job.id(), *gpus);
    bind_failures_ += failure;
    return false;
  };
  std::vector<GpuId> mapped;
  bool whole_servers = true;
  for (GpuId g : *gpus) {
    const int c = own.ServerOf(g);
    if (vc.bound[c].server < 0) {
      std::optional<PhysicalCell> cell =
          cells_->Bind(own.server(c).num_gpus, vc.home[c], held_in);
      if (!cell) return undo(true);
      vc.bound[c] = *cell;
      newly_bound.push_back(c);
    }
    const PhysicalCell& cell = vc.bound[c];
    whole_servers =
        whole_servers && cell.size == physical.server(cell.server).num_gpus;
    mapped.push_back(physical.server(cell.server).first_gpu + cell.offset +
                     (g - own.server(c).first_gpu));
  }
  // The borrowers to give those GPUs back (checkpointed), now: those on
  // them, an exclusive borrower anywhere on their servers (it keeps the
  // whole server from everyone else), and, for an exclusive job on whole
  // servers, every borrower there. None may have started in this pass.
  const bool exclusive = job.spec().exclusive && whole_servers;
  std::vector<JobId> victims;
  for (GpuId g : mapped) {
    if (phys_->owner(g) != kNoJob) victims.push_back(phys_->owner(g));
    const int server = physical.ServerOf(g);
    if (!exclusive && !phys_->reserved(server)) continue;
    const Server& s = physical.server(server);
    for (GpuId other = s.first_gpu; other < s.first_gpu + s.num_gpus; ++other) {
      if (phys_->owner(other) != kNoJob &&
          (exclusive || phys_->exclusive_gpu(other))) {
        victims.push_back(phys_->owner(other));
      }
    }
  }
  std::sort(victims.begin(), victims.end());
  victims.erase(std::unique(victims.begin(), victims.end()), victims.end());
  for (JobId victim : victims) {
    if (slots_[index_of_.at(victim)].started_in_pass == pass_) {
      again_now_ = true;
      return undo(false);
    }
  }
  for (JobId victim : victims) Reclaim(index_of_.at(victim), now, decisions);
  if (!phys_->Allocate(job.id(), mapped, exclusive).ok()) return undo(true);
  slots_[index].vgpus = *gpus;
  *gpus = std::move(mapped);
  return true;
}

void Scheduler::Reclaim(uint32_t index, Seconds now, Decisions* decisions) {
  assert(jobs_[index].running() && !slots_[index].guaranteed);
  phys_->ReleaseJob(jobs_[index]);
  if (stable_) {
    // As a preemption by the walk: first among its queue's waiting jobs.
    const Tier tier = slots_[index].tier;
    if (tier == Tier::kRunning) Join(index, Tier::kWaiting, /*front=*/true);
    if (tier == Tier::kJoined) Join(index, Tier::kWaiting);
  }
  vcs_[slots_[index].vc].walk_again = true;
  Preempt(index, now, decisions);
  ++reclaims_;
}

void Scheduler::ReleaseQuota(uint32_t index) {
  Slot& slot = slots_[index];
  if (!slot.guaranteed) return;
  vcs_[slot.vc].cluster->Release(jobs_[index].id(), slot.vgpus);
  slot.vgpus.clear();
  UnbindIdleCells(slot.vc);
}

void Scheduler::UnbindIdleCells(int v) {
  Vc& vc = vcs_[v];
  const Topology& own = vc.cluster->topology();
  for (size_t c = 0; c < vc.bound.size(); ++c) {
    if (vc.bound[c].server < 0) continue;
    const Server& server = own.server(static_cast<int>(c));
    bool idle = true;
    for (int i = 0; i < server.num_gpus && idle; ++i) {
      idle = vc.cluster->gpu_unheld(server.first_gpu + i);
    }
    if (!idle) continue;
    cells_->Unbind(vc.bound[c]);
    vc.bound[c] = PhysicalCell{};
    if (vc.cluster->cordoned(static_cast<int>(c))) {
      vc.cluster->SetCordoned(static_cast<int>(c), false);
    }
  }
}

}  // namespace tiresias
