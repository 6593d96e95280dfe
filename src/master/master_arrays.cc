// MasterState: the running limit of job arrays (submit --array 0-99%8,
// Slurm's). The limit is enforced where launches are decided without the
// scheduler knowing of arrays: a job of the array without a slot is held in
// the scheduler (Scheduler::Hold, the mechanism of a user's hold and of
// dependencies), so no pass can start it, and the simulator, which shares
// the scheduler, pays nothing. A user's hold, a dependency wait and a
// missing slot are three reasons for the one scheduler hold; it is lifted
// only when none remains.
//
// A slot is held from when the job may be scheduled until it ends, so a job
// preempted by the scheduler keeps its slot (it resumes first, from its
// checkpoint, rather than a fresh job of the array starting in its place),
// and at most max_running jobs of the array are ever starting or running.
// A user's hold gives the slot back, but a job held while its last launch
// is still stopping (checkpointing) counts against the limit until that
// launch has ended (RefillArraySlots).
//
// Nothing here is stored: the limit is part of each job's stored spec, and
// a restarted master hands the slots out again (Load, PlanArraySlots):
// first to the jobs that were running, then to those that ran, then by id.
#include <set>
#include <utility>
#include <vector>

#include "master/master_state.h"

namespace tiresias {

namespace {

bool Limited(const JobRecord& rec) {
  return rec.array_id > 0 && rec.spec.array.max_running > 0;
}

}  // namespace

absl::Status MasterState::JoinArraySlots(const JobRecord& rec) {
  if (!Limited(rec)) return absl::OkStatus();
  ArraySlots& slots = array_slots_[rec.array_id];
  slots.max_running = rec.spec.array.max_running;
  // A job held by its user or waiting for its begin time takes no slot
  // (Slurm's throttle counts what may run): its siblings may run meanwhile.
  if (!rec.held && !WaitsForBegin(rec) &&
      static_cast<int>(slots.holding.size()) < slots.max_running) {
    slots.holding.insert(rec.id);
    return absl::OkStatus();
  }
  slots.queued.insert(rec.id);
  return scheduler_->Hold(rec.id);
}

void MasterState::PlanArraySlots(const std::vector<JobRecord>& jobs) {
  // Three rounds over the unfinished jobs (id order): those the master
  // must count as running whatever the limit says (running, being
  // re-adopted, being cancelled), then those that ran (they resume from a
  // checkpoint), then the rest.
  const Seconds now = clock_->NowUnixSeconds();
  auto round = [&](auto takes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const JobRecord& rec : jobs) {
      if (!Limited(rec) || !takes(rec)) continue;
      ArraySlots& slots = array_slots_[rec.array_id];
      slots.max_running = rec.spec.array.max_running;
      if (slots.holding.contains(rec.id) || slots.queued.contains(rec.id)) {
        continue;
      }
      const bool forced = StoredAsLive(rec) || rec.cancel_requested;
      const bool begins_later = rec.attempt == 0 && rec.spec.begin > now;
      if (forced ||
          (!rec.held && !begins_later &&
           static_cast<int>(slots.holding.size()) < slots.max_running)) {
        slots.holding.insert(rec.id);
      } else {
        slots.queued.insert(rec.id);
      }
    }
  };
  round(
      [](const JobRecord& r) { return StoredAsLive(r) || r.cancel_requested; });
  round([](const JobRecord& r) { return r.attempt > 0; });
  round([](const JobRecord&) { return true; });
}

bool MasterState::WaitsForArraySlot(const JobRecord& rec) const {
  if (!Limited(rec)) return false;
  auto it = array_slots_.find(rec.array_id);
  return it != array_slots_.end() && it->second.queued.contains(rec.id);
}

void MasterState::LeaveArraySlot(const JobRecord& rec, bool held) {
  if (!Limited(rec)) return;
  auto it = array_slots_.find(rec.array_id);
  if (it == array_slots_.end()) return;
  ArraySlots& slots = it->second;
  if (slots.holding.erase(rec.id) > 0) {
    array_refills_.insert(rec.array_id);
    if (held) slots.queued.insert(rec.id);
  } else if (!held) {
    slots.queued.erase(rec.id);
  }
  if (slots.holding.empty() && slots.queued.empty()) array_slots_.erase(it);
}

void MasterState::RefillArraySlots(Seconds now) {
  // Arrays to look at again at the next Commit: a job that gave its slot
  // back (a user's hold) while its last launch was still stopping counts
  // as running until that launch has ended.
  std::set<JobId> again;
  for (JobId array : array_refills_) {
    auto it = array_slots_.find(array);
    if (it == array_slots_.end()) continue;
    ArraySlots& slots = it->second;
    int stopping = 0;
    for (JobId id : slots.queued) {
      if (table_.AnyLive(id)) ++stopping;
    }
    if (stopping > 0) again.insert(array);
    for (auto q = slots.queued.begin();
         q != slots.queued.end() &&
         static_cast<int>(slots.holding.size()) + stopping <
             slots.max_running;) {
      const JobId id = *q;
      auto rec = records_.find(id);
      if (rec == records_.end() || IsFinal(rec->second.state)) {
        q = slots.queued.erase(q);  // ended: Finalize let it go already
        continue;
      }
      if (rec->second.held || WaitsForBegin(rec->second)) {
        ++q;  // a user's hold, a begin time: it waits for either to lift
        continue;
      }
      q = slots.queued.erase(q);
      slots.holding.insert(id);
      // Still held while it waits for its dependencies (which release it
      // once met, seeing it holds a slot).
      if (dependency_waits_.contains(id)) continue;
      ReleaseHold(id, now);
    }
    if (slots.holding.empty() && slots.queued.empty()) array_slots_.erase(it);
  }
  array_refills_ = std::move(again);
}

}  // namespace tiresias
