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
  kept_.Start(cluster, /*tracking=*/!InitCursors(now));
  if (!kept_.tracking()) capacity = cluster.free_gpus();
  if (kept_.tracking() && borrow_walk_) {
    // What VCs' quotas hold is kept: no borrower displaces it.
    for (size_t s = 0; s < scratch_guaranteed_on_.size(); ++s) {
      kept_.KeepOn(static_cast<int>(s), scratch_guaranteed_on_[s]);
      capacity -= scratch_guaranteed_on_[s];
    }
  }
  auto w = walk_->waiting.begin();
  // Jobs in priority order. A running job ahead of the next waiting one
  // keeps its GPUs (it always fits: capacity still counts them). A waiting
  // job that fits by count is placed, displacing the lowest-priority running
  // jobs if it must. The walk ends when what is left of the cluster fits
  // none of the waiting jobs it has yet to visit (the running jobs behind
  // keep their GPUs). Jobs displaced during the walk wait from their new
  // place in the order (scratch_displaced_), so one that fits elsewhere
  // moves in this pass instead of waiting for the next event.
  scratch_displaced_.clear();
  const int largest = cluster.topology().max_gpus_per_server();
  scratch_left_.Start(walk_->waiting_by_gpus,
                      placer_->single_scheme() && walk_->waiting_own == 0,
                      largest);
  while ((w != walk_->waiting.end() || !scratch_displaced_.empty()) &&
         capacity >= scratch_left_.min() &&
         !scratch_left_.AllKnownUnplaceable()) {
    const bool from_displaced =
        !scratch_displaced_.empty() &&
        (w == walk_->waiting.end() || *scratch_displaced_.begin() < *w);
    const Entry next = from_displaced ? *scratch_displaced_.begin() : *w;
    // Every running job ahead of it keeps its GPUs: in any order, so each
    // group is walked up to it on its own. Only when it may be placed:
    // keeping them only lowers `capacity`, so one that needs more than is
    // left before they are kept is passed over as it would be after, and
    // those running jobs are kept ahead of the next job that may be
    // placed. (Nor is the walk's end missed: had keeping them ended it
    // here, no job left could be placed; see WalkLeft::min.)
    const bool may_place =
        next.gpus <= capacity && !scratch_left_.KnownUnplaceable(next.gpus);
    if ((may_place || eager_keep_) &&
        KeepAheadOf(next, now, cluster, &capacity) &&
        capacity < scratch_left_.min()) {
      break;
    }
    if (from_displaced) {
      scratch_displaced_.erase(scratch_displaced_.begin());
    } else {
      ++w;
    }
    scratch_left_.Visit(next.gpus);
    if (may_place && next.gpus <= capacity &&
        PlaceInWalk(next.index, now, cluster)) {
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
  return displaced_bits_.contains(index);
}

bool Scheduler::KeepAheadOf(const Entry& next, Seconds now,
                            const Cluster& cluster, int* capacity) {
  bool kept = false;
  for (Cursor& c : scratch_cursors_) {
    for (; c.it != c.end; ++c.it) {
      if (Displaced(c.it->index)) continue;
      if (!(KeyAt(c, *c.it, now) < next)) break;
      *capacity -= c.it->gpus;
      kept_.Passed(c.it->index, c.it->gpus);
      kept = true;
    }
  }
  return kept;
}

bool Scheduler::PopLowestRunning(Seconds now, uint32_t* index, int* gpus) {
  Cursor* worst = nullptr;
  Entry worst_entry{};
  for (Cursor& c : scratch_cursors_) {
    // A no-preempt job is never a victim: passed over as if it were not
    // there (it keeps its GPUs, so a job that needs them does not fit).
    // Costs O(no-preempt running jobs) per displacement attempt.
    // Nor is one started in this pass (a VC walked again after a reclaim:
    // its host has not started it yet; without VCs, a pass has one walk
    // and its starts come after it).
    while (c.back != c.it) {
      const uint32_t i = std::prev(c.back)->index;
      if (!displaced_bits_.contains(i) && !no_preempt_bits_.contains(i) &&
          (vcs_.empty() || slots_[i].started_in_pass != pass_)) {
        break;
      }
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
  --worst->back;
  *index = worst->back->index;
  if (gpus) *gpus = worst->back->gpus;
  return true;
}

namespace {
// walk_server_: not read yet, or the job's GPUs on several servers.
constexpr int32_t kServerNotKnown = -2, kServers = -1;

// The server holding every one of `gpus`, or kServers.
int32_t OneServer(const Topology& topo, const std::vector<GpuId>& gpus) {
  if (gpus.empty()) return kServers;
  const int server = topo.ServerOf(gpus[0]);
  for (GpuId g : gpus) {
    if (topo.ServerOf(g) != server) return kServers;
  }
  return server;
}

// Marks a job set aside that turned out not to be needed.
constexpr uint32_t kKeptMarker = std::numeric_limits<uint32_t>::max();
}  // namespace

int32_t Scheduler::OneServerOf(uint32_t index, const Topology& topo) {
  // Found once per run (without VCs).
  int32_t& one = walk_server_[index];
  if (one == kServerNotKnown) {
    one = vcs_.empty() ? OneServer(topo, WalkGpus(index)) : kServers;
  }
  return one;
}

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
    // (Schemes are names the placer gives: mostly the same storage.)
    if (!own && job.num_gpus() >= gpus &&
        ((failed_scheme.data() == scheme.data() &&
          failed_scheme.size() == scheme.size()) ||
         failed_scheme == scheme) &&
        (gpus > largest || job.num_gpus() <= largest)) {
      return false;
    }
  }
  if (borrow_walk_ && !MayBorrow(index)) return false;
  if (slots_[index].qos >= 0 && !QosAllows(index)) return false;
  auto place = [&] { return PlaceAndAllocate(index, cluster); };
  auto pending = [&] {
    kept_.Keep(cluster, scratch_gpus_);
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
    if (!own) {
      scratch_unplaceable_.push_back({scheme, job.num_gpus()});
      if (placer_->single_scheme()) scratch_left_.Unplaceable(job.num_gpus());
    }
    return false;
  };
  // Could it fit with every lower-priority running job set aside? First
  // from per-server counts: what the walk has not kept is free or held by
  // a job it may displace (an upper bound, so a "no" is final). Where the
  // job's scheme goes by the total alone, the total is enough (the kept
  // jobs' servers are then never read).
  const Placer::FitRule rule = placer_->FitRuleFor(job);
  const bool by_counts = rule != Placer::FitRule::kOther && !own &&
                         cluster.reserved_servers() == 0;
  if (kept_.tracking() && by_counts && cluster.cordoned_gpus() == 0 &&
      (rule == Placer::FitRule::kAnyGpus || job.num_gpus() == 1)) {
    if (job.num_gpus() > cluster.total_gpus() - kept_.total()) {
      return unplaceable();
    }
  } else if (kept_.tracking()) {
    int total = 0;
    const Topology& topo = cluster.topology();
    const std::vector<int>& avail = kept_.NotKept(
        cluster,
        [&](uint32_t i, int gpus, std::vector<int>* kept) {
          const int32_t one = OneServerOf(i, topo);
          if (one >= 0) {
            (*kept)[one] += gpus;
          } else {
            for (GpuId g : WalkGpus(i)) ++(*kept)[topo.ServerOf(g)];
          }
        },
        &total);
    if (!JobMightFit(*placer_, cluster.topology(), avail, total, job)) {
      return unplaceable();
    }
  }
  // Then for real (see SetAside).
  std::vector<uint32_t>& released = scratch_released_;
  released.clear();
  for (Cursor& c : scratch_cursors_) c.back = c.end;
  if (!SetAside(index, by_counts ? rule : Placer::FitRule::kOther, now,
                cluster)) {
    return unplaceable();
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
      displaced_bits_.insert(r);
      displaced_.push_back(r);
      scratch_preempt_.push_back(r);
      if (slots_[r].qos >= 0) PendQos(r, -other.num_gpus());
      if (borrow_walk_) {
        vcs_[slots_[r].vc].walk_again = true;
        vcs_[slots_[r].vc].pending_borrow -= other.num_gpus();
        borrow_pending_ -= other.num_gpus();
      }
      scratch_displaced_.insert(DisplacedEntry(r, now));
      scratch_left_.Add(other.num_gpus(), other.spec().own_placement());
    }
  }
  return true;
}

// Sets the lowest-priority running jobs aside one at a time until the job
// fits; those whose GPUs it takes are preempted (by PlaceInWalk), the rest
// keep theirs. The last one set aside was needed; of the others, keep
// every one the job can do without, highest priority first (as the
// original simulator's pass keeps each job that still fits, in order).
// Those kept leave the list. Here the cluster is not touched until the
// end: asking the counts is exactly asking Place, which draws nothing.
bool Scheduler::SetAside(uint32_t index, Placer::FitRule rule, Seconds now,
                         Cluster& cluster) {
  if (rule == Placer::FitRule::kOther) {
    return SetAsideInCluster(index, now, cluster);
  }
  const Job& job = jobs_[index];
  std::vector<uint32_t>& released = scratch_released_;
  std::vector<int>& released_gpus = scratch_released_gpus_;
  released_gpus.clear();
  FreeCounts& counts = scratch_counts_;
  counts.Reset(cluster, rule, job.num_gpus());
  const Topology& topo = cluster.topology();
  // A job on one server is given back in one step, without reading its
  // record (most are).
  auto give = [&](uint32_t i, int gpus, int sign) {
    const int32_t one = OneServerOf(i, topo);
    if (one >= 0) {
      counts.GiveOn(one, gpus, sign);
    } else {
      counts.Give(WalkGpus(i), sign);
    }
  };
  uint32_t victim = 0;
  int gpus = 0;
  bool fits = false;
  while (!fits && PopLowestRunning(now, &victim, &gpus)) {
    // An exclusive job holding GPUs reserves its servers: there is none.
    assert(!jobs_[victim].spec().exclusive);
    assert(static_cast<size_t>(gpus) == WalkGpus(victim).size());
    give(victim, gpus, +1);
    released.push_back(victim);
    released_gpus.push_back(gpus);
    fits = counts.fits();
  }
  if (!fits) return false;
  size_t kept = 0;
  for (size_t i = released.size() - 1; i-- > 0;) {
    give(released[i], released_gpus[i], -1);
    if (counts.fits()) {
      released[i] = kKeptMarker;
      ++kept;
    } else {
      give(released[i], released_gpus[i], +1);
    }
  }
  if (kept > 0) {
    released.erase(std::remove(released.begin(), released.end(), kKeptMarker),
                   released.end());
  }
  for (uint32_t r : released) cluster.Release(jobs_[r].id(), WalkGpus(r));
  const bool placed = PlaceAndAllocate(index, cluster);
  assert(placed);
  return placed;
}

// As SetAside by counts, releasing the jobs set aside and asking Place.
bool Scheduler::SetAsideInCluster(uint32_t index, Seconds now,
                                  Cluster& cluster) {
  const Job& job = jobs_[index];
  std::vector<uint32_t>& released = scratch_released_;
  auto place = [&] {
    return cluster.free_gpus() >= job.num_gpus() &&
           PlaceAndAllocate(index, cluster);
  };
  uint32_t victim = 0;
  bool placed = false;
  while (!placed && PopLowestRunning(now, &victim)) {
    cluster.Release(jobs_[victim].id(), WalkGpus(victim));
    released.push_back(victim);
    placed = place();
  }
  if (!placed) {
    for (uint32_t r : released) {
      absl::Status back = cluster.Allocate(jobs_[r].id(), WalkGpus(r),
                                           jobs_[r].spec().exclusive);
      assert(back.ok());
      (void)back;
    }
    return false;
  }
  if (released.size() > 1) {
    cluster.Release(job.id(), scratch_gpus_);
    size_t kept = 0;
    for (size_t i = released.size() - 1; i-- > 0;) {
      const Job& other = jobs_[released[i]];
      absl::Status back = cluster.Allocate(other.id(), WalkGpus(released[i]),
                                           other.spec().exclusive);
      assert(back.ok());
      (void)back;
      if (place()) {
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

// CPU-only jobs (JobSpec::cpu_only: no GPU, some CPUs) are outside the GPU
// queues: a GPU-time priority means nothing for a job that takes no GPU
// (its attained GPU service would stay 0, ahead of every GPU job for
// ever). They wait in a queue of their own, first come first served
// (submit time, then id), for servers' spare CPUs (Cluster's, outside
// every GPU's slice); after the GPU jobs' walk, each pass starts every
// waiting one that fits on one server, in that order, skipping those that
// do not (backfill), best fit (the admitted server with the fewest free
// spare CPUs that hold it, lowest index among equals). O(servers) per
// waiting CPU-only job that asks no more than the most free spare CPUs on
// one server, per pass (the others cost O(1)). They never preempt and are never
// preempted (a user's requeue aside), and take nothing from GPU jobs.
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
