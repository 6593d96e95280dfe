// MasterState: scheduling passes and turning decisions into agent commands.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::RunPass() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto began = std::chrono::steady_clock::now();
  const Seconds now = clock_->NowUnixSeconds();
  if (cluster_) {
    Decisions decisions = scheduler_->Schedule(now, *cluster_);
    // Every job the pass touched: its record follows at the Commit below
    // (PreemptLaunch does not mark a launch that never started).
    for (JobId id : decisions.requeued) MarkDirty(id);
    for (JobId id : decisions.preempted) MarkDirty(id);
    for (const StartDecision& start : decisions.started) MarkDirty(start.job);
    for (JobId id : decisions.preempted) PreemptLaunch(id, now);
    for (const StartDecision& start : decisions.started) {
      StartLaunch(start, now);
    }
  }
  ReleaseDeferred();
  absl::Status committed = Commit();
  ++passes_;
  pass_seconds_ += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - began)
                       .count();
  return committed;
}

void MasterState::PreemptLaunch(JobId id, Seconds now) {
  auto rec = records_.find(id);
  Launch* launch = CurrentLaunch(id);
  if (rec == records_.end() || launch == nullptr) return;
  if (launch->phase == Phase::kDeferred) {
    // Never started: nothing to stop, and no time to count (the scheduler
    // counted it from the decision).
    launches_.erase({id, launch->attempt});
    const Job* job = scheduler_->Find(id);
    if (job != nullptr && !job->running() && !job->finished()) {
      (void)ReplaceSchedulerJob(UndoStoppedRun(*job), now);
    }
    return;
  }
  launch->phase = Phase::kStopping;
  launch->stop_reason = v1::STOP_REASON_PREEMPT;
  launch->stop_decided = now;
  for (const Part& part : launch->parts) {
    if (!part.ended) {
      QueueStop(part.node_id, id, launch->attempt, v1::STOP_REASON_PREEMPT);
    }
  }
  rec->second.state = JobRecordState::kPreempted;
  ++rec->second.preemptions;
  AddEvent(id, now, "preempted", Describe(*launch));
  MarkDirty(id);
}

void MasterState::StartLaunch(const StartDecision& start, Seconds now) {
  auto it = records_.find(start.job);
  if (it == records_.end()) return;
  JobRecord& rec = it->second;
  Launch launch;
  launch.job = rec.id;
  launch.attempt = ++rec.attempt;
  if (start.resumed) ++rec.restarts;
  // One task (rank) per node, nodes in the order of their first GPU.
  std::map<int, Part> by_server;
  for (GpuId gpu : start.gpus) {
    const int server = cluster_->topology().ServerOf(gpu);
    Part& part = by_server[server];
    part.node_id = node_of_server_[server];
    part.local_gpus.push_back(gpu - cluster_->topology().server(server).first_gpu);
  }
  rec.nodes.clear();
  for (auto& [server, part] : by_server) {
    std::sort(part.local_gpus.begin(), part.local_gpus.end());
    rec.nodes.push_back(nodes_[part.node_id].record.name);
    launch.parts.push_back(std::move(part));
  }
  MarkDirty(rec.id);
  launch_records_.push_back(LaunchRecord{rec.id, launch.attempt, rec.nodes});
  launches_[{launch.job, launch.attempt}] = std::move(launch);
}

void MasterState::ReleaseDeferred() {
  for (auto& [key, launch] : launches_) {
    if (launch.phase == Phase::kDeferred && !adopting_.contains(launch.job)) {
      TryRelease(launch);
    }
  }
}

bool MasterState::TryRelease(Launch& launch) {
  const LaunchKey free{0, 0};
  for (const Part& part : launch.parts) {
    auto node = nodes_.find(part.node_id);
    if (node == nodes_.end() || !node->second.up) return false;
    for (int gpu : part.local_gpus) {
      if (gpu >= static_cast<int>(node->second.busy.size()) ||
          node->second.busy[gpu] != free) {
        return false;
      }
    }
  }
  for (size_t rank = 0; rank < launch.parts.size(); ++rank) {
    const Part& part = launch.parts[rank];
    for (int gpu : part.local_gpus) {
      nodes_[part.node_id].busy[gpu] = {launch.job, launch.attempt};
    }
    QueueStart(launch, static_cast<int>(rank));
  }
  launch.phase = Phase::kActive;
  return true;
}

void MasterState::QueueStart(const Launch& launch, int rank) {
  const JobRecord& rec = records_.at(launch.job);
  const Part& part = launch.parts[rank];
  const int port =
      options_.base_port + static_cast<int>((16 * launch.job + launch.attempt) % 10000);
  auto host_of = [&](int64_t node_id) {
    const std::string& address = nodes_[node_id].record.address;
    std::string host = address.substr(0, address.rfind(':'));
    return host.empty() ? std::string("127.0.0.1") : host;
  };
  v1::Command command;
  v1::StartTask* start = command.mutable_start();
  start->mutable_task()->set_job_id(launch.job);
  start->mutable_task()->set_attempt(launch.attempt);
  start->mutable_task()->set_rank(rank);
  start->set_world_size(static_cast<int>(launch.parts.size()));
  start->set_local_rank(0);  // one task per node
  for (int gpu : part.local_gpus) start->add_gpu_indexes(gpu);
  for (const std::string& arg : rec.spec.command) start->add_command(arg);
  for (const auto& [k, v] : rec.spec.env) (*start->mutable_env())[k] = v;
  start->set_checkpoint_dir(
      rec.spec.checkpoint_dir.empty()
          ? absl::StrCat(options_.state_dir, "/checkpoints/job-", rec.id)
          : rec.spec.checkpoint_dir);
  start->set_restart_count(rec.restarts);
  start->set_master_addr(host_of(launch.parts[0].node_id));
  start->set_master_port(port);
  for (size_t r = 0; r < launch.parts.size(); ++r) {
    start->add_worker_addresses(absl::StrCat(host_of(launch.parts[r].node_id),
                                             ":", port + static_cast<int>(r)));
  }
  outbox_[part.node_id].push_back(std::move(command));
}

void MasterState::QueueStop(int64_t node_id, JobId job, int attempt,
                            v1::StopReason reason) {
  v1::Command command;
  command.mutable_stop()->set_job_id(job);
  command.mutable_stop()->set_attempt(attempt);
  command.mutable_stop()->set_reason(reason);
  outbox_[node_id].push_back(std::move(command));
}

void MasterState::FreeBusy(int64_t node_id, LaunchKey key) {
  auto node = nodes_.find(node_id);
  if (node == nodes_.end()) return;
  for (LaunchKey& slot : node->second.busy) {
    if (slot == key) slot = {0, 0};
  }
  pass_wanted_ = true;
}

std::string MasterState::Describe(const Launch& launch) const {
  std::vector<std::string> parts;
  for (const Part& part : launch.parts) {
    auto node = nodes_.find(part.node_id);
    parts.push_back(absl::StrCat(
        node == nodes_.end() ? absl::StrCat("node ", part.node_id)
                             : node->second.record.name,
        " GPUs ", absl::StrJoin(part.local_gpus, ",")));
  }
  return absl::StrCat("attempt ", launch.attempt, " on ",
                      absl::StrJoin(parts, "; "));
}

}  // namespace tiresias
