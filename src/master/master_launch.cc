// MasterState: scheduling passes, and launches from decision to release.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::RunPass() {
  MutexLock lock(&mu_);
  const auto began = std::chrono::steady_clock::now();
  const Seconds now = clock_->NowUnixSeconds();
  // Arrays stored as one record: enough of their jobs written for this
  // pass, and again for the next one after it started some.
  TopUpSplitsLocked(now);
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
  ReleaseDeferred(now);
  if (TopUpSplitsLocked(now)) pass_wanted_ = true;
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
    table_.Erase({id, launch->attempt});
    const Job* job = scheduler_->Find(id);
    if (job != nullptr && !job->running() && !job->finished()) {
      // Replace only fails for a job the scheduler does not hold, and it
      // was just found there.
      ReplaceSchedulerJob(UndoStoppedRun(*job), now).IgnoreError();
    }
    return;
  }
  if (launch->phase == Phase::kStopping) return;  // already being stopped
  launch->stop_decided = now;
  table_.Stop(*launch, v1::STOP_REASON_PREEMPT);
  MoveJob(rec->second, JobRecordState::kPreempted);
  ++rec->second.preemptions;
  launch->preemption_counted = true;
  // A launch still starting never ran: its event list shows no start for
  // this attempt, and says why.
  AddEvent(id, now, EventKind::kPreempted,
           launch->all_running ? table_.Describe(*launch)
                               : absl::StrCat(table_.Describe(*launch),
                                              " (while starting: it had "
                                              "not run yet)"));
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
  // One task (rank) per node, nodes in the order of their first GPU; a
  // CPU-only job's one on the node whose spare CPUs it holds.
  std::map<int, Part> by_server;
  if (start.cpu_server >= 0) {
    by_server[start.cpu_server].node_id = node_of_server_[start.cpu_server];
  }
  for (GpuId gpu : start.gpus) {
    const int server = cluster_->topology().ServerOf(gpu);
    Part& part = by_server[server];
    part.node_id = node_of_server_[server];
    part.local_gpus.push_back(gpu -
                              cluster_->topology().server(server).first_gpu);
  }
  for (auto& [server, part] : by_server) {
    std::sort(part.local_gpus.begin(), part.local_gpus.end());
    launch.parts.push_back(std::move(part));
  }
  launch.profile = WantsProfile(rec, launch.parts.size() > 1);
  for (const Part& part : launch.parts) {
    launch.port_span += ProcessesOn(rec, part);
  }
  launch.first_port =
      table_.ChoosePorts(launch, launch.port_span, DefaultPort(launch.key()),
                         options_.base_port, kPortWindow);
  MarkDirty(rec.id);
  TryRelease(table_.Add(std::move(launch)), now);
}

void MasterState::ReleaseDeferred(Seconds now) {
  for (const LaunchKey& key : table_.DeferredLaunches()) {
    TryRelease(*table_.Find(key), now);
  }
}

bool MasterState::EarlierAttemptMayRun(const Launch& launch, Seconds now) {
  if (table_.OtherAttemptLive(launch)) return true;
  if (std::set<std::string>* fence = restart_.FenceOf(launch.job)) {
    // Nodes that registered with this master reported their tasks: any of
    // the job's is a launch part or an orphan, checked above.
    table_.EraseUpNodes(fence);
    // The window is over once CheckTimeouts judged it so, never by the
    // clock alone: after a stall of the master, the reports that waited for
    // it come first (OnStall).
    if (!fence->empty() && !restart_.closed()) return true;
    restart_.Unfence(launch.job);
  }
  return false;
}

bool MasterState::SpareCpusFree(int64_t node_id, LaunchKey launch,
                                const NodeInfo& node) const {
  // A CPU-only part holds its job's CPUs until its task reported its end,
  // as a GPU part holds its GPUs: a stopping task's are not given away.
  int held = 0;
  for (const auto& [key, rank] : table_.PartsOn(node_id)) {
    const Launch& other = *table_.Find(key);
    const Part& part = other.parts[rank];
    if (other.phase == Phase::kDeferred || part.ended() ||
        !part.local_gpus.empty()) {
      continue;
    }
    auto rec = records_.find(key.first);
    const int cpus = rec == records_.end() ? 1 : rec->second.spec.cpus;
    if (key != launch) held += cpus;
  }
  auto rec = records_.find(launch.first);
  const int wants = rec == records_.end() ? 1 : rec->second.spec.cpus;
  return held + wants <= node.spare_cpus;
}

bool MasterState::IsStarting(const JobRecord& rec) const {
  // A running record's launch is past starting. One being re-adopted after
  // a restart is stored running, or stored waiting with its launch released
  // (JobRecord::live_attempt) and shown so until its tasks report in.
  if (rec.state != JobRecordState::kPending &&
      rec.state != JobRecordState::kPreempted) {
    return false;
  }
  const Launch* found = table_.Find({rec.id, rec.attempt});
  if (found == nullptr) return false;
  const Launch& launch = *found;
  return launch.phase == Phase::kDeferred ||
         (launch.phase == Phase::kActive && !launch.all_running);
}

int MasterState::LiveAttemptOf(const JobRecord& rec) const {
  // Its launch as the agents may know it: released (written with the
  // release, before any agent hears of it) and not stopped (a stop marks
  // the job dirty, so the next write clears it).
  if (IsFinal(rec.state)) return 0;
  const Launch* launch = table_.Find({rec.id, rec.attempt});
  return launch != nullptr && launch->phase == Phase::kActive ? rec.attempt : 0;
}

bool MasterState::TryRelease(Launch& launch, Seconds now) {
  if (restart_.Adopting(launch.job)) return false;
  if (EarlierAttemptMayRun(launch, now)) return false;
  std::map<int64_t, std::vector<LaunchKey>> busy;
  for (const Part& part : launch.parts) {
    const NodeInfo* node = table_.FindNode(part.node_id);
    if (node == nullptr || !node->up() || node->leaving()) return false;
    if (part.local_gpus.empty() &&
        !SpareCpusFree(part.node_id, launch.key(), *node)) {
      return false;
    }
    auto [it, added] = busy.try_emplace(part.node_id);
    if (added) it->second = table_.BusyGpus(part.node_id);
    for (int gpu : part.local_gpus) {
      if (gpu >= static_cast<int>(it->second.size()) ||
          it->second[gpu] != LaunchKey{0, 0}) {
        return false;
      }
    }
  }
  launch.SetPhase(Phase::kActive);
  to_write_.Released({launch.job, launch.attempt});
  // Where it runs: the record (also what a restarted master waits for, see
  // RestartAdoption::Fence) and the launches table, written with the
  // release.
  JobRecord& rec = records_.at(launch.job);
  rec.nodes.clear();
  for (const Part& part : launch.parts) {
    rec.nodes.push_back(table_.NodeName(part.node_id));
  }
  MarkDirty(rec.id);
  to_write_.Launch(LaunchRecord{rec.id, launch.attempt, rec.nodes});
  return true;
}

}  // namespace tiresias
