// MasterState's read-only views for operators: LocateTaskLog (which node
// holds the log of a task) and SnapshotMetrics (/metrics).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/open_files.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::StatusOr<MasterState::TaskLogLocation> MasterState::LocateTaskLog(
    JobId id, int attempt, int rank) {
  if (attempt < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt: expected 0 (the current launch) or a launch "
                     "number, got ",
                     attempt));
  }
  if (rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank: expected >= 0, got ", rank));
  }
  MutexLock lock(&mu_);
  // Unfinished jobs are in memory; only an ended one is read from the store.
  JobRecord rec;
  if (auto live = records_.find(id); live != records_.end()) {
    rec = live->second;
  } else {
    ASSIGN_OR_RETURN(rec, store_->GetJob(id));
  }
  LiveView(rec, clock_->NowUnixSeconds());
  if (rec.attempt == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " has not started yet, so it has no log"));
  }
  if (attempt > rec.attempt) {
    return absl::NotFoundError(absl::StrCat("attempt: job ", id,
                                            " has been launched ", rec.attempt,
                                            " time(s), got ", attempt));
  }
  TaskLogLocation where;
  where.attempt = attempt == 0 ? rec.attempt : attempt;
  where.current_attempt = rec.attempt;
  where.state = rec.state;
  where.io = rec.spec.io;

  auto add = [&](const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::any_of(where.nodes.begin(), where.nodes.end(),
                    [&](const LogNode& n) { return n.name == name; })) {
      return;
    }
    LogNode node{name, "", false};
    for (const auto& [node_id, info] : table_.nodes()) {
      if (info.record.name == name) {
        node.log_address = info.log_address;
        node.up = info.up();
      }
    }
    where.nodes.push_back(std::move(node));
  };
  const Launch* launch = table_.Find({id, where.attempt});
  ASSIGN_OR_RETURN(std::vector<std::string> ranks,
                   store_->LaunchNodes(id, where.attempt));
  if (!ranks.empty()) {
    if (rank >= static_cast<int>(ranks.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank: launch ", where.attempt, " of job ", id, " has ", ranks.size(),
          " task(s), ranks 0..", ranks.size() - 1, "; got ", rank));
    }
    add(ranks[rank]);
  } else {
    // Not recorded (a state file older than the launches table): the job's
    // last nodes, then every node.
    for (const std::string& name : rec.nodes) add(name);
    for (const auto& [node_id, info] : table_.nodes()) add(info.record.name);
  }
  if (launch != nullptr && rank < static_cast<int>(launch->parts.size())) {
    where.ended = launch->parts[rank].ended();
  } else {
    // A launch no longer in memory has ended, unless the master restarted
    // while it ran and its agents have not re-registered it yet.
    where.ended = IsFinal(rec.state) || where.attempt < rec.attempt ||
                  (rec.state != JobRecordState::kRunning &&
                   rec.state != JobRecordState::kStarting);
  }
  return where;
}

absl::StatusOr<MasterState::Metrics> MasterState::SnapshotMetrics(
    bool with_vcs) {
  Metrics m;
  {
    MutexLock lock(&auth_mu_);  // a leaf: never with mu_
    m.audit_refusals = audit_limit_.Counts();
  }
  m.open_files = OpenFiles();
  m.open_files_limit = OpenFileSoftLimit();
  if (options_.lead != nullptr) {
    m.leader = options_.lead->record();
    m.standbys = options_.lead->Standbys();  // a few locks tried: no mu_
    m.store = options_.lead->Store();
  }
  {
    // O(unfinished jobs + nodes) in memory; no store access under the lock.
    MutexLock lock(&mu_);
    for (JobRecordState state :
         {JobRecordState::kPending, JobRecordState::kStarting,
          JobRecordState::kRunning, JobRecordState::kPreempted,
          JobRecordState::kFinished, JobRecordState::kFailed,
          JobRecordState::kCancelled, JobRecordState::kTimeout}) {
      auto ended = ended_.by_state.find(state);
      m.jobs_by_state[state] =
          IsFinal(state) && ended != ended_.by_state.end() ? ended->second : 0;
    }
    m.jobs_submitted = ended_.jobs;
    m.placement = placement_;
    FillTuningStatus(&m.tuning);
    m.pack_limit_learning = LearnsPackLimit();
    m.pack_limit = m.pack_limit_learning
                       ? pack_runs_->pack_limit()
                       : options_.placement_options.pack_limit;
    m.pack_limit_runs = pack_runs_->runs();
    m.pack_limit_samples = pack_runs_->samples();
    m.pack_limit_fit = std::string(PackLimitFitName(pack_runs_->fit()));
    m.preemptions = ended_.preemptions;
    m.promotions = ended_.promotions;
    m.cpu_seconds = ended_.cpu_seconds;
    // The state as shown (starting overlaid); a waiting job's stored queue
    // is current (a re-queue marks it dirty), so no live view is needed.
    for (const auto& [id, rec] : records_) {
      if (IsFinal(rec.state)) continue;  // an ended job not yet stored
      const JobRecordState shown =
          IsStarting(rec) ? JobRecordState::kStarting : rec.state;
      ++m.jobs_by_state[shown];
      m.preemptions += rec.preemptions;
      m.promotions += rec.promotions;
      const auto [cpu, memory] = UsageWithRunning(rec);
      m.cpu_seconds += cpu;
      if (shown == JobRecordState::kRunning) {
        m.running_usage.push_back({id, rec.spec.user, cpu, memory});
      }
      if (shown == JobRecordState::kPending ||
          shown == JobRecordState::kPreempted) {
        ++m.waiting_by_queue[rec.queue];
      }
    }
    // Arrays' jobs not written yet: pending, in the first queue.
    if (splits_.unwritten() > 0) {
      m.jobs_by_state[JobRecordState::kPending] += splits_.unwritten();
      m.waiting_by_queue[0] += splits_.unwritten();
    }
    for (const auto& [node_id, info] : table_.nodes()) {
      if (!info.up()) {
        ++m.nodes_down;
        continue;
      }
      ++m.nodes_up;
      m.gpus_up += info.record.gpus;
      if (info.record.drained) {
        ++m.nodes_drained;
        m.gpus_drained += info.record.gpus;
      }
      for (const LaunchKey& key : table_.BusyGpus(node_id)) {
        m.gpus_busy += key.first != 0;
        m.gpus_drained_idle += key.first == 0 && info.record.drained;
      }
      for (const auto& [task, gpus] : info.orphans)
        m.gpus_running += gpus.size();
    }
    for (const auto& [key, launch] : table_.launches()) {
      for (const Part& part : launch.parts) {
        if (part.running() && !part.ended()) {
          m.gpus_running += part.local_gpus.size();
        }
      }
    }
    m.passes = passes_;
    m.pass_seconds = pass_seconds_;
    m.commits = CommitStatsLocked();
    m.vc_reclaims = scheduler_->reclaims();
  }
  // ListVcs takes mu_ itself: O(unfinished jobs + VCs).
  if (with_vcs) m.vcs = ListVcs();
  if (with_vcs) m.qos = ListQos();
  // The store has its own lock.
  ASSIGN_OR_RETURN(m.last_event_sequence, LastEventSequence());
  return m;
}

absl::Status MasterState::CheckHealth() {
  MutexLock lock(&mu_);                       // a wedged master never answers
  return store_->LaunchNodes(0, 0).status();  // one cheap indexed read
}

}  // namespace tiresias
