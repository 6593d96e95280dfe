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
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "master/array_slots.h"
#include "master/master_state.h"

namespace tiresias {

namespace {

bool Limited(const JobRecord& rec) {
  return rec.array_id > 0 && rec.spec.array.max_running > 0;
}

}  // namespace

absl::Status MasterState::JoinArraySlots(const JobRecord& rec) {
  if (!Limited(rec)) return absl::OkStatus();
  // A job held by its user or waiting for its begin time takes no slot
  // (Slurm's throttle counts what may run): its siblings may run meanwhile.
  if (array_slots_.Join(rec.array_id, rec.spec.array.max_running, rec.id,
                        /*may_take=*/!rec.held && !WaitsForBegin(rec))) {
    return absl::OkStatus();
  }
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
      const bool begins_later = rec.attempt == 0 && rec.spec.begin > now;
      array_slots_.Join(rec.array_id, rec.spec.array.max_running, rec.id,
                        /*may_take=*/!rec.held && !begins_later,
                        /*force=*/StoredAsLive(rec) || rec.cancel_requested);
    }
  };
  round(
      [](const JobRecord& r) { return StoredAsLive(r) || r.cancel_requested; });
  round([](const JobRecord& r) { return r.attempt > 0; });
  round([](const JobRecord&) { return true; });
}

bool MasterState::WaitsForArraySlot(const JobRecord& rec) const {
  return Limited(rec) && array_slots_.Queued(rec.array_id, rec.id);
}

void MasterState::LeaveArraySlot(const JobRecord& rec, bool held) {
  if (Limited(rec)) array_slots_.Leave(rec.array_id, rec.id, held);
}

void MasterState::RefillArraySlots(Seconds now) {
  using Claim = ArraySlotTable::Claim;
  absl::flat_hash_map<JobId, ArraySlotTable::WaitingJob> told;
  for (JobId id : array_slots_.Marked()) {
    ArraySlotTable::WaitingJob& job = told[id];
    // A job that gave its slot back (a user's hold) while its last launch
    // was still stopping counts as running until that launch has ended.
    job.stopping = table_.AnyLive(id);
    auto rec = records_.find(id);
    if (rec == records_.end() || IsFinal(rec->second.state)) {
      job.claim = Claim::kEnded;  // Finalize let it go already
    } else if (rec->second.held || WaitsForBegin(rec->second)) {
      job.claim = Claim::kWaits;  // until the hold or the begin time lifts
    } else {
      job.claim = Claim::kTakes;
    }
  }
  for (JobId id : array_slots_.Refill(told)) {
    // Still held while it waits for its dependencies (which release it
    // once met, seeing it holds a slot).
    if (deps_.Waiting(id)) continue;
    ReleaseHold(id, now);
  }
}

}  // namespace tiresias
