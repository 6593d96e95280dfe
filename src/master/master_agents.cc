// MasterState: the agent protocol (register, heartbeat, reconciling what an
// agent reports with the launches), node identity and leases, and failure
// detection.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <cctype>

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

std::string SecondsText(Seconds s) { return absl::StrFormat("%g s", s.count()); }

// Lower-case name of a stop reason, for events: "fenced", "shutdown", ...
std::string StopReasonWord(v1::StopReason reason) {
  std::string name = v1::StopReason_Name(reason);
  constexpr std::string_view kPrefix = "STOP_REASON_";
  if (name.starts_with(kPrefix)) name.erase(0, kPrefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

}  // namespace

bool MasterState::PlacedOn(JobId job, int attempt, int rank,
                           const std::string& node) {
  auto launch = launches_.find({job, attempt});
  if (launch != launches_.end() &&
      rank < static_cast<int>(launch->second.parts.size())) {
    auto n = nodes_.find(launch->second.parts[rank].node_id);
    if (n != nodes_.end() && n->second.record.name == node) return true;
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
  std::lock_guard<std::mutex> lock(mu_);
  const Seconds now = clock_->NowUnixSeconds();
  const std::string token_hash = HashToken(req.agent_token());
  const std::string name = req.name();
  for (const auto& [id, info] : nodes_) {
    if (info.record.name != name) continue;
    // A node known up before a restart may still be live until the
    // adoption window ends.
    const bool live =
        info.up || (info.record.state == NodeState::kUp &&
                    clock_->NowMonotonic() < adopt_deadline_);
    if (live && !info.record.agent_token_hash.empty() &&
        info.record.agent_token_hash != token_hash) {
      return absl::AlreadyExistsError(absl::StrCat(
          "name: node ", name,
          " is held by a live agent with another identity (its state "
          "directory's agent token); stop that agent or give this one "
          "another --name (a node silent for the node timeout, ",
          SecondsText(options_.node_timeout), ", is released)"));
    }
  }
  bool known = false;
  for (auto& [id, info] : nodes_) {
    if (info.record.name != name) continue;
    known = true;
    RETURN_IF_ERROR(CheckReportOrder(info, req.boot_id(), req.report_seq()));
  }
  if (!known && static_cast<int>(nodes_.size()) >= options_.max_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "name: the master knows ", nodes_.size(),
        " nodes, its --max-nodes; a new node name is refused"));
  }
  NodeRecord record{0,  name, req.address(), req.gpus(), NodeState::kUp, now};
  record.agent_token_hash = token_hash;
  ASSIGN_OR_RETURN(record.id, store_->UpsertNode(record));
  NodeInfo& info = nodes_[record.id];
  // A drain outlives registrations (UpsertNode leaves it as stored).
  record.drained = info.record.drained;
  record.drain_reason = info.record.drain_reason;
  info.record = record;
  info.log_address = req.log_address();
  info.report_boot_id = req.boot_id();
  info.report_seq = req.report_seq();
  info.last_heard = clock_->NowMonotonic();
  info.up = true;
  info.leaving = false;
  info.session = ++last_session_;
  SetOrphans(info, {});
  TouchNode(record.id);  // a new session: its desired state is sent anew
  v1::RegisterResponse resp;
  CheckedReports reports = CheckReports(req.tasks(), record, now, &resp);
  // After a master restart: the tasks of jobs that were running become
  // their launches' parts again (no new start), before anything else.
  for (const v1::TaskStatus* task : reports.valid) {
    AdoptOrOrphan(record.id, *task, now);
  }
  RETURN_IF_ERROR(Rebuild(now));
  Reconcile(record.id, reports, now, &resp);
  ReleaseDeferred(now);
  pass_wanted_ = true;
  RETURN_IF_ERROR(Commit());
  resp.set_node_id(record.id);
  resp.set_heartbeat_interval_seconds(HeartbeatInterval().count());
  resp.set_session(info.session);
  resp.set_lease_seconds(lease.count());
  *resp.mutable_desired() = DesiredStateOf(record.id);
  return resp;
}

void MasterState::AdoptOrOrphan(int64_t node_id, const v1::TaskStatus& task,
                                Seconds now) {
  const JobId job = task.task().job_id();
  const int attempt = task.task().attempt();
  const int rank = task.task().rank();
  const LaunchKey key{job, attempt};
  const NodeInfo& info = nodes_.at(node_id);
  auto rec = records_.find(job);
  if (!adopting_.contains(job) || rec == records_.end() ||
      rec->second.attempt != attempt || rank < 0 ||
      rank >= static_cast<int>(rec->second.nodes.size()) ||
      rec->second.nodes[rank] != info.record.name) {
    return;  // not a part of a launch being re-adopted: Reconcile decides
  }
  Launch& launch = launches_[key];
  if (launch.parts.empty()) {
    launch.job = job;
    launch.attempt = attempt;
    launch.parts.resize(rec->second.nodes.size());
    // Its tasks run: it is active and was durable before the restart.
    launch.SetPhase(Phase::kActive);
    launch.durable = true;
  }
  Part& part = launch.parts[rank];
  if (part.node_id != 0) return;
  // Ended tasks are adopted as running too; Reconcile then accounts for
  // their end.
  part.node_id = node_id;
  part.local_gpus.assign(task.gpu_indexes().begin(), task.gpu_indexes().end());
  part.running = true;
  part.start_time = task.has_start_time() ? Seconds{task.start_time()} : now;
  TouchNode(node_id);
}

absl::StatusOr<v1::HeartbeatResponse> MasterState::Heartbeat(
    const v1::HeartbeatRequest& req) {
  RETURN_IF_ERROR(ValidateHeartbeatRequest(req));
  std::lock_guard<std::mutex> lock(mu_);
  auto node = nodes_.find(req.node_id());
  if (node == nodes_.end() || !node->second.up ||
      node->second.session != req.session() || req.session() == 0) {
    return absl::NotFoundError(absl::StrCat(
        "node_id: node ", req.node_id(), " (session ", req.session(),
        ") is not registered with this master; register again"));
  }
  NodeInfo& info = node->second;
  RETURN_IF_ERROR(CheckReportOrder(info, req.boot_id(), req.report_seq()));
  const Seconds now = clock_->NowUnixSeconds();
  info.record.last_heartbeat = now;
  info.last_heard = clock_->NowMonotonic();
  // A restarted agent heartbeats before it would register again, with the
  // new port of its log service.
  if (!req.log_address().empty()) info.log_address = req.log_address();
  v1::HeartbeatResponse resp;
  CheckedReports reports = CheckReports(req.tasks(), info.record, now, &resp);
  Reconcile(req.node_id(), reports, now, &resp);
  if (req.leaving() && !info.leaving) {
    // No new launch there; what runs there is preempted (Rebuild), so the
    // agent stops it and the jobs resume elsewhere.
    info.leaving = true;
    RETURN_IF_ERROR(Rebuild(now));
    pass_wanted_ = true;
  }
  if (info.leaving && req.tasks_size() == 0 && info.orphans.empty()) {
    // Gone cleanly: nothing of it runs any more, and every end it had was
    // acknowledged (so the agent, told so, stops reporting).
    LoseNode(req.node_id(), now, "its agent shut down");
    info.up = false;
    info.record.state = NodeState::kDown;
    RETURN_IF_ERROR(store_->UpsertNode(info.record).status());
    RETURN_IF_ERROR(Rebuild(now));
  }
  ReleaseDeferred(now);
  RETURN_IF_ERROR(Commit());  // acknowledgements only once durable
  *resp.mutable_desired() = DesiredStateOf(req.node_id());
  return resp;
}

absl::Status MasterState::CheckReportOrder(NodeInfo& info,
                                           const std::string& boot_id,
                                           uint64_t seq) {
  if (boot_id.empty()) return absl::OkStatus();
  if (boot_id == info.report_boot_id && seq <= info.report_seq) {
    return absl::AbortedError(absl::StrCat(
        "report_seq: a newer report of this agent was applied (", seq,
        " <= ", info.report_seq, "): this one is stale"));
  }
  info.report_boot_id = boot_id;
  info.report_seq = seq;
  return absl::OkStatus();
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
  std::vector<std::pair<LaunchKey, int>> gone;
  for (const auto& [key, launch] : launches_) {
    if (launch.phase == Phase::kDeferred) continue;
    for (size_t rank = 0; rank < launch.parts.size(); ++rank) {
      const Part& part = launch.parts[rank];
      if (part.node_id != node_id || part.ended ||
          reports.present.contains(
              {key.first, key.second, static_cast<int>(rank)})) {
        continue;
      }
      if (part.running || launch.phase == Phase::kStopping) {
        gone.push_back({key, static_cast<int>(rank)});
      }
    }
  }
  for (const auto& [key, rank] : gone) {
    auto it = launches_.find(key);
    if (it == launches_.end()) continue;  // erased by an earlier one
    v1::TaskStatus lost;
    lost.mutable_task()->set_job_id(key.first);
    lost.mutable_task()->set_attempt(key.second);
    lost.mutable_task()->set_rank(rank);
    lost.set_state(v1::TASK_STATE_PREEMPTED);
    if (it->second.parts[rank].running) lost.set_end_time(now.count());
    google::protobuf::RepeatedPtrField<v1::TaskRef> ignored;
    HandleTask(node_id, lost, now, &ignored);
  }
  // Live tasks no launch part names: not in the desired state, so the
  // agent stops them; their GPUs are busy until they end.
  NodeInfo& info = nodes_.at(node_id);
  const size_t orphans_before = info.orphans.size();
  std::map<TaskKey, std::vector<int>> orphans;
  for (const v1::TaskStatus* task : reports.valid) {
    if (Ended(*task)) continue;
    const LaunchKey key{task->task().job_id(), task->task().attempt()};
    const int rank = task->task().rank();
    auto it = launches_.find(key);
    const bool part_of_launch =
        it != launches_.end() && it->second.phase != Phase::kDeferred &&
        rank < static_cast<int>(it->second.parts.size()) &&
        it->second.parts[rank].node_id == node_id &&
        !it->second.parts[rank].ended;
    if (!part_of_launch) {
      orphans[{key.first, key.second, rank}].assign(
          task->gpu_indexes().begin(), task->gpu_indexes().end());
    }
  }
  if (orphans.size() != orphans_before) pass_wanted_ = true;
  SetOrphans(info, std::move(orphans));
  FinishRestartCancels(now);
}

void MasterState::SetOrphans(NodeInfo& info,
                             std::map<TaskKey, std::vector<int>> orphans) {
  for (const auto& [task, gpus] : info.orphans) {
    auto count = orphans_by_job_.find(std::get<0>(task));
    if (count != orphans_by_job_.end() && --count->second <= 0) {
      orphans_by_job_.erase(count);
    }
  }
  info.orphans = std::move(orphans);
  for (const auto& [task, gpus] : info.orphans) {
    ++orphans_by_job_[std::get<0>(task)];
  }
}

void MasterState::FinishRestartCancels(Seconds now) {
  for (auto it = cancelling_after_restart_.begin();
       it != cancelling_after_restart_.end();) {
    for (const auto& [id, info] : nodes_) {
      if (info.up) it->second.erase(info.record.name);
    }
    auto rec = records_.find(it->first);
    const bool heard_all =
        it->second.empty() || clock_->NowMonotonic() >= adopt_deadline_;
    if (rec == records_.end() || IsFinal(rec->second.state)) {
      it = cancelling_after_restart_.erase(it);
    } else if (heard_all && !orphans_by_job_.contains(it->first)) {
      const bool timeout = rec->second.timeout_requested;
      Finalize(rec->second,
               timeout ? JobRecordState::kTimeout : JobRecordState::kCancelled,
               now, std::nullopt,
               timeout ? "its tasks stopped (at its time limit, before a "
                         "master restart)"
                       : "its tasks stopped (cancelled before a master "
                         "restart)");
      it = cancelling_after_restart_.erase(it);
    } else {
      ++it;
    }
  }
}

void MasterState::HandleTask(
    int64_t node_id, const v1::TaskStatus& task, Seconds now,
    google::protobuf::RepeatedPtrField<v1::TaskRef>* acks) {
  const LaunchKey key{task.task().job_id(), task.task().attempt()};
  const int rank = task.task().rank();
  const bool ended = Ended(task);
  auto it = launches_.find(key);
  const bool known = it != launches_.end() &&
                     it->second.phase != Phase::kDeferred &&
                     rank < static_cast<int>(it->second.parts.size()) &&
                     it->second.parts[rank].node_id == node_id;
  if (!known) {
    // An orphan (Reconcile lists the live ones); an ended one is done with,
    // once it has said whether a job whose launch a restart forgot ended.
    if (ended) {
      if (it == launches_.end()) OwnEndAfterRestart(node_id, task, now);
      *acks->Add() = task.task();
    }
    return;
  }
  Launch& launch = it->second;
  Part& part = launch.parts[rank];
  if (part.ended) {
    if (ended) *acks->Add() = task.task();
    return;
  }
  if (!ended) {
    // A long task's profile, read once its recording stopped (repeated in
    // every report: kept only if better).
    if (task.has_profile()) OnProfile(launch, task.profile(), now);
    if ((task.state() == v1::TASK_STATE_RUNNING ||
         task.state() == v1::TASK_STATE_EXITING) &&
        !part.running) {
      part.running = true;
      part.start_time =
          task.has_start_time() ? Seconds{task.start_time()} : now;
    }
    MaybeMarkRunning(launch, now);
    return;
  }
  // A run shorter than the heartbeat interval: its first report already
  // says it ended. It did run (it reports a start, and it is not a failed
  // spawn), so it is marked running at that start first, with its
  // "started"/"resumed" event, and its end is processed after.
  const bool start_failed = task.state() == v1::TASK_STATE_EXITED &&
                            task.has_exit_code() &&
                            task.exit_code() == kStartFailedExitCode;
  if (!part.running && task.has_start_time() && !start_failed) {
    part.running = true;
    part.start_time = Seconds{task.start_time()};
    MaybeMarkRunning(launch, now);
  }
  part.ended = true;
  // The agent reports EXITED (not PREEMPTED) only for a task whose end came
  // before any stop it sent; a start that failed is no end of the job's.
  part.own_end = task.state() == v1::TASK_STATE_EXITED &&
                 task.has_exit_code() && !start_failed;
  if (task.has_exit_code()) part.exit_code = task.exit_code();
  if (task.has_end_time()) part.end_time = Seconds{task.end_time()};
  *acks->Add() = task.task();
  Touch(launch);
  pass_wanted_ = true;  // its GPUs are free
  if (task.has_profile()) OnProfile(launch, task.profile(), now);
  OnPartEnded(launch, task, now);  // may erase `launch`
}

void MasterState::OnProfile(Launch& launch,
                            const v1::TrafficProfile& reported, Seconds now) {
  const JobId job = launch.job;
  auto it = records_.find(job);
  if (it == records_.end()) return;
  JobRecord& rec = it->second;
  JobProfile measured;
  measured.periodic = reported.periodic();
  measured.measured_job_id = job;
  auto finite = [](double v) { return std::isfinite(v) && v >= 0; };
  if (measured.periodic) {
    // An agent's figures: a skew outside [0, 1] or a non-finite number
    // would mislead placement, so the profile is not kept.
    if (!reported.has_tensor_skew() || !finite(reported.tensor_skew()) ||
        reported.tensor_skew() > 1) {
      return;
    }
    measured.tensor_skew = reported.tensor_skew();
    if (reported.has_iteration_s() && finite(reported.iteration_s())) {
      measured.iteration_s = reported.iteration_s();
    }
    if (reported.has_bytes_per_iteration() &&
        finite(reported.bytes_per_iteration())) {
      measured.bytes_per_iteration = reported.bytes_per_iteration();
    }
    if (reported.has_messages_per_iteration() &&
        finite(reported.messages_per_iteration())) {
      measured.messages_per_iteration = reported.messages_per_iteration();
    }
  }
  RecordPlacementRun(launch, measured, now);
  // An inherited profile gives way to the job's own; the job's own only to
  // a better one (another rank: the worker of a parameter-server job).
  if (rec.profile && rec.profile->measured_job_id == job &&
      !BetterProfile(measured, *rec.profile)) {
    return;
  }
  const std::optional<double> old_skew = PlacementSkew(rec.profile);
  rec.profile = measured;
  absl::Status saved = store_->SaveProfile(job, JobSignature(rec.spec), measured);
  AddEvent(job, now, "profiled",
           measured.periodic
               ? absl::StrFormat("tensor skew %.4f, iteration %.4f s, %.0f "
                                 "bytes per iteration%s",
                                 *measured.tensor_skew,
                                 measured.iteration_s.value_or(0),
                                 measured.bytes_per_iteration.value_or(0),
                                 saved.ok() ? "" : " (not stored)")
               : absl::StrCat("not periodic: no skew",
                              saved.ok() ? "" : " (not stored)"));
  const std::optional<double> skew = PlacementSkew(rec.profile);
  if (skew == old_skew) return;
  if (const Job* current = scheduler_->Find(job); current != nullptr) {
    Job updated = *current;
    updated.set_measured_skew(skew);
    // Found just above: Replace cannot fail.
    ReplaceSchedulerJob(updated, now).IgnoreError();
    pass_wanted_ = true;
  }
}

void MasterState::MaybeMarkRunning(Launch& launch, Seconds now) {
  if (launch.phase != Phase::kActive || launch.all_running) return;
  // The job runs once its last part does: the latest reported start.
  std::optional<Seconds> start;
  for (const Part& part : launch.parts) {
    if (!part.running) return;
    if (part.start_time && (!start || *part.start_time > *start)) {
      start = part.start_time;
    }
  }
  launch.all_running = true;
  auto rec = records_.find(launch.job);
  if (rec == records_.end()) return;
  if (rec->second.failed_starts != 0) {
    rec->second.failed_starts = 0;  // this launch ran: the streak is over
    MarkDirty(launch.job);
  }
  if (!start) start = now;
  // Every launch that runs says so, with its attempt ("started attempt 1
  // on ...", "resumed attempt 2 on ..."), also one whose record was left
  // running by the launch before it: an event list never shows an attempt
  // preempted or ended that it did not show start.
  const bool ran_before = rec->second.first_start_time.has_value();
  if (rec->second.state == JobRecordState::kRunning) {
    // Being re-adopted after a master restart: "adopted" says it.
    if (adopting_.contains(launch.job)) return;
    AddEvent(launch.job, std::min(*start, now),
             ran_before ? "resumed" : "started", Describe(launch));
    MarkDirty(launch.job);
    return;
  }
  const Job* job = scheduler_->Find(launch.job);
  if (job != nullptr && job->running()) {
    // Executed time counts from the reported start, never before the
    // decision nor after now (clocks differ).
    const Seconds shifted =
        std::max(job->run_start(), std::min(*start, now));
    if (shifted > job->run_start()) {
      // The job was just found running in the scheduler: Replace cannot
      // fail.
      ReplaceSchedulerJob(ShiftRunStart(*job, shifted), now).IgnoreError();
      pass_wanted_ = true;  // its demotion instant moved
    }
    start = shifted;
  }
  rec->second.state = JobRecordState::kRunning;
  if (!rec->second.first_start_time) rec->second.first_start_time = *start;
  // "resumed": it ran before this launch (and resumes from its checkpoint).
  AddEvent(launch.job, *start, ran_before ? "resumed" : "started",
           Describe(launch));
  MarkDirty(launch.job);
}

void MasterState::AccountStop(const Launch& launch) {
  if (!launch.all_running || launch.stop_reason != v1::STOP_REASON_PREEMPT) {
    return;
  }
  std::optional<Seconds> end;
  for (const Part& part : launch.parts) {
    if (part.end_time && (!end || *part.end_time > *end)) end = part.end_time;
  }
  const Job* job = scheduler_->Find(launch.job);
  // Only while the scheduler still holds the stop it decided (not started
  // again, promoted or rebuilt since).
  if (!end || job == nullptr || !job->waiting() ||
      job->last_stop() != launch.stop_decided) {
    return;
  }
  const Seconds now = clock_->NowUnixSeconds();
  const Seconds at = std::min(*end, now);
  if (at <= job->last_stop()) return;
  // Found waiting in the scheduler just above: Replace cannot fail.
  ReplaceSchedulerJob(ShiftStop(*job, at), now).IgnoreError();
  pass_wanted_ = true;
}

void MasterState::OnStartFailed(Launch& launch, const v1::TaskStatus& task,
                                Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  JobRecord& rec = records_.at(launch.job);
  const int failures = ++rec.failed_starts;
  MarkDirty(launch.job);
  const int rank = task.task().rank();
  auto node = nodes_.find(launch.parts[rank].node_id);
  const std::string where = absl::StrCat(
      "rank ", rank, " on ",
      node == nodes_.end() ? absl::StrCat("node ", launch.parts[rank].node_id)
                           : node->second.record.name,
      " failed to start (exit code ", kStartFailedExitCode, "; `tiresias logs ",
      launch.job, " --rank ", rank, " --attempt ", launch.attempt,
      "` says why)");
  const bool give_up = failures >= kMaxFailedStarts;
  StopLaunch(launch,
             give_up ? v1::STOP_REASON_CANCEL : v1::STOP_REASON_PREEMPT);
  if (give_up) {
    // Remove only fails for a job the scheduler does not hold: then there
    // is nothing to remove.
    scheduler_->Remove(launch.job, now, cluster()).IgnoreError();
    Finalize(rec, JobRecordState::kFailed, now, kStartFailedExitCode,
             absl::StrCat(where, "; ", failures,
                          " failed starts in a row, giving up"));
  } else {
    const Job* job = scheduler_->Find(launch.job);
    if (job != nullptr && job->running()) {
      cluster().Release(job->id(), job->gpus());
      ReplaceSchedulerJob(UndoRun(*job, now), now).IgnoreError();  // found
    }
    // A job that ran before counts its restart when it starts again.
    if (!rec.first_start_time) ++rec.restarts;
    rec.state = rec.first_start_time ? JobRecordState::kPreempted
                                     : JobRecordState::kPending;
    AddEvent(launch.job, now, "start_failed",
             absl::StrCat(where, "; stopping the other parts, back to waiting (",
                          failures, " of ", kMaxFailedStarts,
                          " failed starts in a row)"));
    MarkDirty(launch.job);
    pass_wanted_ = true;
  }
  if (launch.AllEnded()) launches_.erase(key);
}

void MasterState::OnSystemStop(Launch& launch, int rank, Seconds end,
                               Seconds now, const std::string& why) {
  JobRecord& rec = records_.at(launch.job);
  const Job* job = scheduler_->Find(launch.job);
  const bool ran = launch.all_running;
  if (job != nullptr && job->running()) {
    cluster().Release(job->id(), job->gpus());
    const Seconds at = std::clamp(end, job->run_start(), now);
    // Counted up to the reported end if it ran; not at all if it never
    // fully started. The job was just found running: Replace cannot fail.
    ReplaceSchedulerJob(ran ? StopRunAt(*job, at) : UndoRun(*job, now), now)
        .IgnoreError();
    launch.stop_decided = ran ? at : now;
  } else {
    launch.stop_decided = now;
  }
  StopLaunch(launch, v1::STOP_REASON_PREEMPT);
  if (ran) {
    rec.state = JobRecordState::kPreempted;
    ++rec.preemptions;
    launch.preemption_counted = true;
  } else {
    rec.state = rec.first_start_time ? JobRecordState::kPreempted
                                     : JobRecordState::kPending;
  }
  AddEvent(launch.job, now, "preempted",
           absl::StrCat(Describe(launch),
                        ran ? "" : " (while starting: it had not run yet)",
                        "; ", rank >= 0 ? absl::StrCat("rank ", rank, " ") : "",
                        "stopped by the system: ", why));
  MarkDirty(launch.job);
  pass_wanted_ = true;
}

void MasterState::ClassifyEndedGang(Launch& launch, Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  JobRecord& rec = records_.at(launch.job);
  const auto [rank, code] = *launch.first_failure;
  const Job* job = scheduler_->Find(launch.job);
  if (launch.system_stopped) {
    // Its failure followed a rank stopped by the system: a preemption.
    std::optional<Seconds> end;
    for (const Part& part : launch.parts) {
      if (part.end_time && (!end || *part.end_time > *end)) end = part.end_time;
    }
    if (job != nullptr && job->running()) {
      cluster().Release(job->id(), job->gpus());
      const Seconds at = std::clamp(end.value_or(now), job->run_start(), now);
      // Found running just above: Replace cannot fail.
      ReplaceSchedulerJob(StopRunAt(*job, at), now).IgnoreError();
    }
    rec.state = JobRecordState::kPreempted;
    ++rec.preemptions;
    AddEvent(launch.job, now, "preempted",
             absl::StrCat(Describe(launch), "; a rank was stopped by the "
                          "system and rank ", rank, " then exited with code ",
                          code));
    MarkDirty(launch.job);
    pass_wanted_ = true;
  } else {
    // Remove only fails for a job the scheduler does not hold.
    scheduler_->Remove(launch.job, now, cluster()).IgnoreError();
    Finalize(rec, JobRecordState::kFailed, now, code,
             absl::StrCat("rank ", rank, " exit code ", code));
  }
  launches_.erase(key);
}

bool MasterState::AnyLiveLaunch(JobId job) const {
  for (auto it = launches_.lower_bound({job, 0});
       it != launches_.end() && it->first.first == job; ++it) {
    if (it->second.phase != Phase::kDeferred && !it->second.AllEnded()) {
      return true;
    }
  }
  return false;
}

void MasterState::MaybeFinishCancel(JobId job, Seconds now,
                                    const std::string& detail) {
  auto rec = records_.find(job);
  const Job* scheduled = scheduler_->Find(job);
  if (rec == records_.end() || IsFinal(rec->second.state) ||
      (scheduled != nullptr && !scheduled->finished()) || AnyLiveLaunch(job)) {
    return;  // still scheduled (not cancelled), or a task still runs
  }
  Finalize(rec->second,
           rec->second.timeout_requested ? JobRecordState::kTimeout
                                         : JobRecordState::kCancelled,
           now, std::nullopt, detail);
}

void MasterState::OnPartEnded(Launch& launch, const v1::TaskStatus& task,
                              Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  auto rec_it = records_.find(launch.job);
  // A rank ended by a system stop (its agent's shutdown, a fence, a lost
  // status), not by our own stop: a gang waiting to be classified counts
  // it (ClassifyEndedGang).
  const bool system_stop =
      (task.state() == v1::TASK_STATE_PREEMPTED &&
       task.stop_reason() != v1::STOP_REASON_PREEMPT &&
       task.stop_reason() != v1::STOP_REASON_CANCEL &&
       task.stop_reason() != v1::STOP_REASON_ORPHAN) ||
      (task.state() == v1::TASK_STATE_EXITED && !task.has_exit_code());
  if (system_stop) launch.system_stopped = true;
  if (launch.first_failure && rec_it != records_.end() &&
      !IsFinal(rec_it->second.state)) {
    if (launch.AllEnded()) ClassifyEndedGang(launch, now);  // erases it
    return;
  }
  if (rec_it != records_.end() && !IsFinal(rec_it->second.state) &&
      !adopting_.contains(launch.job) && launch.phase == Phase::kStopping &&
      launch.AllEnded() &&
      std::all_of(launch.parts.begin(), launch.parts.end(),
                  [](const Part& part) { return part.own_end; })) {
    OnOwnEndWhileStopping(launch, now);  // erases it
    return;
  }
  if (rec_it == records_.end() || IsFinal(rec_it->second.state) ||
      adopting_.contains(launch.job) || launch.phase == Phase::kStopping) {
    if (launch.AllEnded()) {
      AccountStop(launch);
      const bool cancelling = launch.stop_reason == v1::STOP_REASON_CANCEL;
      launches_.erase(key);
      if (cancelling) MaybeFinishCancel(key.first, now, "its tasks stopped");
    }
    return;
  }
  JobRecord& rec = rec_it->second;
  const int rank = task.task().rank();
  const int code = task.has_exit_code() ? task.exit_code() : -1;
  if (task.state() == v1::TASK_STATE_EXITED && code == 0) {
    if (!launch.AllEnded()) return;
    // Accounted up to the latest reported end (clamped to its run).
    Seconds end = now;
    const Job* job = scheduler_->Find(launch.job);
    std::optional<Seconds> reported;
    for (const Part& part : launch.parts) {
      if (part.end_time && (!reported || *part.end_time > *reported)) {
        reported = part.end_time;
      }
    }
    if (reported && job != nullptr && job->running()) {
      end = std::max(job->run_start(), std::min(*reported, now));
    }
    // Finish only fails for a job the scheduler does not run: then it has
    // nothing to free.
    scheduler_->Finish(launch.job, end, cluster()).IgnoreError();
    Finalize(rec, JobRecordState::kFinished, now, 0, "every task exited 0");
    launches_.erase(key);
    return;
  }
  if (task.state() == v1::TASK_STATE_EXITED && code == kStartFailedExitCode &&
      !launch.all_running) {
    OnStartFailed(launch, task, now);  // may erase `launch`
    return;
  }
  if (system_stop || task.state() == v1::TASK_STATE_PREEMPTED) {
    // Nobody here asked for this stop: the agent shut down or was fenced,
    // or the task's status was lost.
    OnSystemStop(launch, rank,
                 task.has_end_time() ? Seconds{task.end_time()} : now, now,
                 absl::StrCat(
                     task.state() == v1::TASK_STATE_EXITED
                         ? "its exit status was lost"
                     : task.stop_reason() == v1::STOP_REASON_UNSPECIFIED
                         ? "its task vanished from its agent"
                         : StopReasonWord(task.stop_reason()),
                     task.has_exit_code()
                         ? absl::StrCat(", exit code ", task.exit_code())
                         : ""));
    if (launch.AllEnded()) {
      AccountStop(launch);
      launches_.erase(key);
    }
    return;
  }
  // A non-zero exit. A gang's other ranks are stopped first: whether the
  // job failed or was preempted is decided once they have all ended.
  if (!launch.AllEnded()) {
    launch.first_failure = std::make_pair(rank, code);
    StopLaunch(launch, v1::STOP_REASON_PREEMPT);
    AddEvent(launch.job, now, "rank_failed",
             absl::StrCat("rank ", rank, " exited with code ", code,
                          "; stopping the other ranks"));
    return;
  }
  scheduler_->Remove(launch.job, now, cluster()).IgnoreError();  // as above
  Finalize(rec, JobRecordState::kFailed, now,
           task.has_exit_code() ? std::optional<int>(code) : std::nullopt,
           absl::StrCat("rank ", rank, " exit code ", code));
  StopLaunch(launch, v1::STOP_REASON_CANCEL);
  if (launch.AllEnded()) launches_.erase(key);
}

void MasterState::LoseNode(int64_t node_id, Seconds now,
                           const std::string& why) {
  NodeInfo& info = nodes_[node_id];
  for (auto it = launches_.begin(); it != launches_.end();) {
    Launch& launch = it->second;
    if (launch.phase == Phase::kDeferred) {  // nothing of it was sent
      ++it;
      continue;
    }
    bool affected = false;
    for (Part& part : launch.parts) {
      // Fenced by construction (its lease lapsed before the node timeout),
      // or gone cleanly: its task has ended.
      if (part.node_id == node_id && !part.ended) {
        part.ended = true;
        if (!part.end_time) part.end_time = now;
        affected = true;
      }
    }
    if (!affected) {
      ++it;
      continue;
    }
    launch.system_stopped = true;  // its ranks there were lost with the node
    Touch(launch);
    if (launch.first_failure) {
      auto rec = records_.find(launch.job);
      if (launch.AllEnded() && rec != records_.end() &&
          !IsFinal(rec->second.state)) {
        const LaunchKey next = std::next(it) == launches_.end()
                                   ? LaunchKey{-1, -1}
                                   : std::next(it)->first;
        ClassifyEndedGang(launch, now);  // erases it
        it = next.first < 0 ? launches_.end() : launches_.find(next);
      } else {
        ++it;
      }
      continue;
    }
    auto rec = records_.find(launch.job);
    if (!adopting_.contains(launch.job) && launch.phase == Phase::kActive &&
        rec != records_.end() && !IsFinal(rec->second.state)) {
      AddEvent(launch.job, now, "node_down",
               absl::StrCat(info.record.name, ": ", why));
      OnSystemStop(launch, -1, now, now,
                   absl::StrCat("node ", info.record.name, " lost (", why, ")"));
    }
    if (launch.AllEnded() && !adopting_.contains(launch.job)) {
      const LaunchKey key = it->first;
      const bool cancelling = launch.phase == Phase::kStopping &&
                              launch.stop_reason == v1::STOP_REASON_CANCEL;
      if (launch.phase == Phase::kStopping) AccountStop(launch);
      it = launches_.erase(it);
      if (cancelling) {
        MaybeFinishCancel(key.first, now,
                          absl::StrCat("its tasks were lost with ",
                                       info.record.name));
      }
    } else {
      ++it;
    }
  }
  SetOrphans(info, {});
  TouchNode(node_id);
  pass_wanted_ = true;
}

void MasterState::OnStall(Seconds stall) {
  if (stall <= Seconds{0}) return;
  std::lock_guard<std::mutex> lock(mu_);
  const Seconds now = clock_->NowMonotonic();
  for (auto& [id, info] : nodes_) {
    info.last_heard = std::min(info.last_heard + stall, now);
  }
  if (!adoption_closed_) adopt_deadline_ += stall;
}

absl::Status MasterState::CheckTimeouts() {
  std::lock_guard<std::mutex> lock(mu_);
  MaybeRefitPackLimit();
  const Seconds now = clock_->NowUnixSeconds();
  bool changed = false;
  for (auto& [id, info] : nodes_) {
    if (info.record.state != NodeState::kUp ||
        clock_->NowMonotonic() - info.last_heard <= options_.node_timeout) {
      continue;
    }
    if (info.up) {
      LoseNode(id, now, "silent for longer than the node timeout");
      info.up = false;
      changed = true;
    }
    info.record.state = NodeState::kDown;
    RETURN_IF_ERROR(store_->UpsertNode(info.record).status());
  }
  if (!adoption_closed_ && clock_->NowMonotonic() >= adopt_deadline_) {
    EndAdoptionWindow(now);
    changed = true;
  }
  FinishRestartCancels(now);
  EnforceTimeLimits(now);
  if (changed) {
    RETURN_IF_ERROR(Rebuild(now));
    pass_wanted_ = true;
  }
  return Commit();
}

void MasterState::EndAdoptionWindow(Seconds now) {
  adoption_closed_ = true;
  // A part whose node never reported in is fenced by now (its agent's lease
  // lapsed within the node timeout of the restart): it has ended.
  for (auto it = launches_.begin(); it != launches_.end();) {
    Launch& launch = it->second;
    for (Part& part : launch.parts) {
      if (part.node_id == 0) part.ended = true;
    }
    ++it;
  }
  for (JobId id : adopting_) {
    JobRecord& rec = records_.at(id);
    auto it = launches_.find({id, rec.attempt});
    if (it != launches_.end() && it->second.phase == Phase::kActive) {
      StopLaunch(it->second, v1::STOP_REASON_PREEMPT);
      it->second.preemption_counted = true;
    }
    rec.state = JobRecordState::kPreempted;
    rec.last_stop_time = now;
    ++rec.preemptions;
    AddEvent(id, now, "preempted",
             absl::StrCat("attempt ", rec.attempt,
                          ": not re-adopted within the node timeout after a "
                          "master restart"));
    MarkDirty(id);
    // The record was just reloaded from the store; Restore fails only on a
    // duplicate, and an adopting job is not in the scheduler.
    scheduler_->Restore(JobFromRecord(rec), now).IgnoreError();
  }
  adopting_.clear();
  // Launches whose every part has now ended are done with.
  for (auto it = launches_.begin(); it != launches_.end();) {
    if (it->second.phase != Phase::kDeferred && it->second.AllEnded()) {
      const JobId job = it->first.first;
      const bool cancelling = it->second.stop_reason == v1::STOP_REASON_CANCEL;
      it = launches_.erase(it);
      if (cancelling) MaybeFinishCancel(job, now, "its tasks stopped");
    } else {
      ++it;
    }
  }
}

}  // namespace tiresias
