// Scheduler: one pass's walks (see scheduler.h): the preemptive walk over
// waiting and running jobs, the non-preemptive one over free GPUs, and the
// CPU-only jobs' over spare CPUs.
#include <algorithm>
#include <cassert>
#include <limits>

#include "core/node_filter.h"
#include "core/shape.h"
#include "sched/scheduler.h"

namespace tiresias {
void Scheduler::PreemptiveWalk(Seconds now, Cluster& cluster,
                               Decisions* decisions) {
  pending_starts_.clear();
  qos_pending_.clear();
  scratch_preempt_.clear();
  scratch_unplaceable_.clear();
  // An upper bound on what waiting jobs may get: every GPU but the idle
  // ones of cordoned servers (those held there count until their jobs are
  // kept, which over-counts, never under-counts).
  int capacity = cluster.total_gpus() - cluster.cordoned_idle_gpus();
  const int min_waiting = MinWaitingGpus();
  walk_tracks_kept_ = !InitCursors(now);
  if (!walk_tracks_kept_) capacity = cluster.free_gpus();
  if (walk_tracks_kept_) {
    scratch_kept_.assign(cluster.topology().num_servers(), 0);
    if (borrow_walk_) {
      // What VCs' quotas hold is kept: no borrower displaces it.
      for (size_t s = 0; s < scratch_kept_.size(); ++s) {
        scratch_kept_[s] = scratch_guaranteed_on_[s];
        capacity -= scratch_guaranteed_on_[s];
      }
    }
  }
  auto w = walk_->waiting.begin();
  // Jobs in priority order. A running job ahead of the next waiting one
  // keeps its GPUs (it always fits: capacity still counts them). A waiting
  // job that fits by count is placed, displacing the lowest-priority running
  // jobs if it must. The walk ends when no waiting job could fit any more.
  // Jobs displaced during the walk wait from their new place in the order
  // (scratch_displaced_), so one that fits elsewhere moves in this pass
  // instead of waiting for the next event.
  scratch_displaced_.clear();
  min_waiting_ = min_waiting;
  while ((w != walk_->waiting.end() || !scratch_displaced_.empty()) &&
         capacity >= min_waiting_) {
    const bool from_displaced =
        !scratch_displaced_.empty() &&
        (w == walk_->waiting.end() || *scratch_displaced_.begin() < *w);
    const Entry next = from_displaced ? *scratch_displaced_.begin() : *w;
    Entry running{};
    Cursor* cursor = NextRunning(now, &running);
    if (cursor && running < next) {
      capacity -= running.gpus;
      Keep(WalkGpus(running.index), cluster);
      ++cursor->it;
      continue;
    }
    if (from_displaced) {
      scratch_displaced_.erase(scratch_displaced_.begin());
    } else {
      ++w;
    }
    if (next.gpus <= capacity && PlaceInWalk(next.index, now, cluster)) {
      capacity -= next.gpus;
    }
  }
  if (stable_) {
    // The preempted go to the waiting tier in list order: those that had
    // kept their place ahead of every waiting job, those demoted into the
    // queue behind them.
    std::sort(
        scratch_preempt_.begin(), scratch_preempt_.end(),
        [&](uint32_t a, uint32_t b) { return slots_[a].key < slots_[b].key; });
    for (auto it = scratch_preempt_.rbegin(); it != scratch_preempt_.rend();
         ++it) {
      if (slots_[*it].tier == Tier::kRunning) {
        Join(*it, Tier::kWaiting, /*front=*/true);
      }
    }
    for (uint32_t index : scratch_preempt_) {
      if (slots_[index].tier == Tier::kJoined) Join(index, Tier::kWaiting);
    }
  }
  for (uint32_t index : scratch_preempt_) {
    // A VC's walk set aside its virtual GPUs; its physical ones go too.
    if (walk_virtual_) phys_->Release(jobs_[index].id(), jobs_[index].gpus());
    Preempt(index, now, decisions);
  }
  for (auto& [index, gpus] : pending_starts_) {
    CommitStart(index, now, std::move(gpus), decisions);
  }
}

bool Scheduler::InitCursors(Seconds now) {
  std::vector<Cursor>& cursors = scratch_cursors_;
  cursors.clear();
  for (const RunningGroup& g : walk_->running_groups) {
    if (!g.entries.empty()) {
      cursors.push_back(
          {g.slope, g.entries.begin(), g.entries.end(), g.entries.end()});
    }
  }
  // When every running job outranks every waiting one, each keeps its GPUs
  // and the walk needs only the waiting jobs and the free GPUs.
  if (walk_->waiting.empty()) return false;
  for (const Cursor& c : cursors) {
    if (!(KeyAt(c, *std::prev(c.end), now) < *walk_->waiting.begin()))
      return false;
  }
  cursors.clear();
  return true;
}

Scheduler::Entry Scheduler::KeyAt(const Cursor& c, const Entry& stored,
                                  Seconds now) const {
  Entry e = stored;
  if (std::isfinite(c.slope)) e.key.k1 += c.slope * now.count();
  return e;
}

bool Scheduler::Displaced(uint32_t index) const {
  return slots_[index].displaced_in_pass == pass_;
}

Scheduler::Cursor* Scheduler::NextRunning(Seconds now, Entry* entry) {
  Cursor* best = nullptr;
  for (Cursor& c : scratch_cursors_) {
    while (c.it != c.end && Displaced(c.it->index)) ++c.it;
    if (c.it == c.end) continue;
    Entry e = KeyAt(c, *c.it, now);
    if (!best || e < *entry) {
      best = &c;
      *entry = e;
    }
  }
  return best;
}

bool Scheduler::PopLowestRunning(Seconds now, uint32_t* index) {
  Cursor* worst = nullptr;
  Entry worst_entry{};
  for (Cursor& c : scratch_cursors_) {
    // A no-preempt job is never a victim: passed over as if it were not
    // there (it keeps its GPUs, so a job that needs them does not fit).
    // Costs O(no-preempt running jobs) per displacement attempt.
    // Nor is one started in this pass (a VC walked again after a reclaim:
    // its host has not started it yet).
    while (c.back != c.it &&
           (Displaced(std::prev(c.back)->index) ||
            jobs_[std::prev(c.back)->index].spec().no_preempt ||
            slots_[std::prev(c.back)->index].started_in_pass == pass_)) {
      --c.back;
    }
    if (c.back == c.it) continue;
    Entry e = KeyAt(c, *std::prev(c.back), now);
    if (!worst || worst_entry < e) {
      worst = &c;
      worst_entry = e;
    }
  }
  if (!worst) return false;
  *index = (--worst->back)->index;
  return true;
}

void Scheduler::Keep(const std::vector<GpuId>& gpus, const Cluster& cluster) {
  if (!walk_tracks_kept_) return;
  for (GpuId g : gpus) ++scratch_kept_[cluster.topology().ServerOf(g)];
}

namespace {
// Marks a job set aside that turned out not to be needed.
constexpr uint32_t kKeptMarker = std::numeric_limits<uint32_t>::max();
}  // namespace

bool Scheduler::PlaceInWalk(uint32_t index, Seconds now, Cluster& cluster) {
  const Job& job = jobs_[index];
  // Within a pass, a job behind another that could not be placed even
  // with every running job behind it set aside, under the same scheme and
  // needing at least as many GPUs, cannot be placed either; unless only
  // the other fits in one server (consolidate places a job larger than
  // every server on whole free servers: on servers of mixed sizes, such
  // as a VC's cells, 4 GPUs may fit four 1-GPU servers where 2 fit none).
  const std::string_view scheme = slots_[index].scheme;
  const int largest = cluster.topology().max_gpus_per_server();
  // (A shaped or filtered job is placed by a rule of its own, not its
  // scheme's: core/shape.h.)
  const bool own = job.spec().own_placement();
  for (const auto& [failed_scheme, gpus] : scratch_unplaceable_) {
    if (!own && failed_scheme == scheme && job.num_gpus() >= gpus &&
        (gpus > largest || job.num_gpus() <= largest)) {
      return false;
    }
  }
  if (borrow_walk_ && !MayBorrow(index)) return false;
  if (slots_[index].qos >= 0 && !QosAllows(index)) return false;
  auto place = [&] { return PlaceAndAllocate(index, cluster); };
  auto pending = [&] {
    Keep(scratch_gpus_, cluster);
    pending_starts_.push_back({index, scratch_gpus_});
    if (slots_[index].qos >= 0) PendQos(index, job.num_gpus());
    if (borrow_walk_) {
      vcs_[slots_[index].vc].pending_borrow += job.num_gpus();
      borrow_pending_ += job.num_gpus();
    }
  };
  if (place()) {
    pending();
    return true;
  }
  auto unplaceable = [&] {
    if (!own) scratch_unplaceable_.push_back({scheme, job.num_gpus()});
    return false;
  };
  // Could it fit with every lower-priority running job set aside? First
  // from per-server counts: what the walk has not kept is free or held by
  // a job it may displace (an upper bound, so a "no" is final).
  if (walk_tracks_kept_) {
    const Topology& topo = cluster.topology();
    scratch_avail_.resize(topo.num_servers());
    int total = 0;
    for (int s = 0; s < topo.num_servers(); ++s) {
      // A cordoned server takes no new job, whoever is displaced there.
      scratch_avail_[s] =
          cluster.cordoned(s) ? 0 : topo.server(s).num_gpus - scratch_kept_[s];
      total += scratch_avail_[s];
    }
    if (!JobMightFit(*placer_, topo, scratch_avail_, total, job)) {
      return unplaceable();
    }
  }
  // Then for real: set aside the lowest-priority running jobs one at a time
  // until it fits; those whose GPUs it takes are preempted, the rest keep
  // theirs. If it does not fit with all of them aside, all keep theirs.
  std::vector<uint32_t>& released = scratch_released_;
  released.clear();
  uint32_t victim = 0;
  for (Cursor& c : scratch_cursors_) c.back = c.end;
  bool placed = false;
  while (!placed && PopLowestRunning(now, &victim)) {
    cluster.Release(jobs_[victim].id(), WalkGpus(victim));
    released.push_back(victim);
    placed = cluster.free_gpus() >= job.num_gpus() && place();
  }
  if (!placed) {
    for (uint32_t r : released) {
      absl::Status back = cluster.Allocate(jobs_[r].id(), WalkGpus(r),
                                           jobs_[r].spec().exclusive);
      assert(back.ok());
      (void)back;
    }
    return unplaceable();
  }
  // The last one set aside was needed; of the others, keep every one the
  // job can do without, highest priority first (as the original
  // simulator's pass keeps each job that still fits, in order). Those kept
  // leave the list; the rest are preempted below if the job took their GPUs.
  if (released.size() > 1) {
    cluster.Release(job.id(), scratch_gpus_);
    size_t kept = 0;
    for (size_t i = released.size() - 1; i-- > 0;) {
      const Job& other = jobs_[released[i]];
      absl::Status back = cluster.Allocate(other.id(), WalkGpus(released[i]),
                                           other.spec().exclusive);
      assert(back.ok());
      (void)back;
      if (cluster.free_gpus() >= job.num_gpus() && place()) {
        cluster.Release(job.id(), scratch_gpus_);
        released[i] = kKeptMarker;
        ++kept;
      } else {
        cluster.Release(other.id(), WalkGpus(released[i]));
      }
    }
    if (kept > 0) {
      released.erase(std::remove(released.begin(), released.end(), kKeptMarker),
                     released.end());
    }
    placed = place();
    assert(placed);
  }
  pending();
  for (uint32_t r : released) {
    const Job& other = jobs_[r];
    // Kept if its GPUs are as it left them: unheld, and not on a server
    // an exclusive job took (nor, for an exclusive one, beside another).
    if (cluster.Fits(WalkGpus(r), other.spec().exclusive)) {
      absl::Status kept =
          cluster.Allocate(other.id(), WalkGpus(r), other.spec().exclusive);
      assert(kept.ok());
      (void)kept;
    } else {
      slots_[r].displaced_in_pass = pass_;
      scratch_preempt_.push_back(r);
      if (slots_[r].qos >= 0) PendQos(r, -other.num_gpus());
      if (borrow_walk_) {
        vcs_[slots_[r].vc].walk_again = true;
        vcs_[slots_[r].vc].pending_borrow -= other.num_gpus();
        borrow_pending_ -= other.num_gpus();
      }
      scratch_displaced_.insert(DisplacedEntry(r, now));
      min_waiting_ = std::min(min_waiting_, other.num_gpus());
    }
  }
  return placed;
}

Scheduler::Entry Scheduler::DisplacedEntry(uint32_t index, Seconds now) const {
  const Job& job = jobs_[index];
  if (!stable_) {
    // The key it will have waiting: a waiting job's key at `now` is the
    // running one's read at `now` (its service stops growing from here).
    PriorityKey key = policy_->Key(job, now);
    key.group = GroupOf(index);
    return Entry{walk_ == &all_ ? AllKey(key) : key, index, job.num_gpus()};
  }
  // Behind every job of its queue the walk has yet to reach: as after this
  // pass, when its queue's list holds the running jobs (those still to
  // start included) ahead of it. In list order among themselves.
  constexpr double kAfterTheQueue = 3;  // beyond Tier::kJoined
  const PriorityKey key{static_cast<double>(job.queue()),
                        kAfterTheQueue,
                        policy_->WaitingRank(job, now),
                        job.queue_position(),
                        job.id(),
                        GroupOf(index)};
  return Entry{walk_ == &all_ ? AllKey(key) : key, index, job.num_gpus()};
}

void Scheduler::FillFreeGpus(Seconds now, Cluster& cluster,
                             bool head_of_line_blocking, Decisions* decisions) {
  auto it = walk_->waiting.begin();
  while (it != walk_->waiting.end() &&
         cluster.free_gpus() >= MinWaitingGpus()) {
    const Entry entry = *it;
    // A job its QOS's per-user limit holds back blocks no one (Slurm's
    // too): it is not waiting for GPUs.
    if (slots_[entry.index].qos >= 0 && !QosAllows(entry.index)) {
      ++it;
      continue;
    }
    const bool fits = entry.gpus <= cluster.free_gpus() &&
                      (!borrow_walk_ || MayBorrow(entry.index));
    if (fits && TryStart(entry.index, now, cluster, decisions)) {
      it = walk_->waiting.upper_bound(entry);
    } else if (head_of_line_blocking) {
      break;
    } else {
      ++it;
    }
  }
}

bool Scheduler::PlaceAndAllocate(uint32_t index, Cluster& cluster) {
  const Job& job = jobs_[index];
  scratch_gpus_.clear();
  if (!PlaceJob(*placer_, cluster, job, rng_, &scratch_gpus_)) return false;
  absl::Status allocated =
      cluster.Allocate(job.id(), scratch_gpus_, job.spec().exclusive);
  assert(allocated.ok());
  (void)allocated;
  return true;
}

bool Scheduler::TryStart(uint32_t index, Seconds now, Cluster& cluster,
                         Decisions* decisions) {
  return PlaceAndAllocate(index, cluster) &&
         CommitStart(index, now, scratch_gpus_, decisions);
}

void Scheduler::FillSpareCpus(Seconds now, Cluster& cluster,
                              Decisions* decisions) {
  if (cpu_waiting_.empty()) return;
  const Topology& topology = cluster.topology();
  // The most free spare CPUs on one server that may take a job: a job
  // asking more is skipped without a scan. O(servers), again only when the
  // server that had them took a job.
  auto largest_free = [&] {
    int most = 0;
    for (int s = 0; s < topology.num_servers(); ++s) {
      if (!cluster.cordoned(s) && !cluster.reserved(s)) {
        most = std::max(most, cluster.spare_free_cpus(s));
      }
    }
    return most;
  };
  int largest = largest_free();
  // Started after the walk: the set is not changed while walked.
  std::vector<std::pair<uint32_t, int>>& started = scratch_cpu_starts_;
  started.clear();
  for (const auto& [at, index] : cpu_waiting_) {
    if (largest == 0) break;
    const JobSpec& spec = jobs_[index].spec();
    if (spec.cpus > largest) continue;
    int best = -1;
    for (int s = 0; s < topology.num_servers(); ++s) {
      if (!cluster.SpareFits(s, spec)) continue;
      if (spec.filter && !spec.filter->Admits(topology.server(s))) continue;
      if (best < 0 ||
          cluster.spare_free_cpus(s) < cluster.spare_free_cpus(best)) {
        best = s;
      }
    }
    if (best < 0) continue;
    const bool had_most = cluster.spare_free_cpus(best) == largest;
    absl::Status allocated = cluster.AllocateSpare(best, spec);
    assert(allocated.ok());
    (void)allocated;
    if (had_most) largest = largest_free();
    started.push_back({index, best});
  }
  for (auto [index, server] : started) {
    Job& job = jobs_[index];
    Dequeue(index);
    const bool resumed = job.first_start().has_value();
    job.Start(now, {}, server);
    Enqueue(index, now);
    decisions->started.push_back(StartDecision{job.id(), {}, resumed, server});
  }
}

}  // namespace tiresias
