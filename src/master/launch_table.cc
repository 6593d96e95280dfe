#include "master/launch_table.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tiresias {
namespace {

template <typename E>
struct Moves {
  std::initializer_list<std::pair<E, E>> legal;
  bool Allows(E from, E to) const {
    return std::find(legal.begin(), legal.end(), std::make_pair(from, to)) !=
           legal.end();
  }
};

// The tables of legal moves (the file comment of launch_table.h draws them).
constexpr Moves<PartState> kPartMoves{{
    {PartState::kPlaced, PartState::kRunning},
    {PartState::kPlaced, PartState::kEnded},
    {PartState::kRunning, PartState::kEnded},
}};
constexpr Moves<LaunchPhase> kLaunchMoves{{
    {LaunchPhase::kDeferred, LaunchPhase::kActive},
    {LaunchPhase::kActive, LaunchPhase::kStopping},
    {LaunchPhase::kStopping, LaunchPhase::kStopping},
}};
constexpr Moves<NodeLife> kNodeMoves{{
    {NodeLife::kKnown, NodeLife::kUp},
    {NodeLife::kKnown, NodeLife::kDown},
    {NodeLife::kUp, NodeLife::kUp},
    {NodeLife::kUp, NodeLife::kLeaving},
    {NodeLife::kUp, NodeLife::kDown},
    {NodeLife::kLeaving, NodeLife::kUp},
    {NodeLife::kLeaving, NodeLife::kDown},
    {NodeLife::kDown, NodeLife::kUp},
}};

template <typename E, typename NameOf>
absl::Status MoveBy(const Moves<E>& moves, NameOf name, E& state, E to,
                    std::string_view what) {
  if (!moves.Allows(state, to)) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(what), ": illegal move ",
                     std::string(name(state)), " -> ", std::string(name(to))));
  }
  state = to;
  return absl::OkStatus();
}

// An illegal move inside the master is a bug in it: deciding on from a
// table that contradicts itself could run a job twice.
void OrDie(const absl::Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "tiresias master: invariant: %s\n",
               std::string(status.message()).c_str());
  std::abort();
}

bool Ended(const v1::TaskStatus& task) {
  return task.state() == v1::TASK_STATE_EXITED ||
         task.state() == v1::TASK_STATE_PREEMPTED;
}

}  // namespace

std::string_view PartStateName(PartState state) {
  switch (state) {
    case PartState::kPlaced:
      return "placed";
    case PartState::kRunning:
      return "running";
    case PartState::kEnded:
      return "ended";
  }
  return "?";
}

std::string_view LaunchPhaseName(LaunchPhase phase) {
  switch (phase) {
    case LaunchPhase::kDeferred:
      return "deferred";
    case LaunchPhase::kActive:
      return "active";
    case LaunchPhase::kStopping:
      return "stopping";
  }
  return "?";
}

std::string_view NodeLifeName(NodeLife life) {
  switch (life) {
    case NodeLife::kKnown:
      return "known";
    case NodeLife::kUp:
      return "up";
    case NodeLife::kLeaving:
      return "leaving";
    case NodeLife::kDown:
      return "down";
  }
  return "?";
}

bool LegalMove(PartState from, PartState to) {
  return kPartMoves.Allows(from, to);
}
bool LegalMove(LaunchPhase from, LaunchPhase to) {
  return kLaunchMoves.Allows(from, to);
}
bool LegalMove(NodeLife from, NodeLife to) {
  return kNodeMoves.Allows(from, to);
}

absl::Status Move(PartState& state, PartState to, std::string_view what) {
  return MoveBy(kPartMoves, PartStateName, state, to, what);
}
absl::Status Move(LaunchPhase& state, LaunchPhase to, std::string_view what) {
  return MoveBy(kLaunchMoves, LaunchPhaseName, state, to, what);
}
absl::Status Move(NodeLife& state, NodeLife to, std::string_view what) {
  return MoveBy(kNodeMoves, NodeLifeName, state, to, what);
}

void LaunchTable::Part::MarkRunning(Seconds start) {
  if (state != PartState::kPlaced) return;
  OrDie(Move(state, PartState::kRunning, "part"));
  ran = true;
  start_time = start;
}

void LaunchTable::Part::MarkEnded() {
  if (state == PartState::kEnded) return;
  OrDie(Move(state, PartState::kEnded, "part"));
}

bool LaunchTable::Launch::AllEnded() const {
  return std::all_of(parts.begin(), parts.end(),
                     [](const Part& p) { return p.ended(); });
}

bool LaunchTable::Launch::AllOwnEnds() const {
  return std::all_of(parts.begin(), parts.end(),
                     [](const Part& p) { return p.own_end; });
}

std::optional<Seconds> LaunchTable::Launch::LatestEnd() const {
  std::optional<Seconds> end;
  for (const Part& part : parts) {
    if (part.end_time && (!end || *part.end_time > *end)) end = part.end_time;
  }
  return end;
}

void LaunchTable::Launch::SetPhase(LaunchPhase next) {
  OrDie(Move(phase, next, absl::StrCat("launch ", job, "/", attempt)));
}

void LaunchTable::Node::SetLife(NodeLife next) {
  OrDie(Move(life, next, absl::StrCat("node ", record.name)));
}

LaunchTable::Launch* LaunchTable::Find(LaunchKey key) {
  auto it = launches_.find(key);
  return it == launches_.end() ? nullptr : &it->second;
}

const LaunchTable::Launch* LaunchTable::Find(LaunchKey key) const {
  auto it = launches_.find(key);
  return it == launches_.end() ? nullptr : &it->second;
}

LaunchTable::Launch& LaunchTable::Add(Launch launch) {
  const LaunchKey key = launch.key();
  for (size_t rank = 0; rank < launch.parts.size(); ++rank) {
    if (launch.parts[rank].node_id != 0) {
      parts_by_node_[launch.parts[rank].node_id].insert(
          {key, static_cast<int>(rank)});
    }
  }
  if (launch.phase == LaunchPhase::kDeferred) deferred_.insert(key);
  return launches_[key] = std::move(launch);
}

std::vector<LaunchKey> LaunchTable::DeferredLaunches() {
  std::vector<LaunchKey> out;
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    auto launch = launches_.find(*it);
    if (launch == launches_.end() ||
        launch->second.phase != LaunchPhase::kDeferred) {
      it = deferred_.erase(it);  // released or gone: never deferred again
      continue;
    }
    out.push_back(*it++);
  }
  return out;
}

LaunchTable::Part& LaunchTable::PlacePart(Launch& launch, int rank,
                                          int64_t node_id) {
  Part& part = launch.parts[rank];
  part.node_id = node_id;
  parts_by_node_[node_id].insert({launch.key(), rank});
  return part;
}

const std::set<std::pair<LaunchKey, int>>& LaunchTable::PartsOn(
    int64_t node_id) const {
  static const std::set<std::pair<LaunchKey, int>> kNone;
  auto it = parts_by_node_.find(node_id);
  return it == parts_by_node_.end() ? kNone : it->second;
}

LaunchTable::Launch& LaunchTable::Adopted(LaunchKey key, int ranks) {
  Launch& launch = launches_[key];
  if (launch.parts.empty()) {
    launch.job = key.first;
    launch.attempt = key.second;
    launch.parts.resize(ranks);
    // Its tasks run: it is active and was durable before the restart.
    launch.SetPhase(LaunchPhase::kActive);
    launch.durable = true;
  }
  return launch;
}

void LaunchTable::Erase(LaunchKey key) {
  auto it = launches_.find(key);
  if (it == launches_.end()) return;
  for (size_t rank = 0; rank < it->second.parts.size(); ++rank) {
    const int64_t node = it->second.parts[rank].node_id;
    if (node == 0) continue;
    auto parts = parts_by_node_.find(node);
    if (parts == parts_by_node_.end()) continue;
    parts->second.erase({key, static_cast<int>(rank)});
    if (parts->second.empty()) parts_by_node_.erase(parts);
  }
  launches_.erase(it);
  deferred_.erase(key);
}

bool LaunchTable::AnyLive(JobId job) const {
  for (auto it = launches_.lower_bound({job, 0});
       it != launches_.end() && it->first.first == job; ++it) {
    if (it->second.phase != LaunchPhase::kDeferred && !it->second.AllEnded()) {
      return true;
    }
  }
  return false;
}

bool LaunchTable::OtherAttemptLive(const Launch& launch) const {
  for (auto it = launches_.lower_bound({launch.job, 0});
       it != launches_.end() && it->first.first == launch.job; ++it) {
    if (it->first.second != launch.attempt && !it->second.AllEnded()) {
      return true;
    }
  }
  return HasOrphans(launch.job);
}

void LaunchTable::Stop(Launch& launch, v1::StopReason reason) {
  launch.SetPhase(LaunchPhase::kStopping);
  launch.stop_reason = reason;
  Touch(launch);
}

std::string LaunchTable::Describe(const Launch& launch) const {
  std::vector<std::string> parts;
  for (const Part& part : launch.parts) {
    auto node = nodes_.find(part.node_id);
    parts.push_back(absl::StrCat(
        node == nodes_.end() ? absl::StrCat("node ", part.node_id)
                             : node->second.record.name,
        part.local_gpus.empty()
            ? std::string(" spare CPUs (no GPU)")
            : absl::StrCat(" GPUs ", absl::StrJoin(part.local_gpus, ","))));
  }
  return absl::StrCat("attempt ", launch.attempt, " on ",
                      absl::StrJoin(parts, "; "));
}

LaunchTable::Node* LaunchTable::FindNode(int64_t id) {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

const LaunchTable::Node* LaunchTable::FindNode(int64_t id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

LaunchTable::Node* LaunchTable::FindNodeByName(std::string_view name) {
  auto id = id_of_name_.find(absl::string_view(name.data(), name.size()));
  return id == id_of_name_.end() ? nullptr : FindNode(id->second);
}

void LaunchTable::EraseUpNodes(std::set<std::string>* names) {
  for (auto name = names->begin(); name != names->end();) {
    const Node* node = FindNodeByName(*name);
    name = node != nullptr && node->up() ? names->erase(name) : std::next(name);
  }
}

LaunchTable::Node& LaunchTable::NodeAt(int64_t id, std::string_view name) {
  id_of_name_[std::string(name)] = id;
  return nodes_[id];
}

std::string LaunchTable::NodeName(int64_t id) const {
  const Node* node = FindNode(id);
  return node == nullptr ? std::string() : node->record.name;
}

std::vector<LaunchKey> LaunchTable::BusyGpus(int64_t node_id) const {
  const Node* node = FindNode(node_id);
  if (node == nullptr) return {};
  std::vector<LaunchKey> busy(node->record.gpus, LaunchKey{0, 0});
  auto hold = [&](int gpu, LaunchKey key) {
    if (gpu >= 0 && gpu < static_cast<int>(busy.size())) busy[gpu] = key;
  };
  for (const auto& [key, rank] : PartsOn(node_id)) {
    const Launch& launch = launches_.at(key);
    const Part& part = launch.parts[rank];
    if (launch.phase == LaunchPhase::kDeferred || part.ended()) continue;
    for (int gpu : part.local_gpus) hold(gpu, key);
  }
  for (const auto& [task, gpus] : node->orphans) {
    for (int gpu : gpus) hold(gpu, {std::get<0>(task), std::get<1>(task)});
  }
  return busy;
}

absl::Status LaunchTable::CheckReportOrder(Node& node,
                                           const std::string& boot_id,
                                           uint64_t seq) {
  if (boot_id.empty()) return absl::OkStatus();
  if (boot_id == node.report_boot_id && seq <= node.report_seq) {
    return absl::AbortedError(
        absl::StrCat("report_seq: a newer report of this agent was applied (",
                     seq, " <= ", node.report_seq, "): this one is stale"));
  }
  node.report_boot_id = boot_id;
  node.report_seq = seq;
  return absl::OkStatus();
}

void LaunchTable::SetOrphans(Node& node,
                             std::map<TaskKey, std::vector<int>> orphans) {
  for (const auto& [task, gpus] : node.orphans) {
    auto count = orphans_by_job_.find(std::get<0>(task));
    if (count != orphans_by_job_.end() && --count->second <= 0) {
      orphans_by_job_.erase(count);
    }
  }
  node.orphans = std::move(orphans);
  for (const auto& [task, gpus] : node.orphans) {
    ++orphans_by_job_[std::get<0>(task)];
  }
}

void LaunchTable::Touch(const Launch& launch) {
  for (const Part& part : launch.parts) {
    if (part.node_id != 0) TouchNode(part.node_id);
  }
}

void LaunchTable::TouchNode(int64_t node_id) {
  Node* node = FindNode(node_id);
  if (node == nullptr) return;
  ++node->version;
  desired_changed_ = true;
}

bool LaunchTable::TakeDesiredChanged() {
  return std::exchange(desired_changed_, false);
}

bool LaunchTable::IsLivePart(int64_t node_id, const TaskKey& task) const {
  const Launch* launch = Find({std::get<0>(task), std::get<1>(task)});
  const int rank = std::get<2>(task);
  return launch != nullptr && launch->phase != LaunchPhase::kDeferred &&
         rank >= 0 && rank < static_cast<int>(launch->parts.size()) &&
         launch->parts[rank].node_id == node_id && !launch->parts[rank].ended();
}

LaunchTable::Applied LaunchTable::Apply(int64_t node_id,
                                        const v1::TaskStatus& task,
                                        Seconds now) {
  Applied out;
  const bool ended = Ended(task);
  Launch* launch = Find({task.task().job_id(), task.task().attempt()});
  const int rank = task.task().rank();
  if (launch == nullptr || launch->phase == LaunchPhase::kDeferred ||
      rank < 0 || rank >= static_cast<int>(launch->parts.size()) ||
      launch->parts[rank].node_id != node_id) {
    out.ack = ended;  // an orphan's end is done with once reported
    return out;
  }
  out.launch = launch;
  Part& part = launch->parts[rank];
  if (part.ended()) {
    out.kind = Applied::Kind::kAlreadyEnded;
    out.ack = ended;
    return out;
  }
  if (!ended) {
    out.kind = Applied::Kind::kProgress;
    if (ShowsRun(task) && !part.running()) {
      part.MarkRunning(task.has_start_time() ? Seconds{task.start_time()}
                                             : now);
      out.started = true;
    }
    return out;
  }
  // A run shorter than the heartbeat interval: its first report already
  // says it ended. It did run (it reports a start, and it is not a failed
  // spawn), so it is marked running at that start first.
  const bool start_failed = task.state() == v1::TASK_STATE_EXITED &&
                            task.has_exit_code() &&
                            task.exit_code() == kStartFailedExitCode;
  if (!part.running() && ShowsRun(task)) {
    part.MarkRunning(Seconds{task.start_time()});
    out.started = true;
  }
  part.MarkEnded();
  // The agent reports EXITED (not PREEMPTED) only for a task whose end came
  // before any stop it sent; a start that failed is no end of the job's.
  part.own_end = task.state() == v1::TASK_STATE_EXITED &&
                 task.has_exit_code() && !start_failed;
  if (task.has_exit_code()) part.exit_code = task.exit_code();
  if (task.has_end_time()) part.end_time = Seconds{task.end_time()};
  Touch(*launch);
  out.kind = Applied::Kind::kEnded;
  out.ack = true;
  return out;
}

bool LaunchTable::ShowsRun(const v1::TaskStatus& task) {
  if (!Ended(task)) {
    return task.state() == v1::TASK_STATE_RUNNING ||
           task.state() == v1::TASK_STATE_EXITING;
  }
  const bool start_failed = task.state() == v1::TASK_STATE_EXITED &&
                            task.has_exit_code() &&
                            task.exit_code() == kStartFailedExitCode;
  return task.has_start_time() && !start_failed;
}

std::vector<std::pair<LaunchKey, int>> LaunchTable::Unreported(
    int64_t node_id, const std::set<TaskKey>& present) const {
  std::vector<std::pair<LaunchKey, int>> gone;
  for (const auto& [key, rank] : PartsOn(node_id)) {
    const Launch& launch = launches_.at(key);
    const Part& part = launch.parts[rank];
    if (launch.phase == LaunchPhase::kDeferred || part.ended() ||
        present.contains({key.first, key.second, rank})) {
      continue;
    }
    if (part.running() || launch.phase == LaunchPhase::kStopping) {
      gone.push_back({key, rank});
    }
  }
  return gone;
}

std::vector<LaunchKey> LaunchTable::LosePartsOn(int64_t node_id, Seconds now) {
  std::vector<LaunchKey> affected;
  for (const auto& [key, rank] : PartsOn(node_id)) {
    Launch& launch = launches_.at(key);
    if (launch.phase == LaunchPhase::kDeferred) continue;  // nothing sent
    Part& part = launch.parts[rank];
    // Fenced by construction (its lease lapsed before the node timeout),
    // or gone cleanly: its task has ended.
    if (part.ended()) continue;
    part.MarkEnded();
    if (!part.end_time) part.end_time = now;
    if (affected.empty() || affected.back() != key) affected.push_back(key);
  }
  for (const LaunchKey& key : affected) {
    Launch& launch = launches_.at(key);
    launch.system_stopped = true;  // its ranks there were lost with the node
    Touch(launch);
  }
  return affected;
}

void LaunchTable::EndUnadoptedParts() {
  for (auto& [key, launch] : launches_) {
    for (Part& part : launch.parts) {
      if (part.node_id == 0) part.MarkEnded();
    }
  }
}

bool LaunchTable::IsSystemStop(const v1::TaskStatus& task) {
  return (task.state() == v1::TASK_STATE_PREEMPTED &&
          task.stop_reason() != v1::STOP_REASON_PREEMPT &&
          task.stop_reason() != v1::STOP_REASON_CANCEL &&
          task.stop_reason() != v1::STOP_REASON_ORPHAN) ||
         (task.state() == v1::TASK_STATE_EXITED && !task.has_exit_code());
}

LaunchTable::EndKind LaunchTable::ClassifyEnd(Launch& launch,
                                              const v1::TaskStatus& task,
                                              bool job_open, bool adopting) {
  // A rank ended by a system stop (its agent's shutdown, a fence, a lost
  // status), not by our own stop: a gang waiting to be classified counts
  // it.
  const bool system_stop = IsSystemStop(task);
  if (system_stop) launch.system_stopped = true;
  const bool all_ended = launch.AllEnded();
  if (launch.first_failure && job_open) {
    return all_ended ? EndKind::kGangDecided : EndKind::kGangWaits;
  }
  if (job_open && !adopting && launch.phase == LaunchPhase::kStopping &&
      all_ended && launch.AllOwnEnds()) {
    return EndKind::kOwnEndWhileStopping;
  }
  if (!job_open || adopting || launch.phase == LaunchPhase::kStopping) {
    return all_ended ? EndKind::kStopEnded : EndKind::kStopWaits;
  }
  const int code = task.has_exit_code() ? task.exit_code() : -1;
  if (task.state() == v1::TASK_STATE_EXITED && code == 0) {
    return all_ended ? EndKind::kFinished : EndKind::kFinishWaits;
  }
  if (task.state() == v1::TASK_STATE_EXITED && code == kStartFailedExitCode &&
      !launch.all_running) {
    return EndKind::kStartFailed;
  }
  if (system_stop || task.state() == v1::TASK_STATE_PREEMPTED) {
    return EndKind::kSystemStop;
  }
  return all_ended ? EndKind::kFailed : EndKind::kRankFailed;
}

}  // namespace tiresias
