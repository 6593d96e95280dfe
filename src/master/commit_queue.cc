#include "master/commit_queue.h"

#include <utility>

namespace tiresias {

std::vector<int64_t> CommitQueue::Take(StoreWrite* write) {
  for (const JobRecord& rec : write->jobs) {
    if (respecified_.contains(rec.id)) write->new_specs.insert(rec.id);
  }
  respecified_.clear();
  jobs_.clear();
  write->events = std::move(events_);
  events_.clear();
  write->launches = std::move(launches_);
  launches_.clear();
  std::vector<int64_t> nodes(nodes_.begin(), nodes_.end());
  nodes_.clear();
  return nodes;
}

void CommitQueue::PutBack(StoreWrite write) {
  for (const JobRecord& rec : write.jobs) jobs_.insert(rec.id);
  respecified_.insert(write.new_specs.begin(), write.new_specs.end());
  write.events.insert(write.events.end(),
                      std::make_move_iterator(events_.begin()),
                      std::make_move_iterator(events_.end()));
  events_ = std::move(write.events);
  write.launches.insert(write.launches.end(),
                        std::make_move_iterator(launches_.begin()),
                        std::make_move_iterator(launches_.end()));
  launches_ = std::move(write.launches);
  for (const NodeRecord& node : write.nodes) nodes_.insert(node.id);
}

std::vector<LaunchKey> CommitQueue::TakeReleased() {
  std::vector<LaunchKey> released = std::move(released_);
  released_.clear();
  return released;
}

}  // namespace tiresias
