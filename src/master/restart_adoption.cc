#include "master/restart_adoption.h"

#include <utility>

namespace tiresias {

std::vector<JobId> RestartAdoption::Close() {
  closed_ = true;
  conflicts_.clear();
  adopting_on_.clear();
  return AdoptingJobs();
}

void RestartAdoption::Adopt(JobId id, const std::vector<std::string>& nodes) {
  adopting_.insert(id);
  for (const std::string& node :
       std::set<std::string>(nodes.begin(), nodes.end())) {
    adopting_on_[node].push_back(id);
  }
}

std::vector<JobId> RestartAdoption::AdoptingJobs() const {
  return {adopting_.begin(), adopting_.end()};
}

std::vector<JobId> RestartAdoption::AdoptingOn(const std::string& node) {
  auto it = adopting_on_.find(node);
  if (it == adopting_on_.end()) return {};
  std::vector<JobId>& ids = it->second;
  size_t kept = 0;
  for (JobId id : ids) {
    if (adopting_.contains(id)) ids[kept++] = id;
  }
  ids.resize(kept);
  return ids;
}

void RestartAdoption::Fence(JobId id, std::set<std::string> nodes) {
  if (!nodes.empty()) fences_[id] = std::move(nodes);
}

std::set<std::string>* RestartAdoption::FenceOf(JobId id) {
  auto it = fences_.find(id);
  return it == fences_.end() ? nullptr : &it->second;
}

void RestartAdoption::CancelAfterRestart(JobId id,
                                         std::set<std::string> nodes) {
  cancels_[id] = std::move(nodes);
}

std::vector<JobId> RestartAdoption::CancellingJobs() const {
  std::vector<JobId> ids;
  ids.reserve(cancels_.size());
  for (const auto& [id, nodes] : cancels_) ids.push_back(id);
  return ids;
}

std::set<std::string>* RestartAdoption::CancelNodesOf(JobId id) {
  auto it = cancels_.find(id);
  return it == cancels_.end() ? nullptr : &it->second;
}

}  // namespace tiresias
