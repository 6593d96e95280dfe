// Scheduler: priority levels (QOS, see scheduler.h). A job's level is the
// first part of its key (PriorityKey::group, with the fair-share quanta),
// so every walk, the VCs' and the borrowers', orders by it; the per-user
// GPU limit is counted here and checked by the walks before a job is
// placed.
#include <cassert>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sched/scheduler.h"

namespace tiresias {

absl::Status Scheduler::SetQos(std::vector<QosSpec> qos, Seconds now) {
  absl::flat_hash_set<std::string> names;
  for (const QosSpec& q : qos) {
    if (!names.insert(q.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("QOS \"", q.name, "\" is given twice"));
    }
    // So that PriorityKey::group stays an exact integer (< 2^53).
    if (q.priority < -kMaxQosPriority || q.priority > kMaxQosPriority) {
      return absl::InvalidArgumentError(absl::StrCat(
          "QOS \"", q.name, "\": priority ", q.priority, " is outside -",
          kMaxQosPriority, " to ", kMaxQosPriority));
    }
  }
  // Out of every set under the old levels, back in under the new ones
  // (which also recounts the per-user GPUs).
  std::vector<uint32_t>& unfinished = scratch_indices_;
  unfinished.clear();
  for (uint32_t index = 0; index < jobs_.size(); ++index) {
    if (!jobs_[index].finished()) unfinished.push_back(index);
  }
  for (uint32_t index : unfinished) Dequeue(index);
  qos_specs_ = std::move(qos);
  qos_index_.clear();
  for (size_t i = 0; i < qos_specs_.size(); ++i) {
    qos_index_[qos_specs_[i].name] = static_cast<int>(i);
  }
  assert(qos_gpus_.empty());
  qos_gpus_.clear();
  for (uint32_t index : unfinished) {
    slots_[index].qos = QosIndex(jobs_[index].spec().qos);
    Enqueue(index, now);
  }
  dirty_ = true;
  return absl::OkStatus();
}

int Scheduler::QosIndex(const std::string& name) const {
  if (name.empty()) return -1;
  auto it = qos_index_.find(name);
  return it == qos_index_.end() ? -1 : it->second;
}

void Scheduler::CountQos(uint32_t index, int delta) {
  const Job& job = jobs_[index];
  auto key = std::make_pair(slots_[index].qos, job.spec().user);
  int& gpus = qos_gpus_[key];
  gpus += delta * job.num_gpus();
  if (gpus == 0) qos_gpus_.erase(key);
}

void Scheduler::PendQos(uint32_t index, int gpus) {
  const int q = slots_[index].qos;
  if (qos_specs_[q].max_gpus_per_user == kUnlimited) return;
  qos_pending_[{q, jobs_[index].spec().user}] += gpus;
}

bool Scheduler::QosAllows(uint32_t index) const {
  const int q = slots_[index].qos;
  const int limit = qos_specs_[q].max_gpus_per_user;
  if (limit == kUnlimited) return true;
  const auto key = std::make_pair(q, jobs_[index].spec().user);
  int64_t used = jobs_[index].num_gpus();
  if (auto it = qos_gpus_.find(key); it != qos_gpus_.end()) used += it->second;
  if (auto it = qos_pending_.find(key); it != qos_pending_.end()) {
    used += it->second;
  }
  return used <= limit;
}

Scheduler::QosUse Scheduler::QosUseOf(JobId id) const {
  QosUse use;
  auto it = index_of_.find(id);
  if (it == index_of_.end() || jobs_[it->second].finished()) return use;
  use.qos = slots_[it->second].qos;
  if (use.qos < 0) return use;
  auto gpus = qos_gpus_.find({use.qos, jobs_[it->second].spec().user});
  if (gpus != qos_gpus_.end()) use.user_gpus = gpus->second;
  return use;
}

}  // namespace tiresias
