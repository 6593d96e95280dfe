#include "master/dependency_table.h"

namespace tiresias {

void DependencyTable::Wait(JobId id, const std::vector<JobDependency>& deps) {
  DependencyCheck& check = waits_[id];
  check.verdict = DependencyVerdict::kWaiting;
  check.index = 0;
  check.unmet = static_cast<int>(deps.size());
  for (const JobDependency& dep : deps) dependents_[dep.job_id].insert(id);
  checks_.insert(id);
}

const DependencyCheck* DependencyTable::WaitOf(JobId id) const {
  auto it = waits_.find(id);
  return it == waits_.end() ? nullptr : &it->second;
}

void DependencyTable::StillWaiting(JobId id, const DependencyCheck& check) {
  if (auto it = waits_.find(id); it != waits_.end()) it->second = check;
}

void DependencyTable::StopWaiting(JobId id,
                                  const std::vector<JobDependency>& deps) {
  waits_.erase(id);
  for (const JobDependency& dep : deps) {
    auto it = dependents_.find(dep.job_id);
    if (it == dependents_.end()) continue;
    it->second.erase(id);
    if (it->second.empty()) dependents_.erase(it);
  }
}

void DependencyTable::AddArrayJobs(JobId array_id, int64_t count) {
  if (count > 0) array_unfinished_[array_id] += count;
}

void DependencyTable::Ended(JobId id, const std::vector<JobDependency>& deps,
                            JobId array_id, bool finished) {
  // Ended while it waited (cancelled): it waits no more.
  if (waits_.contains(id)) StopWaiting(id, deps);
  if (auto it = dependents_.find(id); it != dependents_.end()) {
    checks_.insert(it->second.begin(), it->second.end());
    // An array's first job: its id is the array's, which the dependents
    // may wait on whole, so they stay listed.
    if (array_id != id) dependents_.erase(it);
  }
  if (array_id <= 0) return;
  if (auto it = array_unfinished_.find(array_id);
      it != array_unfinished_.end() && --it->second <= 0) {
    array_unfinished_.erase(it);
  }
  if (!finished) array_failed_.insert(array_id);
  if (array_id != id) {
    if (auto it = dependents_.find(array_id); it != dependents_.end()) {
      checks_.insert(it->second.begin(), it->second.end());
    }
  }
}

std::optional<DependencyTarget> DependencyTable::ArrayTarget(
    JobId array_id) const {
  if (array_unfinished_.contains(array_id)) {
    return DependencyTarget::kUnfinished;
  }
  if (array_failed_.contains(array_id)) return DependencyTarget::kFailed;
  return std::nullopt;
}

std::optional<JobId> DependencyTable::TakeCheck() {
  if (checks_.empty()) return std::nullopt;
  const JobId id = *checks_.begin();
  checks_.erase(checks_.begin());
  return id;
}

}  // namespace tiresias
