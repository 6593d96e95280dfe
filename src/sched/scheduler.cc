#include "sched/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/node_filter.h"
#include "core/shape.h"

namespace tiresias {
namespace {
// Rounding between instants computed two ways (seconds).
constexpr double kTimeSlack = 1e-6;
}  // namespace

absl::StatusOr<QueueOrder> ParseQueueOrder(std::string_view text) {
  if (text == "stable") return QueueOrder::kStable;
  if (text == "start-time") return QueueOrder::kStartTime;
  return absl::InvalidArgumentError(absl::StrCat(
      "queue order \"", std::string(text),
      "\": expected stable or start-time"));
}

std::string_view QueueOrderName(QueueOrder order) {
  return order == QueueOrder::kStable ? "stable" : "start-time";
}

Scheduler::Scheduler(std::unique_ptr<Policy> policy,
                     std::unique_ptr<Placer> placer, SchedulerOptions options)
    : policy_(std::move(policy)),
      placer_(std::move(placer)),
      options_(std::move(options)),
      rng_(options_.seed) {
  stable_ = options_.queue_order == QueueOrder::kStable &&
            policy_->traits().multi_level_queues;
}

void Scheduler::SetPlacer(std::unique_ptr<Placer> placer) {
  placer_ = std::move(placer);
  for (uint32_t i = 0; i < jobs_.size(); ++i) {
    // A finished job's scheme is never read again; no view into the old
    // placer is kept.
    slots_[i].scheme =
        jobs_[i].finished() ? std::string_view() : placer_->SchemeFor(jobs_[i]);
  }
  dirty_ = true;
}

absl::Status Scheduler::Submit(JobSpec spec, Seconds now) {
  return Admit(Job(std::move(spec)), now);
}

absl::Status Scheduler::Restore(const Job& job, Seconds now) {
  return Admit(job, now);
}

absl::Status Scheduler::Admit(Job job, Seconds now) {
  const JobSpec& spec = job.spec();
  if (spec.num_gpus < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job ", spec.id, ": expected a GPU count of at least 0, got ",
        spec.num_gpus));
  }
  if (spec.cpu_only() && spec.cpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job ", spec.id, ": a job without GPUs needs CPUs, got ", spec.cpus));
  }
  if (job.running() && spec.cpu_only() != (job.cpu_server() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job ", spec.id, ": a running CPU-only job needs its server"));
  }
  if (index_of_.contains(spec.id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("job ", spec.id, " already exists"));
  }
  if (policy_->traits().needs_duration && !spec.duration) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", std::string(policy_->name()), " needs job durations; job ",
                     spec.id, " has none"));
  }
  const uint32_t index = static_cast<uint32_t>(jobs_.size());
  index_of_[spec.id] = index;
  jobs_.push_back(std::move(job));
  slots_.emplace_back();
  slots_.back().scheme = placer_->SchemeFor(jobs_.back());
  if (!jobs_[index].finished()) {
    const Tier tier =
        jobs_[index].running() ? Tier::kRunning : Tier::kWaiting;
    const double position = jobs_[index].queue_position();
    if (std::isnan(position)) {
      Join(index, tier);  // at the back, in the order jobs come
    } else {
      slots_[index].tier = tier;  // where the scheduler that made it put it
      back_pos_ = std::max(back_pos_, position);
      front_pos_ = std::min(front_pos_, position);
    }
    Enqueue(index, now);
    ScheduleWakeups(index, now);
    dirty_ = true;
  }
  return absl::OkStatus();
}

const Job* Scheduler::Find(JobId id) const {
  auto it = index_of_.find(id);
  return it == index_of_.end() ? nullptr : &jobs_[it->second];
}

Scheduler::RunningGroup& Scheduler::GroupFor(double slope) {
  for (RunningGroup& g : running_groups_) {
    if (g.slope == slope || (std::isnan(g.slope) && std::isnan(slope))) {
      return g;
    }
  }
  running_groups_.push_back(RunningGroup{slope, {}});
  return running_groups_.back();
}

void Scheduler::Join(uint32_t index, Tier tier, bool front) {
  slots_[index].tier = tier;
  jobs_[index].set_queue_position(front ? --front_pos_ : ++back_pos_);
}

PriorityKey Scheduler::StoredKey(uint32_t index, Seconds now,
                                 double* slope) const {
  const Job& job = jobs_[index];
  if (stable_) {
    // Fixed while the job runs: nothing drifts.
    *slope = 0;
    const Slot& slot = slots_[index];
    const double rank =
        slot.tier == Tier::kWaiting ? policy_->WaitingRank(job, now) : 0;
    return PriorityKey{static_cast<double>(job.queue()),
                       static_cast<double>(slot.tier), rank,
                       job.queue_position(), job.id()};
  }
  *slope = job.running() ? policy_->DriftSlope(job) : 0;
  if (!std::isfinite(*slope) || *slope == 0) return policy_->Key(job, now);
  // Normalized from the run's start, not from `now`, so the stored key is
  // the same whenever it is computed (no rounding noise between jobs that
  // tie).
  const Seconds start = job.run_start();
  PriorityKey key = policy_->Key(job, start);
  key.k1 -= *slope * start.count();
  return key;
}

void Scheduler::Enqueue(uint32_t index, Seconds now) {
  if (jobs_[index].cpu_only()) {
    Insert(index, PriorityKey{}, 0);  // no GPU-time priority
    return;
  }
  double slope = 0;
  PriorityKey key = StoredKey(index, now, &slope);
  Insert(index, key, slope);
}

void Scheduler::Insert(uint32_t index, const PriorityKey& key, double slope) {
  const Job& job = jobs_[index];
  Slot& slot = slots_[index];
  slot.key = key;
  slot.slope = slope;
  if (slot.held && !job.running()) return;  // in no set while held
  if (job.cpu_only()) {
    if (job.running()) {
      ++cpu_running_;
    } else {
      cpu_waiting_.insert({job.spec().submit_time.count(), index});
    }
    return;
  }
  if (job.running()) {
    GroupFor(slope).entries.insert(Entry{key, index, job.num_gpus()});
    ++num_running_;
  } else {
    waiting_.insert(Entry{key, index, job.num_gpus()});
    ++waiting_by_gpus_[job.num_gpus()];
  }
}

void Scheduler::Dequeue(uint32_t index) {
  const Job& job = jobs_[index];
  const Slot& slot = slots_[index];
  const Entry entry{slot.key, index, job.num_gpus()};
  if (slot.held && !job.running()) return;  // in no set while held
  if (job.cpu_only()) {
    if (job.running()) {
      --cpu_running_;
    } else {
      cpu_waiting_.erase({job.spec().submit_time.count(), index});
    }
    return;
  }
  if (job.running()) {
    GroupFor(slot.slope).entries.erase(entry);
    --num_running_;
  } else {
    waiting_.erase(entry);
    auto it = waiting_by_gpus_.find(job.num_gpus());
    if (--it->second == 0) waiting_by_gpus_.erase(it);
  }
}

void Scheduler::Rekey(uint32_t index, Seconds now) {
  if (jobs_[index].cpu_only()) return;  // its key never changes
  double slope = 0;
  PriorityKey key = StoredKey(index, now, &slope);
  const Slot& slot = slots_[index];
  if (key == slot.key &&
      (slope == slot.slope || (std::isnan(slope) && std::isnan(slot.slope)))) {
    return;
  }
  Dequeue(index);
  Insert(index, key, slope);
}

void Scheduler::ClearWakeups(uint32_t index) {
  Slot& slot = slots_[index];
  if (std::isfinite(slot.demote_at)) demotions_.erase({slot.demote_at, index});
  if (std::isfinite(slot.jump_at)) {
    auto group = original_jumps_.find(jobs_[index].num_gpus());
    group->second.erase({slot.jump_at, index});
    if (group->second.empty()) original_jumps_.erase(group);
  }
  if (std::isfinite(slot.promote_at)) {
    promotions_.erase({slot.promote_at, index});
  }
  slot.demote_at = slot.promote_at = slot.jump_at =
      std::numeric_limits<double>::infinity();
}

void Scheduler::ScheduleWakeups(uint32_t index, Seconds now) {
  ClearWakeups(index);
  if (!policy_->traits().multi_level_queues) return;
  if (jobs_[index].cpu_only()) return;  // in no GPU queue
  if (slots_[index].held && !jobs_[index].running()) return;
  const Job& job = jobs_[index];
  Slot& slot = slots_[index];
  if (job.running()) {
    // The exact instant attained service reaches the queue's upper bound.
    const double bound = options_.queues.upper_bound(job.queue());
    if (std::isfinite(bound)) {
      slot.demote_at =
          now.count() + (bound - job.AttainedGpuSeconds(now)) / job.num_gpus();
      demotions_.insert({slot.demote_at, index});
      if (options_.original_demotion_timing) {
        slot.jump_at = now.count() + (bound - job.Executed(now).count());
        original_jumps_[job.num_gpus()].insert({slot.jump_at, index});
      }
    }
  } else if (job.waiting() && std::isfinite(options_.promote_knob) &&
             job.queue() > 0 && job.Executed(now).count() > 0) {
    slot.promote_at = job.last_stop().count() +
                      options_.promote_knob * job.Executed(now).count();
    promotions_.insert({slot.promote_at, index});
  }
}

void Scheduler::Demote(uint32_t index, int queue, Seconds now,
                       std::vector<JobId>* requeued) {
  Job& job = jobs_[index];
  Dequeue(index);
  job.set_queue(queue);
  Join(index, Tier::kJoined);  // the tail of its new queue
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  requeued->push_back(job.id());
}

void Scheduler::ProcessWakeups(Seconds now, std::vector<JobId>* requeued) {
  if (options_.original_demotion_timing) {
    // Every job past its bound goes one queue down, in submit order; one
    // still past the next bound goes on at the next pass.
    std::vector<uint32_t>& due = scratch_indices_;
    due.clear();
    for (auto it = demotions_.begin();
         it != demotions_.end() && it->first <= now.count() + kTimeSlack;
         ++it) {
      due.push_back(it->second);
    }
    std::sort(due.begin(), due.end());
    for (uint32_t index : due) {
      dirty_ = true;
      Demote(index, jobs_[index].queue() + 1, now, requeued);
    }
  }
  while (true) {
    const bool demotion_due = !options_.original_demotion_timing &&
                              !demotions_.empty() &&
                              demotions_.begin()->first <= now.count();
    const bool promotion_due =
        !promotions_.empty() && promotions_.begin()->first <= now.count();
    if (!demotion_due && !promotion_due) return;
    dirty_ = true;
    if (demotion_due) {
      const uint32_t index = demotions_.begin()->second;
      const Job& job = jobs_[index];
      // At least one queue down, even if rounding leaves the attained service
      // a hair under the bound at the computed instant.
      const int queue = std::min(
          options_.queues.num_queues() - 1,
          std::max(job.queue() + 1,
                   options_.queues.QueueFor(job.AttainedGpuSeconds(now))));
      Demote(index, queue, now, requeued);
    } else {
      const uint32_t index = promotions_.begin()->second;
      requeued->push_back(jobs_[index].id());
      Dequeue(index);
      jobs_[index].Promote(now);
      Join(index, Tier::kWaiting);  // the tail of queue 0
      Enqueue(index, now);
      ScheduleWakeups(index, now);
    }
  }
}

Seconds Scheduler::NextWakeup() const {
  double next = std::numeric_limits<double>::infinity();
  if (options_.original_demotion_timing) {
    // The original's next pass: per job, (bound - executed seconds) / GPUs
    // after the last pass, rounded down; the earliest per GPU count is its
    // job with the earliest `jump_at`. Rounding down may bring it before
    // the true crossing: the pass then demotes no one, as in the original.
    // If it rounds to the last pass itself: a job past its bound (one queue
    // down at that pass and past the next bound too) goes on at once; one
    // not yet past it (tiny bounds only) at the true crossing.
    const double t = last_schedule_;
    for (const auto& [gpus, jumps] : original_jumps_) {
      const auto& [jump_at, index] = *jumps.begin();
      double at = t + std::floor((jump_at - t) / gpus + kTimeSlack);
      if (at <= t) at = std::max(t, slots_[index].demote_at);
      next = std::min(next, at);
    }
  } else if (!demotions_.empty()) {
    next = demotions_.begin()->first;
  }
  if (!promotions_.empty()) next = std::min(next, promotions_.begin()->first);
  return Seconds{next};
}

void Scheduler::RefreshRunningKeys(Seconds now) {
  // Re-keys the non-linear group in bulk: new keys into a vector, sorted by
  // insertion (keys move little between passes, so the old order is nearly
  // right), and the group rebuilt in order, instead of an erase and insert
  // per job.
  std::vector<Entry>& fresh = scratch_entries_;
  std::vector<std::pair<uint32_t, double>>& moved = scratch_moved_;
  moved.clear();
  for (RunningGroup& g : running_groups_) {
    if (!std::isnan(g.slope)) continue;
    fresh.clear();
    for (const Entry& e : g.entries) {
      double slope = 0;
      const PriorityKey key = StoredKey(e.index, now, &slope);
      if (!std::isnan(slope)) {
        moved.push_back({e.index, slope});
        continue;
      }
      slots_[e.index].key = key;
      fresh.push_back(Entry{key, e.index, e.gpus});
    }
    for (size_t i = 1; i < fresh.size(); ++i) {
      const Entry x = fresh[i];
      size_t j = i;
      for (; j > 0 && x < fresh[j - 1]; --j) fresh[j] = fresh[j - 1];
      fresh[j] = x;
    }
    g.entries.clear();
    for (const Entry& e : fresh) g.entries.insert(g.entries.end(), e);
  }
  // Jobs whose key became linear (left the non-linear group) go to their
  // new group; they are no longer in the rebuilt one.
  for (auto [index, slope] : moved) {
    --num_running_;
    double unused = 0;
    Insert(index, StoredKey(index, now, &unused), slope);
  }
}

void Scheduler::RekeyAll(Seconds now) {
  scratch_indices_.clear();
  for (const RunningGroup& g : running_groups_) {
    for (const Entry& e : g.entries) scratch_indices_.push_back(e.index);
  }
  for (const Entry& e : waiting_) scratch_indices_.push_back(e.index);
  for (uint32_t index : scratch_indices_) Rekey(index, now);
}

int Scheduler::MinWaitingGpus() const {
  return waiting_by_gpus_.empty() ? std::numeric_limits<int>::max()
                                  : waiting_by_gpus_.begin()->first;
}

Decisions Scheduler::Schedule(Seconds now, Cluster& cluster) {
  Decisions decisions;
  last_schedule_ = now.count();
  ProcessWakeups(now, &decisions.requeued);
  if (!dirty_) return decisions;
  dirty_ = false;
  ++pass_;
  const PolicyTraits& traits = policy_->traits();
  // With nothing waiting, every running job keeps running whatever its key.
  if (traits.keys_drift_while_running && !stable_ && !waiting_.empty()) {
    RefreshRunningKeys(now);
  }
  if (traits.preemptive) {
    PreemptiveWalk(now, cluster, &decisions);
  } else {
    FillFreeGpus(now, cluster, traits.head_of_line_blocking, &decisions);
  }
  if (stable_) Settle(now, decisions);
  FillSpareCpus(now, cluster, &decisions);
  return decisions;
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

void Scheduler::Settle(Seconds now, const Decisions& decisions) {
  // Started jobs already joined the running tier at commit, in walk order.
  // Demoted jobs still running follow them: they were behind the queue's
  // waiting jobs, which are the ones that started.
  std::vector<uint32_t>& joined = scratch_indices_;
  joined.clear();
  for (JobId id : decisions.requeued) {
    const uint32_t index = index_of_.at(id);
    if (slots_[index].tier == Tier::kJoined && jobs_[index].running()) {
      joined.push_back(index);
    }
  }
  std::sort(joined.begin(), joined.end(), [&](uint32_t a, uint32_t b) {
    return slots_[a].key < slots_[b].key;
  });
  for (uint32_t index : joined) {
    Join(index, Tier::kRunning);
    Rekey(index, now);
  }
}

void Scheduler::PreemptiveWalk(Seconds now, Cluster& cluster,
                               Decisions* decisions) {
  pending_starts_.clear();
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
  }
  auto w = waiting_.begin();
  // Jobs in priority order. A running job ahead of the next waiting one
  // keeps its GPUs (it always fits: capacity still counts them). A waiting
  // job that fits by count is placed, displacing the lowest-priority running
  // jobs if it must. The walk ends when no waiting job could fit any more.
  // Jobs displaced during the walk wait from their new place in the order
  // (scratch_displaced_), so one that fits elsewhere moves in this pass
  // instead of waiting for the next event.
  scratch_displaced_.clear();
  min_waiting_ = min_waiting;
  while ((w != waiting_.end() || !scratch_displaced_.empty()) &&
         capacity >= min_waiting_) {
    const bool from_displaced =
        !scratch_displaced_.empty() &&
        (w == waiting_.end() || *scratch_displaced_.begin() < *w);
    const Entry next = from_displaced ? *scratch_displaced_.begin() : *w;
    Entry running{};
    Cursor* cursor = NextRunning(now, &running);
    if (cursor && running < next) {
      capacity -= running.gpus;
      Keep(jobs_[running.index].gpus(), cluster);
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
    std::sort(scratch_preempt_.begin(), scratch_preempt_.end(),
              [&](uint32_t a, uint32_t b) {
                return slots_[a].key < slots_[b].key;
              });
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
  for (uint32_t index : scratch_preempt_) Preempt(index, now, decisions);
  for (auto& [index, gpus] : pending_starts_) {
    CommitStart(index, now, std::move(gpus), decisions);
  }
}

bool Scheduler::InitCursors(Seconds now) {
  std::vector<Cursor>& cursors = scratch_cursors_;
  cursors.clear();
  for (const RunningGroup& g : running_groups_) {
    if (!g.entries.empty()) {
      cursors.push_back(
          {g.slope, g.entries.begin(), g.entries.end(), g.entries.end()});
    }
  }
  // When every running job outranks every waiting one, each keeps its GPUs
  // and the walk needs only the waiting jobs and the free GPUs.
  if (waiting_.empty()) return false;
  for (const Cursor& c : cursors) {
    if (!(KeyAt(c, *std::prev(c.end), now) < *waiting_.begin())) return false;
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
    while (c.back != c.it &&
           (Displaced(std::prev(c.back)->index) ||
            jobs_[std::prev(c.back)->index].spec().no_preempt)) {
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
  // needing at least as many GPUs, cannot be placed either.
  const std::string_view scheme = slots_[index].scheme;
  // (A shaped or filtered job is placed by a rule of its own, not its
  // scheme's: core/shape.h.)
  const bool own = job.spec().own_placement();
  for (const auto& [failed_scheme, gpus] : scratch_unplaceable_) {
    if (!own && failed_scheme == scheme && job.num_gpus() >= gpus) {
      return false;
    }
  }
  auto place = [&] {
    scratch_gpus_.clear();
    if (!PlaceJob(*placer_, cluster, job, rng_, &scratch_gpus_)) return false;
    absl::Status allocated =
        cluster.Allocate(job.id(), scratch_gpus_, job.spec().exclusive);
    assert(allocated.ok());
    (void)allocated;
    return true;
  };
  if (place()) {
    Keep(scratch_gpus_, cluster);
    pending_starts_.push_back({index, scratch_gpus_});
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
      scratch_avail_[s] = cluster.cordoned(s)
                              ? 0
                              : topo.server(s).num_gpus - scratch_kept_[s];
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
    cluster.Release(jobs_[victim].id(), jobs_[victim].gpus());
    released.push_back(victim);
    placed = cluster.free_gpus() >= job.num_gpus() && place();
  }
  if (!placed) {
    for (uint32_t r : released) {
      absl::Status back = cluster.Allocate(jobs_[r].id(), jobs_[r].gpus(),
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
      absl::Status back =
          cluster.Allocate(other.id(), other.gpus(), other.spec().exclusive);
      assert(back.ok());
      (void)back;
      if (cluster.free_gpus() >= job.num_gpus() && place()) {
        cluster.Release(job.id(), scratch_gpus_);
        released[i] = kKeptMarker;
        ++kept;
      } else {
        cluster.Release(other.id(), other.gpus());
      }
    }
    if (kept > 0) {
      released.erase(std::remove(released.begin(), released.end(),
                                 kKeptMarker),
                     released.end());
    }
    placed = place();
    assert(placed);
  }
  Keep(scratch_gpus_, cluster);
  pending_starts_.push_back({index, scratch_gpus_});
  for (uint32_t r : released) {
    const Job& other = jobs_[r];
    // Kept if its GPUs are as it left them: unheld, and not on a server
    // an exclusive job took (nor, for an exclusive one, beside another).
    if (cluster.Fits(other.gpus(), other.spec().exclusive)) {
      absl::Status kept =
          cluster.Allocate(other.id(), other.gpus(), other.spec().exclusive);
      assert(kept.ok());
      (void)kept;
    } else {
      slots_[r].displaced_in_pass = pass_;
      scratch_preempt_.push_back(r);
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
    return Entry{policy_->Key(job, now), index, job.num_gpus()};
  }
  // Behind every job of its queue the walk has yet to reach: as after this
  // pass, when its queue's list holds the running jobs (those still to
  // start included) ahead of it. In list order among themselves.
  constexpr double kAfterTheQueue = 3;  // beyond Tier::kJoined
  return Entry{PriorityKey{static_cast<double>(job.queue()), kAfterTheQueue,
                           policy_->WaitingRank(job, now), job.queue_position(),
                           job.id()},
               index, job.num_gpus()};
}

void Scheduler::FillFreeGpus(Seconds now, Cluster& cluster,
                             bool head_of_line_blocking,
                             Decisions* decisions) {
  auto it = waiting_.begin();
  while (it != waiting_.end() && cluster.free_gpus() >= MinWaitingGpus()) {
    const Entry entry = *it;
    const bool fits = entry.gpus <= cluster.free_gpus();
    if (fits && TryStart(entry.index, now, cluster, decisions)) {
      it = waiting_.upper_bound(entry);
    } else if (head_of_line_blocking) {
      break;
    } else {
      ++it;
    }
  }
}

bool Scheduler::TryStart(uint32_t index, Seconds now, Cluster& cluster,
                         Decisions* decisions) {
  Job& job = jobs_[index];
  scratch_gpus_.clear();
  if (!PlaceJob(*placer_, cluster, job, rng_, &scratch_gpus_)) return false;
  absl::Status allocated =
      cluster.Allocate(job.id(), scratch_gpus_, job.spec().exclusive);
  assert(allocated.ok());
  (void)allocated;
  CommitStart(index, now, scratch_gpus_, decisions);
  return true;
}

void Scheduler::CommitStart(uint32_t index, Seconds now,
                            std::vector<GpuId> gpus, Decisions* decisions) {
  Job& job = jobs_[index];
  Dequeue(index);
  const bool resumed = job.first_start().has_value();
  job.Start(now, std::move(gpus));
  // Behind the queue's running jobs; commits come in walk order.
  if (stable_) Join(index, Tier::kRunning);
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  decisions->started.push_back(StartDecision{job.id(), job.gpus(), resumed});
}

void Scheduler::Preempt(uint32_t index, Seconds now, Decisions* decisions) {
  Job& job = jobs_[index];
  Dequeue(index);
  job.Preempt(now);
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  decisions->preempted.push_back(job.id());
}

absl::Status Scheduler::Finish(JobId id, Seconds now, Cluster& cluster) {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const uint32_t index = it->second;
  Job& job = jobs_[index];
  if (!job.running()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", std::string(JobStateName(job.state())), ", not running"));
  }
  cluster.ReleaseJob(job);
  Dequeue(index);
  ClearWakeups(index);
  job.Finish(now);
  dirty_ = true;
  // A CPU-only job's run says nothing of GPU jobs' service.
  if (!job.cpu_only() && policy_->LearnFinished(job, now)) RekeyAll(now);
  return absl::OkStatus();
}

absl::Status Scheduler::Replace(const Job& job, Seconds now) {
  auto it = index_of_.find(job.id());
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", job.id(), " not found"));
  }
  const uint32_t index = it->second;
  if (jobs_[index].finished() || job.finished()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.id(), ": only an unfinished job can be replaced"));
  }
  Dequeue(index);
  ClearWakeups(index);
  const bool was_running = jobs_[index].running();
  const double position = jobs_[index].queue_position();
  jobs_[index] = job;
  // Keeps its place unless the correction changed whether it runs.
  if (std::isnan(job.queue_position())) {
    jobs_[index].set_queue_position(position);
  }
  slots_[index].scheme = placer_->SchemeFor(job);
  if (stable_ && was_running != job.running()) {
    Join(index, job.running() ? Tier::kRunning : Tier::kWaiting);
  }
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Remove(JobId id, Seconds now, Cluster& cluster) {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const uint32_t index = it->second;
  Job& job = jobs_[index];
  if (job.finished()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " has already finished"));
  }
  if (job.running()) cluster.ReleaseJob(job);
  Dequeue(index);
  ClearWakeups(index);
  job.Abandon(now);
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Hold(JobId id) {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const uint32_t index = it->second;
  const Job& job = jobs_[index];
  if (!job.waiting()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", std::string(JobStateName(job.state())),
                     "; only a waiting job can be held"));
  }
  if (slots_[index].held) return absl::OkStatus();
  Dequeue(index);
  ClearWakeups(index);
  slots_[index].held = true;
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status Scheduler::Release(JobId id, Seconds now) {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const uint32_t index = it->second;
  if (!slots_[index].held) return absl::OkStatus();
  slots_[index].held = false;
  if (!jobs_[index].finished()) {
    Enqueue(index, now);
    ScheduleWakeups(index, now);
  }
  dirty_ = true;
  return absl::OkStatus();
}

bool Scheduler::held(JobId id) const {
  auto it = index_of_.find(id);
  return it != index_of_.end() && slots_[it->second].held;
}

absl::Status Scheduler::Requeue(JobId id, Seconds now, Cluster& cluster) {
  auto it = index_of_.find(id);
  if (it == index_of_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const uint32_t index = it->second;
  if (!jobs_[index].running()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", std::string(JobStateName(jobs_[index].state())),
        ", not running"));
  }
  cluster.ReleaseJob(jobs_[index]);
  // As a preemption by the walk: back to its queue's waiting tier, first
  // (a CPU-only job: to its place by submit time).
  if (stable_ && !jobs_[index].cpu_only()) {
    Join(index, Tier::kWaiting, /*front=*/true);
  }
  Decisions unused;
  Preempt(index, now, &unused);
  dirty_ = true;
  return absl::OkStatus();
}

}  // namespace tiresias
