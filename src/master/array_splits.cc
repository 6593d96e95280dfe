#include "master/array_splits.h"

#include <algorithm>

namespace tiresias {

bool ArraySplits::Add(const JobRecord& head, double anchor) {
  if (head.array_count <= head.array_split || arrays_.contains(head.id)) {
    return false;
  }
  Array& a = arrays_[head.id];
  a.count = head.array_count;
  a.split = std::max(head.array_split, 1);
  a.held = head.spec.hold;
  a.gpus = head.spec.num_gpus;
  a.cpus = head.spec.cpus;
  a.user = head.spec.user;
  a.name = head.spec.name;
  a.vc = head.spec.vc;
  a.qos = head.spec.qos;
  a.anchor = anchor;
  unwritten_ += a.count - a.split;
  return true;
}

void ArraySplits::Split(JobId id, int split_to) {
  auto it = arrays_.find(id);
  if (it == arrays_.end() || split_to <= it->second.split) return;
  const int to = std::min(split_to, it->second.count);
  unwritten_ -= to - it->second.split;
  it->second.split = to;
  if (to == it->second.count) arrays_.erase(it);
}

std::optional<JobId> ArraySplits::Holding(JobId job) const {
  auto it = arrays_.upper_bound(job);
  if (it == arrays_.begin()) return std::nullopt;
  --it;
  const JobId first = it->first;
  if (job >= first + it->second.split && job < first + it->second.count) {
    return first;
  }
  return std::nullopt;
}

}  // namespace tiresias
