// MasterState: the agent protocol (register, heartbeat, reconciling what an
// agent reports with the launches), node identity and leases, and failure
// detection. What a reported task means for its job: master_task_ends.cc;
// adopting what runs after a master restart: master_adoption.cc.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "master/agent_reports.h"
#include "master/master_state.h"

namespace tiresias {
namespace {

bool Ended(const v1::TaskStatus& task) {
  return task.state() == v1::TASK_STATE_EXITED ||
         task.state() == v1::TASK_STATE_PREEMPTED;
}

// SHA-256 of an agent's token, hex: the master keeps only this.
std::string HashToken(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string SecondsText(Seconds s) {
  return absl::StrFormat("%g s", s.count());
}

}  // namespace

Seconds MasterState::HeartbeatInterval() const {
  return std::min(options_.heartbeat_interval, options_.node_timeout / 10);
}

Seconds MasterState::AgentHeartbeatInterval(Seconds lease) const {
  const Seconds base = HeartbeatInterval();
  if (options_.max_heartbeat_rate <= 0) return base;
  const Seconds spread{static_cast<double>(table_.nodes().size()) /
                       options_.max_heartbeat_rate};
  // A lease spans 3 at least, as Register asks of the base.
  const Seconds most =
      std::max(base, std::min(options_.node_timeout / 5,
                              lease / static_cast<double>(kMinLeaseBeats)));
  return std::clamp(spread, base, most);
}

bool MasterState::PlacedOn(JobId job, int attempt, int rank,
                           const std::string& node) {
  const Launch* launch = table_.Find({job, attempt});
  if (launch != nullptr && rank < static_cast<int>(launch->parts.size()) &&
      table_.NodeName(launch->parts[rank].node_id) == node) {
    return true;
  }
  // An earlier launch: the store recorded where each rank went (rare: only
  // orphans get here).
  absl::StatusOr<std::vector<std::string>> ranks =
      store_->LaunchNodes(job, attempt);
  if (!ranks.ok()) return true;  // cannot tell: do not refuse the truth
  if (!ranks->empty()) {
    return rank < static_cast<int>(ranks->size()) && (*ranks)[rank] == node;
  }
  // Launches from before the launches table: the job's last nodes.
  auto rec = records_.find(job);
  return rec != records_.end() &&
         std::find(rec->second.nodes.begin(), rec->second.nodes.end(),
                   node) != rec->second.nodes.end();
}

template <typename Response>
MasterState::CheckedReports MasterState::CheckReports(
    const google::protobuf::RepeatedPtrField<v1::TaskStatus>& tasks,
    const NodeRecord& node, Seconds now, Response* resp) {
  CheckedReports out;
  for (int i = 0; i < tasks.size(); ++i) {
    const v1::TaskStatus& task = tasks[i];
    out.present.insert(
        {task.task().job_id(), task.task().attempt(), task.task().rank()});
    std::string error = TaskReportError(task, i, node.gpus, now);
    const JobId job = task.task().job_id();
    if (error.empty() && job > ended_.max_id) {
      error = absl::StrCat("tasks[", i, "].task.job_id: no job ", job,
                           " was ever submitted (the highest id is ",
                           ended_.max_id, ")");
    }
    if (auto rec = records_.find(job);
        error.empty() && rec != records_.end() &&
        task.task().attempt() > rec->second.attempt) {
      error = absl::StrCat("tasks[", i, "].task.attempt: job ", job,
                           " has been launched ", rec->second.attempt,
                           " time(s), got attempt ", task.task().attempt());
    }
    if (error.empty() && !Ended(task) &&
        !PlacedOn(job, task.task().attempt(), task.task().rank(),
                  node.name)) {
      error = absl::StrCat("tasks[", i, "].task: job ", job, " attempt ",
                           task.task().attempt(), " rank ", task.task().rank(),
                           " was never placed on node ", node.name);
    }
    if (error.empty()) {
      out.valid.push_back(&task);
    } else {
      v1::TaskReportError* rejected = resp->add_rejected();
      *rejected->mutable_task() = task.task();
      rejected->set_message(std::move(error));
    }
  }
  return out;
}

absl::StatusOr<v1::RegisterResponse> MasterState::Register(
    const v1::RegisterRequest& req) {
  RETURN_IF_ERROR(ValidateRegisterRequest(req, options_.max_gpus_per_node));
  // The lease: a lapsed one stops every task (SIGTERM, grace, SIGKILL)
  // before the node timeout, when the master gives the node's jobs away.
  const Seconds grace{req.grace_seconds()};
  const Seconds lease = options_.node_timeout - grace - kFenceMargin;
  const Seconds min_lease = HeartbeatInterval() * kMinLeaseBeats;
  if (lease < min_lease) {
    return absl::FailedPreconditionError(absl::StrCat(
        "grace_seconds: the agent's grace period (", SecondsText(grace),
        ") does not fit the master's node timeout (",
        SecondsText(options_.node_timeout),
        "): the node timeout must exceed lease + grace + ",
        SecondsText(kFenceMargin), ", and a lease must span ", kMinLeaseBeats,
        " heartbeats (", SecondsText(min_lease),
        "); start the agent with --grace <= ",
        absl::StrFormat("%g", std::max(0.0, (options_.node_timeout -
                                              kFenceMargin - min_lease)
                                                 .count())),
        " or the master with --node-timeout >= ",
        absl::StrFormat("%g", (grace + kFenceMargin + min_lease).count())));
  }
  MutexLock lock(&mu_);
  const Seconds now = clock_->NowUnixSeconds();
  const std::string token_hash = HashToken(req.agent_token());
  const std::string name = req.name();
  NodeInfo* known = table_.FindNodeByName(name);
  if (known != nullptr) {
    // A node known up before a restart may still be live until the
    // adoption window ends.
    const bool live = known->up() || (known->record.state == NodeState::kUp &&
                                      !restart_.closed());
    if (live && !known->record.agent_token_hash.empty() &&
        known->record.agent_token_hash != token_hash) {
      return absl::AlreadyExistsError(absl::StrCat(
          "name: node ", name,
          " is held by a live agent with another identity (its state "
          "directory's agent token); stop that agent or give this one "
          "another --name (a node silent for the node timeout, ",
          SecondsText(options_.node_timeout), ", is released)"));
    }
    RETURN_IF_ERROR(LaunchTable::CheckReportOrder(*known, req.boot_id(),
                                                  req.report_seq()));
  }
  if (known == nullptr &&
      static_cast<int>(table_.nodes().size()) >= options_.max_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "name: the master knows ", table_.nodes().size(),
        " nodes, its --max-nodes; a new node name is refused"));
  }
  NodeRecord record{0,  name, req.address(), req.gpus(), NodeState::kUp, now};
  record.agent_token_hash = token_hash;
  // Its row goes with this registration's commit (one transaction, with
  // the reports of other registrations meanwhile). A new node's id is the
  // next the store would give: every row is in table_ from Load on, and
  // none is ever removed (AUTOINCREMENT).
  record.id = known != nullptr         ? known->record.id
              : table_.nodes().empty() ? 1
                                       : table_.nodes().rbegin()->first + 1;
  to_write_.Node(record.id);
  NodeInfo& info = table_.NodeAt(record.id, name);
  // A drain outlives registrations (UpsertNode leaves it as stored).
  record.drained = info.record.drained;
  record.drain_reason = info.record.drain_reason;
  info.record = record;
  info.log_address = req.log_address();
  info.gpu_model = req.gpu_model();
  info.features.assign(req.features().begin(), req.features().end());
  info.cpus = req.cpus();
  info.memory_mib = req.memory_mib();
  info.spare_cpus = req.spare_cpus();
  info.spare_memory_mib = req.spare_memory_mib();
  info.report_boot_id = req.boot_id();
  info.report_seq = req.report_seq();
  info.last_heard = clock_->NowMonotonic();
  info.SetLife(NodeLife::kUp);
  info.session = ++last_session_;
  info.lease = lease;
  table_.SetOrphans(info, {});
  table_.TouchNode(record.id);  // a new session: its desired state is sent anew
  v1::RegisterResponse resp;
  CheckedReports reports = CheckReports(req.tasks(), record, now, &resp);
  // After a master restart: the tasks of jobs that were running become
  // their launches' parts again (no new start), before anything else.
  std::vector<JobId> reported;
  for (const v1::TaskStatus* task : reports.valid) {
    AdoptOrOrphan(record.id, *task, now);
    reported.push_back(task->task().job_id());
  }
  // A launch is given up only where the agent does not have it at all: a
  // report refused (a GPU index past the node's count now) may still be a
  // live task, which the adoption window's end covers as before.
  std::set<LaunchKey> reported_launches;
  for (const auto& [job, attempt, rank] : reports.present) {
    reported_launches.insert({job, attempt});
  }
  GiveUpAdoptionsOn(record.id, reported_launches, now);
  RETURN_IF_ERROR(JoinCluster(record.id, now, reported));
  Reconcile(record.id, reports, now, &resp);
  ReleaseDeferred(now);
  pass_wanted_ = true;
  const uint64_t session = info.session;
  // With the reports of other registrations and heartbeats that came
  // meanwhile (may let go of mu_: `info` is not read after).
  RETURN_IF_ERROR(CommitReports());
  resp.set_node_id(record.id);
  resp.set_epoch(epoch());
  resp.set_heartbeat_interval_seconds(AgentHeartbeatInterval(lease).count());
  resp.set_session(session);
  resp.set_lease_seconds(lease.count());
  *resp.mutable_desired() = AnswerDesired(record.id, 0);  // a new session
  return resp;
}

absl::StatusOr<v1::HeartbeatResponse> MasterState::Heartbeat(
    const v1::HeartbeatRequest& req) {
  RETURN_IF_ERROR(ValidateHeartbeatRequest(req));
  MutexLock lock(&mu_);
  NodeInfo* node = table_.FindNode(req.node_id());
  if (node == nullptr || !node->up() || node->session != req.session() ||
      req.session() == 0) {
    return absl::NotFoundError(absl::StrCat(
        "node_id: node ", req.node_id(), " (session ", req.session(),
        ") is not registered with this master; register again"));
  }
  NodeInfo& info = *node;
  RETURN_IF_ERROR(
      LaunchTable::CheckReportOrder(info, req.boot_id(), req.report_seq()));
  const Seconds now = clock_->NowUnixSeconds();
  info.record.last_heartbeat = now;
  info.last_heard = clock_->NowMonotonic();
  // A restarted agent heartbeats before it would register again, with the
  // new port of its log service.
  if (!req.log_address().empty()) info.log_address = req.log_address();
  v1::HeartbeatResponse resp;
  CheckedReports reports = CheckReports(req.tasks(), info.record, now, &resp);
  Reconcile(req.node_id(), reports, now, &resp);
  if (req.leaving() && !info.leaving()) {
    // No new launch there; what runs there is preempted (Rebuild), so the
    // agent stops it and the jobs resume elsewhere.
    info.SetLife(NodeLife::kLeaving);
    RETURN_IF_ERROR(Rebuild(now));
    pass_wanted_ = true;
  }
  if (info.leaving() && req.tasks_size() == 0 && info.orphans.empty()) {
    // Gone cleanly: nothing of it runs any more, and every end it had was
    // acknowledged (so the agent, told so, stops reporting).
    LoseNode(req.node_id(), now, "its agent shut down");
    info.SetLife(NodeLife::kDown);
    info.record.state = NodeState::kDown;
    RETURN_IF_ERROR(store_->UpsertNode(info.record).status());
    RETURN_IF_ERROR(Rebuild(now));
  }
  ReleaseDeferred(now);
  resp.set_heartbeat_interval_seconds(
      AgentHeartbeatInterval(info.lease).count());
  // Acknowledgements only once durable, in one commit with the reports of
  // other heartbeats that came meanwhile (may let go of mu_: `info` is not
  // read after).
  RETURN_IF_ERROR(CommitReports());
  *resp.mutable_desired() = AnswerDesired(req.node_id(), req.desired_version());
  resp.set_epoch(epoch());
  return resp;
}

template <typename Response>
void MasterState::Reconcile(int64_t node_id, const CheckedReports& reports,
                            Seconds now, Response* resp) {
  for (const v1::TaskStatus* task : reports.valid) {
    HandleTask(node_id, *task, now, resp->mutable_acknowledged());
  }
  // Parts of this node the agent does not report (the report is the
  // truth):
  // - one it reported running: ended without a status (an honest agent
  //   reports an end until it is acknowledged): a system stop;
  // - one being stopped that never ran: it never will (it left the desired
  //   state, and the agent starts tasks only from an answer to a report it
  //   sent moments before), so it has ended.
  // A part of an active launch that never ran stays: the agent starts it.
  for (const auto& [key, rank] : table_.Unreported(node_id, reports.present)) {
    const Launch* launch = table_.Find(key);
    if (launch == nullptr) continue;  // erased by an earlier one
    v1::TaskStatus lost;
    lost.mutable_task()->set_job_id(key.first);
    lost.mutable_task()->set_attempt(key.second);
    lost.mutable_task()->set_rank(rank);
    lost.set_state(v1::TASK_STATE_PREEMPTED);
    if (launch->parts[rank].running()) lost.set_end_time(now.count());
    google::protobuf::RepeatedPtrField<v1::TaskRef> ignored;
    HandleTask(node_id, lost, now, &ignored);
  }
  // Live tasks no launch part names: not in the desired state, so the
  // agent stops them; their GPUs are busy until they end.
  NodeInfo& info = *table_.FindNode(node_id);
  const size_t orphans_before = info.orphans.size();
  std::map<TaskKey, std::vector<int>> orphans;
  for (const v1::TaskStatus* task : reports.valid) {
    if (Ended(*task)) continue;
    const TaskKey key{task->task().job_id(), task->task().attempt(),
                      task->task().rank()};
    if (!table_.IsLivePart(node_id, key)) {
      orphans[key].assign(task->gpu_indexes().begin(),
                          task->gpu_indexes().end());
    }
  }
  if (orphans.size() != orphans_before) pass_wanted_ = true;
  table_.SetOrphans(info, std::move(orphans));
  FinishRestartCancels(now);
}

void MasterState::LoseNode(int64_t node_id, Seconds now,
                           const std::string& why) {
  const std::string name = table_.NodeName(node_id);
  QueueAdminNotification("node_down", name, why, now);
  // The parts about to end with the node: their last readings are all the
  // job will know of what they used.
  for (const auto& [key, rank] : table_.PartsOn(node_id)) {
    const Launch* launch = table_.Find(key);
    if (launch != nullptr && launch->phase != Phase::kDeferred &&
        !launch->parts[rank].ended()) {
      AddPartUsage(key.first, launch->parts[rank]);
    }
  }
  for (const LaunchKey& key : table_.LosePartsOn(node_id, now)) {
    Launch* launch = table_.Find(key);
    if (launch == nullptr) continue;  // erased by an earlier one
    auto rec = records_.find(key.first);
    const bool job_open = rec != records_.end() && !IsFinal(rec->second.state);
    const bool adopting = restart_.Adopting(key.first);
    if (launch->first_failure) {
      if (launch->AllEnded() && job_open) {
        ClassifyEndedGang(*launch, now);  // erases it
      }
      continue;
    }
    if (!adopting && launch->phase == Phase::kActive && job_open) {
      AddEvent(key.first, now, EventKind::kNodeDown,
               absl::StrCat(name, ": ", why));
      OnSystemStop(*launch, -1, now, now,
                   absl::StrCat("node ", name, " lost (", why, ")"));
    }
    if (launch->AllEnded() && !adopting) {
      const bool cancelling = launch->phase == Phase::kStopping &&
                              launch->stop_reason == v1::STOP_REASON_CANCEL;
      if (launch->phase == Phase::kStopping) AccountStop(*launch);
      table_.Erase(key);
      if (cancelling) {
        MaybeFinishCancel(key.first, now,
                          absl::StrCat("its tasks were lost with ", name));
      }
    }
  }
  if (NodeInfo* info = table_.FindNode(node_id); info != nullptr) {
    table_.SetOrphans(*info, {});
  }
  table_.TouchNode(node_id);
  pass_wanted_ = true;
}

void MasterState::OnStall(Seconds stall) {
  if (stall <= Seconds{0}) return;
  MutexLock lock(&mu_);
  const Seconds now = clock_->NowMonotonic();
  table_.ForEachNode([&](int64_t, NodeInfo& info) {
    info.last_heard = std::min(info.last_heard + stall, now);
  });
  restart_.Stall(stall);  // an open window ends that much later
}

absl::Status MasterState::CheckTimeouts() {
  MutexLock lock(&mu_);
  MaybeRefitPackLimit();
  const Seconds now = clock_->NowUnixSeconds();
  bool changed = false;
  std::vector<int64_t> silent;
  for (const auto& [id, info] : table_.nodes()) {
    if (info.record.state == NodeState::kUp &&
        clock_->NowMonotonic() - info.last_heard > options_.node_timeout) {
      silent.push_back(id);
    }
  }
  // A node whose write fails stays down in memory (a restarted master
  // finds it silent again); the rest of the check, the rebuild without it,
  // time limits and begin times, does not wait for the disk.
  absl::Status node_write;
  for (int64_t id : silent) {
    if (table_.FindNode(id)->up()) {
      LoseNode(id, now, "silent for longer than the node timeout");
      changed = true;
    }
    NodeInfo& info = *table_.FindNode(id);
    // A node whose down state was not stored yet (its write failed) is
    // already down in memory.
    if (info.life != NodeLife::kDown) info.SetLife(NodeLife::kDown);
    info.record.state = NodeState::kDown;
    if (absl::Status written = store_->UpsertNode(info.record).status();
        node_write.ok()) {
      node_write = written;
    }
  }
  if (restart_.Due(clock_->NowMonotonic())) {
    EndAdoptionWindow(now);
    changed = true;
  }
  FinishRestartCancels(now);
  EnforceTimeLimits(now);
  ReleaseDueBegins(now);
  if (changed) {
    RETURN_IF_ERROR(Rebuild(now));
    pass_wanted_ = true;
  }
  absl::Status committed = Commit();
  return node_write.ok() ? committed : node_write;
}

}  // namespace tiresias
