// Scheduler: admission, priority keys and queues, wakeups (demotion,
// promotion) and the pass itself; its walks are in scheduler_walk.cc, the
// host's job control in scheduler_jobctl.cc.
#include "sched/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"

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
            policy_->traits().multi_level_queues &&
            !policy_->traits().resorts_every_event;
  any_fair_ = options_.fair_per_user;
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
  int vc = 0;
  if (!vcs_.empty() && !spec.vc.empty()) {
    auto found = vc_index_.find(spec.vc);
    if (found == vc_index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", spec.id, ": no virtual cluster \"", spec.vc, "\""));
    }
    vc = found->second;
  } else if (!vcs_.empty()) {
    vc = VcIndex("");
  }
  const uint32_t index = static_cast<uint32_t>(jobs_.size());
  index_of_[spec.id] = index;
  jobs_.push_back(std::move(job));
  slots_.emplace_back();
  displaced_bits_.Grow(index + 1);
  no_preempt_bits_.Grow(index + 1);
  if (jobs_[index].spec().no_preempt) no_preempt_bits_.insert(index);
  walk_server_.push_back(-2);
  slots_.back().vc = vc;
  slots_.back().qos = QosIndex(jobs_.back().spec().qos);
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

Scheduler::RunningGroup& Scheduler::GroupFor(Queues& queues, double slope) {
  for (RunningGroup& g : queues.running_groups) {
    if (g.slope == slope || (std::isnan(g.slope) && std::isnan(slope))) {
      return g;
    }
  }
  queues.running_groups.push_back(RunningGroup{slope, {}});
  return queues.running_groups.back();
}

Scheduler::Queues& Scheduler::RunningQueues(uint32_t index) {
  const Slot& slot = slots_[index];
  return slot.guaranteed ? vcs_[slot.vc].queues : all_;
}

void Scheduler::CountRunning(uint32_t index, int delta) {
  const Slot& slot = slots_[index];
  RunningQueues(index).num_running += delta;
  if (slot.qos >= 0) CountQos(index, delta);
  if (!vcs_.empty() && !slot.guaranteed) {
    vcs_[slot.vc].borrowed += delta * jobs_[index].num_gpus();
    total_borrowed_ += delta * jobs_[index].num_gpus();
  }
}

PriorityKey Scheduler::AllKey(const PriorityKey& key) const {
  if (vcs_.empty()) return key;
  // Between VCs (the borrowers' walk) the level and the policy's order
  // alone: one VC's users' service means nothing against another's.
  PriorityKey shared = key;
  shared.group = std::floor(key.group / kLevelStep) * kLevelStep;
  return shared;
}

int Scheduler::num_running() const {
  int running = all_.num_running + cpu_running_;
  for (const Vc& vc : vcs_) running += vc.queues.num_running;
  return running;
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
                       static_cast<double>(slot.tier),
                       rank,
                       job.queue_position(),
                       job.id(),
                       GroupOf(index)};
  }
  *slope = job.running() ? policy_->DriftSlope(job) : 0;
  if (!std::isfinite(*slope) || *slope == 0) {
    PriorityKey key = policy_->Key(job, now);
    key.group = GroupOf(index);
    return key;
  }
  // Normalized from the run's start, not from `now`, so the stored key is
  // the same whenever it is computed (no rounding noise between jobs that
  // tie).
  const Seconds start = job.run_start();
  PriorityKey key = policy_->Key(job, start);
  key.k1 -= *slope * start.count();
  key.group = GroupOf(index);
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
  walk_server_[index] = -2;  // its GPUs may have changed
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
  const Entry entry{key, index, job.num_gpus()};
  if (job.running()) {
    Queues& queues = RunningQueues(index);
    GroupFor(queues, slope)
        .entries.insert(&queues == &all_
                            ? Entry{AllKey(key), index, job.num_gpus()}
                            : entry);
    CountRunning(index, +1);
    return;
  }
  all_.waiting.insert(Entry{AllKey(key), index, job.num_gpus()});
  ++all_.waiting_by_gpus[job.num_gpus()];
  const bool own = job.spec().own_placement();
  all_.waiting_own += own;
  if (!vcs_.empty()) {
    Queues& queues = vcs_[slot.vc].queues;
    queues.waiting.insert(entry);
    ++queues.waiting_by_gpus[job.num_gpus()];
    queues.waiting_own += own;
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
  const Entry all_entry{AllKey(slot.key), index, job.num_gpus()};
  if (job.running()) {
    Queues& queues = RunningQueues(index);
    GroupFor(queues, slot.slope)
        .entries.erase(&queues == &all_ ? all_entry : entry);
    CountRunning(index, -1);
    return;
  }
  auto erase = [&](Queues& queues) {
    queues.waiting.erase(&queues == &all_ ? all_entry : entry);
    auto it = queues.waiting_by_gpus.find(job.num_gpus());
    if (--it->second == 0) queues.waiting_by_gpus.erase(it);
    queues.waiting_own -= job.spec().own_placement();
  };
  erase(all_);
  if (!vcs_.empty()) erase(vcs_[slot.vc].queues);
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
    // The wait since it last ran reaches knob x its executed time; the
    // released simulator's, every wait since its last promotion.
    // Never before `now`: earlier waits may already pass the knob (the
    // original promotes such a job at its next event).
    slot.promote_at = std::max(
        now.count(),
        job.last_stop().count() +
            options_.promote_knob * job.Executed(now).count() -
            (options_.original_promotion_wait ? job.earlier_waits().count()
                                              : 0.0));
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
  if (again_now_) next = std::min(next, last_schedule_);
  next = std::min(next, next_share_at_);
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
  auto refresh = [&](Queues& queues) {
    for (RunningGroup& g : queues.running_groups) {
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
        fresh.push_back(
            Entry{&queues == &all_ ? AllKey(key) : key, e.index, e.gpus});
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
  };
  refresh(all_);
  for (Vc& vc : vcs_) refresh(vc.queues);
  // Jobs whose key became linear (left the non-linear group) go to their
  // new group; they are no longer in the rebuilt one.
  for (auto [index, slope] : moved) {
    CountRunning(index, -1);  // Insert counts it again
    double unused = 0;
    Insert(index, StoredKey(index, now, &unused), slope);
  }
}

void Scheduler::RekeyAll(Seconds now) {
  scratch_indices_.clear();
  auto gather = [&](const Queues& queues) {
    for (const RunningGroup& g : queues.running_groups) {
      for (const Entry& e : g.entries) scratch_indices_.push_back(e.index);
    }
  };
  gather(all_);
  for (const Vc& vc : vcs_) gather(vc.queues);
  for (const Entry& e : all_.waiting) scratch_indices_.push_back(e.index);
  for (uint32_t index : scratch_indices_) Rekey(index, now);
}

int Scheduler::MinWaitingGpus() const {
  return walk_->waiting_by_gpus.empty() ? std::numeric_limits<int>::max()
                                        : walk_->waiting_by_gpus.begin()->first;
}

Decisions Scheduler::Schedule(Seconds now, Cluster& cluster) {
  Decisions decisions;
  walk_ = &all_;  // set here, not kept: a Scheduler may have been moved
  last_schedule_ = now.count();
  again_now_ = false;
  if (!retuned_.empty()) {
    decisions.requeued.insert(decisions.requeued.end(), retuned_.begin(),
                              retuned_.end());
    retuned_.clear();
  }
  ProcessWakeups(now, &decisions.requeued);
  RefreshShares(now);
  if (policy_->traits().resorts_every_event) dirty_ = true;
  if (!dirty_) return decisions;
  dirty_ = false;
  ++pass_;
  for (uint32_t index : displaced_) displaced_bits_.erase(index);
  displaced_.clear();
  const PolicyTraits& traits = policy_->traits();
  // With nothing waiting, every running job keeps running whatever its key.
  if (traits.keys_drift_while_running && !stable_ && !all_.waiting.empty()) {
    RefreshRunningKeys(now);
  }
  if (!vcs_.empty()) {
    ScheduleVcs(now, cluster, &decisions);
  } else if (traits.preemptive) {
    PreemptiveWalk(now, cluster, &decisions);
  } else {
    FillFreeGpus(now, cluster, traits.head_of_line_blocking, &decisions);
  }
  if (stable_) Settle(now, decisions);
  FillSpareCpus(now, cluster, &decisions);
  if (again_now_) dirty_ = true;
  // The users' service now grows at the rates this pass left: when the
  // next one steps.
  RefreshShares(now);
  return decisions;
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

bool Scheduler::CommitStart(uint32_t index, Seconds now,
                            std::vector<GpuId> gpus, Decisions* decisions) {
  Job& job = jobs_[index];
  if (walk_virtual_ && !StartOnQuota(index, &gpus, decisions, now)) {
    return false;
  }
  Dequeue(index);
  slots_[index].guaranteed = walk_virtual_;
  slots_[index].started_in_pass = pass_;
  const bool resumed = job.first_start().has_value();
  job.Start(now, std::move(gpus));
  // Behind the queue's running jobs; commits come in walk order.
  if (stable_) Join(index, Tier::kRunning);
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  decisions->started.push_back(StartDecision{job.id(), job.gpus(), resumed});
  return true;
}

void Scheduler::Preempt(uint32_t index, Seconds now, Decisions* decisions) {
  Job& job = jobs_[index];
  Dequeue(index);
  slots_[index].guaranteed = false;
  slots_[index].vgpus.clear();
  job.Preempt(now);
  Enqueue(index, now);
  ScheduleWakeups(index, now);
  decisions->preempted.push_back(job.id());
}

}  // namespace tiresias
