// ArraySlotTable: the running limits of job arrays (submit --array
// 0-99%8, Slurm's throttle). For every limited array with unfinished jobs,
// which of them hold one of its max_running slots and which wait for one,
// and which arrays to look at again because a slot was freed or a waiting
// job may take one.
//
// Bookkeeping only: it holds and releases nothing in the scheduler and
// reads no record. MasterState (master_arrays.cc) asks it, applies what it
// answers (a job without a slot is held in the scheduler; Refill names
// the jobs that took one, whose hold the master lifts unless a dependency
// still holds them) and tells it what the records of the jobs it asks
// about say.
//
//   ArraySlotTable slots;
//   if (!slots.Join(array, 2, id, /*may_take=*/true)) hold(id);
//   ...
//   slots.Leave(array, id, /*held=*/false);  // it ended
//   absl::flat_hash_map<JobId, ArraySlotTable::WaitingJob> told;
//   for (JobId waiting : slots.Marked()) told[waiting] = ...;
//   for (JobId next : slots.Refill(told)) release(next);
//
// Not thread-safe: MasterState holds it under its mutex.
#ifndef TIRESIAS_MASTER_ARRAY_SLOTS_H_
#define TIRESIAS_MASTER_ARRAY_SLOTS_H_

#include <map>
#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/job.h"

namespace tiresias {

class ArraySlotTable {
 public:
  struct Slots {
    int max_running = 0;
    std::set<JobId> holding;  // jobs holding a slot
    std::set<JobId> queued;   // jobs waiting for one
  };

  // Job `id` of `array` (at most `max_running` of its jobs hold slots)
  // joins: it takes a slot when `force`, or when `may_take` and one is
  // free; else it waits for one. A job already in the array stays as it
  // is. Returns whether it holds a slot.
  bool Join(JobId array, int max_running, JobId id, bool may_take,
            bool force = false);

  // Whether job `id` of `array` waits for a slot.
  bool Queued(JobId array, JobId id) const;

  // The array's slots, or null when it has no unfinished job here.
  const Slots* Find(JobId array) const;

  // Job `id` ended (it leaves the array) or, with `held`, may not run for
  // now (a user held it, or its begin time moved ahead): it gives its slot
  // back and waits for one. A slot freed makes the next Refill look at the
  // array again.
  void Leave(JobId array, JobId id, bool held);

  // The next Refill looks at `array` again (a waiting job may take a
  // free slot now: its begin time came, its user's hold was lifted).
  void Recheck(JobId array) { recheck_.insert(array); }

  // What a waiting job's record says when a slot is free for it.
  enum class Claim {
    kTakes,  // it takes the slot
    kWaits,  // held by its user, or its begin time is ahead: it stays
    kEnded,  // it ended: it leaves the array
  };
  struct WaitingJob {
    // Its last launch is still live (a user held it while it ran): it
    // counts against the limit until that launch ends, and its array is
    // looked at again at the next Refill.
    bool stopping = false;
    Claim claim = Claim::kWaits;
  };

  // The waiting jobs of the arrays marked since the last Refill: those
  // Refill must be told about.
  std::vector<JobId> Marked() const;

  // Gives the free slots of every array marked since the last Refill to
  // its waiting jobs, lowest id first, and returns the jobs that took one
  // (array by array). `told` says what each job Marked named is (one not
  // in it waits, not stopping: nothing runs on a job it was not told of). An
  // array left with no job is dropped. O(jobs of the arrays marked). (Told as
  // data, not asked through callbacks, so that the caller's lock rules stay
  // provable.)
  std::vector<JobId> Refill(const absl::flat_hash_map<JobId, WaitingJob>& told);

  bool empty() const { return arrays_.empty(); }

 private:
  void DropIfEmpty(std::map<JobId, Slots>::iterator it) {
    if (it->second.holding.empty() && it->second.queued.empty()) {
      arrays_.erase(it);
    }
  }

  std::map<JobId, Slots> arrays_;  // by array id
  std::set<JobId> recheck_;        // arrays for the next Refill
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ARRAY_SLOTS_H_
