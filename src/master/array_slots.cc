#include "master/array_slots.h"

#include <utility>

namespace tiresias {

bool ArraySlotTable::Join(JobId array, int max_running, JobId id, bool may_take,
                          bool force) {
  Slots& slots = arrays_[array];
  slots.max_running = max_running;
  if (slots.holding.contains(id)) return true;
  if (slots.queued.contains(id)) return false;
  if (force || (may_take &&
                static_cast<int>(slots.holding.size()) < slots.max_running)) {
    slots.holding.insert(id);
    return true;
  }
  slots.queued.insert(id);
  return false;
}

bool ArraySlotTable::Queued(JobId array, JobId id) const {
  auto it = arrays_.find(array);
  return it != arrays_.end() && it->second.queued.contains(id);
}

const ArraySlotTable::Slots* ArraySlotTable::Find(JobId array) const {
  auto it = arrays_.find(array);
  return it == arrays_.end() ? nullptr : &it->second;
}

void ArraySlotTable::Leave(JobId array, JobId id, bool held) {
  auto it = arrays_.find(array);
  if (it == arrays_.end()) return;
  Slots& slots = it->second;
  if (slots.holding.erase(id) > 0) {
    recheck_.insert(array);
    if (held) slots.queued.insert(id);
  } else if (!held) {
    slots.queued.erase(id);
  }
  DropIfEmpty(it);
}

std::vector<JobId> ArraySlotTable::Marked() const {
  std::vector<JobId> waiting;
  for (JobId array : recheck_) {
    auto it = arrays_.find(array);
    if (it == arrays_.end()) continue;
    waiting.insert(waiting.end(), it->second.queued.begin(),
                   it->second.queued.end());
  }
  return waiting;
}

std::vector<JobId> ArraySlotTable::Refill(
    const absl::flat_hash_map<JobId, WaitingJob>& told) {
  auto of = [&](JobId id) {
    auto it = told.find(id);
    return it == told.end() ? WaitingJob{} : it->second;
  };
  std::vector<JobId> took;
  std::set<JobId> again;
  for (JobId array : recheck_) {
    auto it = arrays_.find(array);
    if (it == arrays_.end()) continue;
    Slots& slots = it->second;
    int live = 0;
    for (JobId id : slots.queued) {
      if (of(id).stopping) ++live;
    }
    if (live > 0) again.insert(array);
    for (auto q = slots.queued.begin();
         q != slots.queued.end() &&
         static_cast<int>(slots.holding.size()) + live < slots.max_running;) {
      const JobId id = *q;
      switch (of(id).claim) {
        case Claim::kEnded:
          q = slots.queued.erase(q);
          break;
        case Claim::kWaits:
          ++q;
          break;
        case Claim::kTakes:
          q = slots.queued.erase(q);
          slots.holding.insert(id);
          took.push_back(id);
          break;
      }
    }
    DropIfEmpty(it);
  }
  recheck_ = std::move(again);
  return took;
}

}  // namespace tiresias
