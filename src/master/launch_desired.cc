// What LaunchTable tells a node's agent to run and stop
// (LaunchTable::DesiredStateOf, AnswerDesired; launch_table.h).
#include <set>
#include <utility>

#include "master/launch_table.h"

namespace tiresias {

v1::DesiredState LaunchTable::DesiredStateOf(int64_t node_id,
                                             const std::set<TaskKey>* known,
                                             std::set<TaskKey>* keys,
                                             FillStart fill) const {
  v1::DesiredState desired;
  const Node* node = FindNode(node_id);
  if (node == nullptr) return desired;
  desired.set_session(node->session);
  desired.set_version(node->version);
  std::set<TaskKey> wanted;
  // O(parts on the node) (LaunchTable::PartsOn), in launch order.
  LaunchKey last_stop{0, 0};
  for (const auto& [key, rank] : PartsOn(node_id)) {
    const Launch& launch = *Find(key);
    const Part& part = launch.parts[rank];
    if (part.ended()) continue;
    if (launch.phase == LaunchPhase::kActive && launch.durable) {
      const TaskKey task{launch.job, launch.attempt, rank};
      // A task's StartTask never changes within its launch: one the agent
      // holds is not sent again.
      const bool send = known == nullptr || !known->contains(task);
      v1::StartTask start;
      if (!fill(launch, rank, send ? &start : nullptr)) continue;
      wanted.insert(task);
      if (send) *desired.add_run() = std::move(start);
    } else if (launch.phase == LaunchPhase::kStopping && key != last_stop) {
      v1::StopTask* stop = desired.add_stop();  // one entry per launch
      stop->set_job_id(launch.job);
      stop->set_attempt(launch.attempt);
      stop->set_reason(launch.stop_reason);
      last_stop = key;
    }
  }
  if (known != nullptr) {
    desired.set_delta(true);
    for (const TaskKey& task : *known) {
      if (wanted.contains(task)) continue;
      v1::TaskRef* removed = desired.add_removed();
      removed->set_job_id(std::get<0>(task));
      removed->set_attempt(std::get<1>(task));
      removed->set_rank(std::get<2>(task));
    }
  }
  if (keys != nullptr) *keys = std::move(wanted);
  return desired;
}

v1::DesiredState LaunchTable::AnswerDesired(int64_t node_id, uint64_t held,
                                            FillStart fill) {
  Node* node = FindNode(node_id);
  if (node == nullptr) return v1::DesiredState();
  const bool delta = held != 0 && held == node->told_version;
  std::set<TaskKey> keys;
  v1::DesiredState desired =
      DesiredStateOf(node_id, delta ? &node->told_run : nullptr, &keys, fill);
  if (delta) desired.set_base_version(held);
  node->told_version = node->version;
  node->told_run = std::move(keys);
  return desired;
}

}  // namespace tiresias
