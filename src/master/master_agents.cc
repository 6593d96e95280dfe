// MasterState: the agent protocol (register, heartbeat, task reports) and
// failure detection.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {
namespace {

bool Ended(const v1::TaskStatus& task) {
  return task.state() == v1::TASK_STATE_EXITED ||
         task.state() == v1::TASK_STATE_PREEMPTED;
}

// Moves the node's queued commands into `out`, stops before starts.
void Drain(std::vector<v1::Command>& queued,
           google::protobuf::RepeatedPtrField<v1::Command>* out) {
  std::stable_partition(queued.begin(), queued.end(),
                        [](const v1::Command& c) { return c.has_stop(); });
  for (v1::Command& c : queued) *out->Add() = std::move(c);
  queued.clear();
}

}  // namespace

absl::StatusOr<v1::RegisterResponse> MasterState::Register(
    const v1::RegisterRequest& req) {
  if (req.name().empty()) {
    return absl::InvalidArgumentError("name: must not be empty");
  }
  if (req.gpus() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus: expected at least 1, got ", req.gpus()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Seconds now = clock_->NowUnixSeconds();
  NodeRecord record{0, req.name(), req.address(), req.gpus(), NodeState::kUp,
                    now};
  ASSIGN_OR_RETURN(record.id, store_->UpsertNode(record));
  NodeInfo& info = nodes_[record.id];
  // A live node registering again (its agent restarted): whatever it does
  // not report again is lost.
  if (info.up) LoseNode(record.id, now, "agent re-registered");
  info.record = record;
  info.log_address = req.log_address();
  info.up = true;
  info.busy.assign(req.gpus(), LaunchKey{0, 0});
  for (const v1::TaskStatus& task : req.tasks()) {
    AdoptOrOrphan(record.id, task, now);
  }
  RETURN_IF_ERROR(Rebuild(now));
  pass_wanted_ = true;
  v1::RegisterResponse resp;
  resp.set_node_id(record.id);
  resp.set_heartbeat_interval_seconds(options_.heartbeat_interval.count());
  Drain(outbox_[record.id], resp.mutable_commands());
  RETURN_IF_ERROR(Commit());
  return resp;
}

void MasterState::AdoptOrOrphan(int64_t node_id, const v1::TaskStatus& task,
                                Seconds now) {
  const JobId job = task.task().job_id();
  const int attempt = task.task().attempt();
  const int rank = task.task().rank();
  const LaunchKey key{job, attempt};
  NodeInfo& info = nodes_[node_id];
  auto mark_busy = [&] {
    for (int gpu : task.gpu_indexes()) {
      if (gpu >= 0 && gpu < static_cast<int>(info.busy.size())) {
        info.busy[gpu] = key;
      }
    }
  };
  auto rec = records_.find(job);
  if (adopting_.contains(job) && rec->second.attempt == attempt && rank >= 0 &&
      rank < static_cast<int>(rec->second.nodes.size()) &&
      rec->second.nodes[rank] == info.record.name) {
    Launch& launch = launches_[key];
    if (launch.parts.empty()) {
      launch.job = job;
      launch.attempt = attempt;
      launch.parts.resize(rec->second.nodes.size());
    }
    Part& part = launch.parts[rank];
    if (part.node_id == 0) {
      // Ended tasks are adopted as running too; their end arrives with the
      // next heartbeat and is accounted then.
      part.node_id = node_id;
      part.local_gpus.assign(task.gpu_indexes().begin(),
                             task.gpu_indexes().end());
      part.running = true;
      part.start_time =
          task.has_start_time() ? Seconds{task.start_time()} : now;
      mark_busy();
      return;
    }
  }
  if (Ended(task)) return;  // reported again by heartbeat and acknowledged
  mark_busy();  // held until it stops
  if (orphan_stops_sent_.insert({node_id, key}).second) {
    QueueStop(node_id, job, attempt, v1::STOP_REASON_ORPHAN);
  }
}

absl::StatusOr<v1::HeartbeatResponse> MasterState::Heartbeat(
    const v1::HeartbeatRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto node = nodes_.find(req.node_id());
  if (node == nodes_.end() || !node->second.up) {
    return absl::NotFoundError(
        absl::StrCat("node_id: node ", req.node_id(),
                     " is not registered with this master; register again"));
  }
  const Seconds now = clock_->NowUnixSeconds();
  node->second.record.last_heartbeat = now;
  // A restarted agent heartbeats before it would register again, with the
  // new port of its log service.
  if (!req.log_address().empty()) node->second.log_address = req.log_address();
  v1::HeartbeatResponse resp;
  for (const v1::TaskStatus& task : req.tasks()) {
    HandleTask(req.node_id(), task, now, &resp);
  }
  ReleaseDeferred();  // GPUs freed by these reports may unblock starts
  Drain(outbox_[req.node_id()], resp.mutable_commands());
  RETURN_IF_ERROR(Commit());  // acknowledgements only once durable
  return resp;
}

void MasterState::HandleTask(int64_t node_id, const v1::TaskStatus& task,
                             Seconds now, v1::HeartbeatResponse* resp) {
  const LaunchKey key{task.task().job_id(), task.task().attempt()};
  const int rank = task.task().rank();
  const bool ended = Ended(task);
  auto it = launches_.find(key);
  const bool known = it != launches_.end() && rank >= 0 &&
                     rank < static_cast<int>(it->second.parts.size()) &&
                     it->second.parts[rank].node_id == node_id;
  if (!known) {
    if (ended) {
      *resp->add_acknowledged() = task.task();
      FreeBusy(node_id, key);
      orphan_stops_sent_.erase({node_id, key});
    } else if (orphan_stops_sent_.insert({node_id, key}).second) {
      QueueStop(node_id, key.first, key.second, v1::STOP_REASON_ORPHAN);
    }
    return;
  }
  Launch& launch = it->second;
  Part& part = launch.parts[rank];
  if (part.ended) {
    if (ended) *resp->add_acknowledged() = task.task();
    return;
  }
  if (!ended) {
    if (task.state() == v1::TASK_STATE_RUNNING && !part.running) {
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
  if (task.has_exit_code()) part.exit_code = task.exit_code();
  if (task.has_end_time()) part.end_time = Seconds{task.end_time()};
  *resp->add_acknowledged() = task.task();
  FreeBusy(node_id, key);
  OnPartEnded(launch, task, now);  // may erase `launch`
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
  if (rec->second.state == JobRecordState::kRunning) return;
  if (!start) start = now;
  const Job* job = scheduler_->Find(launch.job);
  if (job != nullptr && job->running()) {
    // Executed time counts from the reported start, never before the
    // decision nor after now (clocks differ).
    const Seconds shifted =
        std::max(job->run_start(), std::min(*start, now));
    if (shifted > job->run_start()) {
      (void)ReplaceSchedulerJob(ShiftRunStart(*job, shifted), now);
      pass_wanted_ = true;  // its demotion instant moved
    }
    start = shifted;
  }
  rec->second.state = JobRecordState::kRunning;
  if (!rec->second.first_start_time) rec->second.first_start_time = *start;
  AddEvent(launch.job, *start, rec->second.restarts > 0 ? "resumed" : "started",
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
  (void)ReplaceSchedulerJob(ShiftStop(*job, at), now);
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
      " failed to start (exit code ", kStartFailedExitCode, ")");
  const bool give_up = failures >= kMaxFailedStarts;
  launch.phase = Phase::kStopping;
  if (!give_up) launch.stop_reason = v1::STOP_REASON_PREEMPT;
  for (const Part& part : launch.parts) {
    if (!part.ended) {
      QueueStop(part.node_id, launch.job, launch.attempt,
                give_up ? v1::STOP_REASON_CANCEL : v1::STOP_REASON_PREEMPT);
    }
  }
  if (give_up) {
    (void)scheduler_->Remove(launch.job, now, cluster());
    Finalize(rec, JobRecordState::kFailed, now, kStartFailedExitCode,
             absl::StrCat(where, "; ", failures,
                          " failed starts in a row, giving up"));
  } else {
    const Job* job = scheduler_->Find(launch.job);
    if (job != nullptr && job->running()) {
      cluster().Release(job->id(), job->gpus());
      (void)ReplaceSchedulerJob(UndoRun(*job, now), now);
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

void MasterState::OnPartEnded(Launch& launch, const v1::TaskStatus& task,
                              Seconds now) {
  const LaunchKey key{launch.job, launch.attempt};
  auto rec_it = records_.find(launch.job);
  if (rec_it == records_.end() || IsFinal(rec_it->second.state) ||
      adopting_.contains(launch.job) || launch.phase == Phase::kStopping) {
    if (launch.AllEnded()) {
      AccountStop(launch);
      if (rec_it != records_.end() && !IsFinal(rec_it->second.state) &&
          launch.stop_reason == v1::STOP_REASON_CANCEL) {
        Finalize(rec_it->second, JobRecordState::kCancelled, now,
                 std::nullopt, "its tasks stopped");
      }
      launches_.erase(key);
    }
    return;
  }
  JobRecord& rec = rec_it->second;
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
    (void)scheduler_->Finish(launch.job, end, cluster());
    Finalize(rec, JobRecordState::kFinished, now, 0, "every task exited 0");
    launches_.erase(key);
    return;
  }
  if (task.state() == v1::TASK_STATE_EXITED && code == kStartFailedExitCode &&
      !launch.all_running) {
    OnStartFailed(launch, task, now);  // may erase `launch`
    return;
  }
  // A non-zero exit, or a stop nobody asked for: the job failed.
  (void)scheduler_->Remove(launch.job, now, cluster());
  Finalize(rec, JobRecordState::kFailed, now,
           task.has_exit_code() ? std::optional<int>(code) : std::nullopt,
           absl::StrCat("rank ", task.task().rank(), " exit code ", code));
  launch.phase = Phase::kStopping;
  for (const Part& part : launch.parts) {
    if (!part.ended) {
      QueueStop(part.node_id, launch.job, launch.attempt,
                v1::STOP_REASON_CANCEL);
    }
  }
  if (launch.AllEnded()) launches_.erase(key);
}

void MasterState::LoseNode(int64_t node_id, Seconds now,
                           const std::string& why) {
  NodeInfo& info = nodes_[node_id];
  for (auto it = launches_.begin(); it != launches_.end();) {
    Launch& launch = it->second;
    bool affected = false;
    for (Part& part : launch.parts) {
      if (part.node_id == node_id && !part.ended) {
        part.ended = true;
        affected = true;
      }
    }
    auto rec = records_.find(launch.job);
    if (affected && !adopting_.contains(launch.job) &&
        launch.phase != Phase::kStopping && rec != records_.end() &&
        !IsFinal(rec->second.state)) {
      AddEvent(launch.job, now, "node_down",
               absl::StrCat(info.record.name, ": ", why));
      if (launch.phase == Phase::kActive) {
        rec->second.state = JobRecordState::kPreempted;
        ++rec->second.preemptions;
        AddEvent(launch.job, now, "preempted", Describe(launch));
        MarkDirty(launch.job);
      }
      launch.phase = Phase::kStopping;
      launch.stop_reason = v1::STOP_REASON_PREEMPT;
      for (Part& part : launch.parts) {
        if (!part.ended) {
          QueueStop(part.node_id, launch.job, launch.attempt,
                    v1::STOP_REASON_PREEMPT);
        }
      }
    }
    // A job being cancelled whose last tasks were on this node ends now:
    // no agent will report them.
    if (affected && launch.AllEnded() && launch.phase == Phase::kStopping &&
        launch.stop_reason == v1::STOP_REASON_CANCEL &&
        rec != records_.end() && !IsFinal(rec->second.state)) {
      Finalize(rec->second, JobRecordState::kCancelled, now, std::nullopt,
               absl::StrCat("its tasks were lost with ", info.record.name));
    }
    it = launch.AllEnded() && !adopting_.contains(launch.job)
             ? launches_.erase(it)
             : std::next(it);
  }
  info.busy.assign(info.busy.size(), LaunchKey{0, 0});
  outbox_.erase(node_id);
  std::erase_if(orphan_stops_sent_,
                [&](const auto& entry) { return entry.first == node_id; });
  pass_wanted_ = true;
}

absl::Status MasterState::CheckTimeouts() {
  std::lock_guard<std::mutex> lock(mu_);
  const Seconds now = clock_->NowUnixSeconds();
  bool changed = false;
  for (auto& [id, info] : nodes_) {
    if (info.record.state != NodeState::kUp ||
        now - info.record.last_heartbeat <= options_.node_timeout) {
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
  if (!adopting_.empty() && now >= adopt_deadline_) {
    EndAdoptionWindow(now);
    changed = true;
  }
  if (changed) {
    RETURN_IF_ERROR(Rebuild(now));
    pass_wanted_ = true;
  }
  return Commit();
}

void MasterState::EndAdoptionWindow(Seconds now) {
  for (JobId id : adopting_) {
    JobRecord& rec = records_.at(id);
    auto it = launches_.find({id, rec.attempt});
    if (it != launches_.end()) {
      Launch& launch = it->second;
      launch.phase = Phase::kStopping;
      launch.stop_reason = v1::STOP_REASON_PREEMPT;
      for (Part& part : launch.parts) {
        if (part.node_id == 0) part.ended = true;
        if (!part.ended) {
          QueueStop(part.node_id, id, rec.attempt, v1::STOP_REASON_PREEMPT);
        }
      }
      if (launch.AllEnded()) launches_.erase(it);
    }
    rec.state = JobRecordState::kPreempted;
    rec.last_stop_time = now;
    ++rec.preemptions;
    AddEvent(id, now, "preempted",
             "not re-adopted within the node timeout after a master restart");
    MarkDirty(id);
    (void)scheduler_->Restore(JobFromRecord(rec), now);
  }
  adopting_.clear();
}

}  // namespace tiresias
