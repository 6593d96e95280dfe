// MasterState: opening, the client API, commits and record bookkeeping.
// Scheduling passes are in master_launch.cc, the agent protocol in
// master_agents.cc, node set changes in master_rebuild.cc, submissions and
// paged listings in master_front_door.cc.
#include "master/master_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/proto_convert.h"
#include "master/sqlite_store.h"
#include "sched/policy.h"

namespace tiresias {

MasterState::MasterState(MasterOptions options, master::Clock* clock,
                         std::unique_ptr<Store> store)
    : options_(std::move(options)), clock_(clock), store_(std::move(store)) {
  empty_cluster_ = std::make_unique<Cluster>(Topology::Uniform(1, 1, 1));
  flags_tuning_ = {options_.queues, options_.promote_knob,
                   options_.queue_order};
  std::random_device random;
  last_session_ = (static_cast<uint64_t>(random()) << 24) |
                  (random() & 0xffffff);
}

MasterState::~MasterState() = default;

absl::StatusOr<std::unique_ptr<MasterState>> MasterState::Open(
    MasterOptions options, master::Clock* clock) {
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("state_dir: must not be empty");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(options.state_dir, ": cannot create: ", ec.message()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store,
                   SqliteStore::Open(options.state_dir + "/state.db"));
  return Open(std::move(options), clock, std::move(store));
}

absl::StatusOr<std::unique_ptr<MasterState>> MasterState::Open(
    MasterOptions options, master::Clock* clock,
    std::unique_ptr<Store> store) {
  if (store == nullptr) return absl::InvalidArgumentError("store: null");
  std::unique_ptr<MasterState> state(
      new MasterState(std::move(options), clock, std::move(store)));
  MutexLock lock(&state->mu_);
  RETURN_IF_ERROR(state->LoadTuning());
  ASSIGN_OR_RETURN(state->scheduler_, state->MakeScheduler());
  RETURN_IF_ERROR(state->LoadPlacementRuns());
  RETURN_IF_ERROR(state->LoadVcs());
  RETURN_IF_ERROR(state->LoadQos());
  RETURN_IF_ERROR(state->Load(clock->NowUnixSeconds()));
  RETURN_IF_ERROR(state->LoadTokens());
  return state;
}

absl::Status MasterState::LoadTokens() {
  ASSIGN_OR_RETURN(std::vector<TokenRecord> tokens, store_->ListTokens());
  MutexLock lock(&auth_mu_);
  for (TokenRecord& t : tokens) tokens_[t.id] = std::move(t);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Scheduler>> MasterState::MakeScheduler() {
  // The applied tuning if any (LoadTuning), else the flags'.
  Scheduler::Tuning tuning = FlagsTuning();
  std::string chosen_placement = options_.placement;
  if (tuning_) {
    ASSIGN_OR_RETURN(tuning, TuningFromProto(tuning_->request().tuning()));
    chosen_placement = tuning_->request().tuning().placement();
  }
  PolicyOptions policy_options;
  policy_options.queues = tuning.queues;
  ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                   MakePolicy(options_.policy, policy_options));
  std::string placement = chosen_placement.empty()
                              ? std::string(policy->traits().default_placement)
                              : chosen_placement;
  ASSIGN_OR_RETURN(std::unique_ptr<Placer> placer,
                   MakePlacer(placement, options_.placement_options));
  placement_ = placement;
  SchedulerOptions sched_options;
  sched_options.queues = tuning.queues;
  sched_options.promote_knob = tuning.promote_knob;
  sched_options.queue_order = tuning.queue_order;
  sched_options.fair_per_user = options_.fair_per_user;
  sched_options.fair_quantum = options_.fair_quantum;
  return std::make_unique<Scheduler>(std::move(policy), std::move(placer),
                                     sched_options);
}

absl::Status MasterState::Load(Seconds now) {
  ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store_->ListNodes());
  for (NodeRecord& node : nodes) {
    NodeInfo& info = table_.NodeAt(node.id, node.name);
    info.record = node;
    info.last_heard = clock_->NowMonotonic();  // the timeout counts from now
  }
  ASSIGN_OR_RETURN(ended_, store_->Totals());
  ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store_->ListUnfinishedJobs());
  // Arrays stored as one record with jobs still unwritten (their first
  // job may have ended): each joins the queue where it stands by id, after
  // the jobs before its last one, before the jobs after it.
  ASSIGN_OR_RETURN(std::vector<JobRecord> splitting,
                   store_->ListSplittingArrays());
  auto next_split = splitting.begin();
  // Arrays' slots first: who holds one depends on every job of the array.
  PlanArraySlots(jobs);
  for (JobRecord& rec : jobs) {
    for (; next_split != splitting.end() &&
           next_split->id + next_split->array_count <= rec.id;
         ++next_split) {
      AddSplittingLocked(*next_split);
    }
    if (rec.cancel_requested) {
      // Cancelled while its tasks ran: it does not run again; it ends once
      // nothing of it runs (FinishRestartCancels).
      restart_.CancelAfterRestart(
          rec.id, std::set<std::string>(rec.nodes.begin(), rec.nodes.end()));
    } else if (StoredAsLive(rec)) {
      // Running, or released and still starting: its tasks are adopted
      // from the agents' reports (AdoptOnto), never started beside.
      restart_.Adopt(rec.id, rec.nodes);
    } else {
      // Its last launch may still be stopping on a node that has not
      // reported in yet: the next one waits for those nodes.
      if (rec.attempt > 0 && !rec.nodes.empty()) {
        restart_.Fence(
            rec.id, std::set<std::string>(rec.nodes.begin(), rec.nodes.end()));
      }
      RETURN_IF_ERROR(scheduler_->Restore(JobFromRecord(rec), now));
      if (rec.held) RETURN_IF_ERROR(scheduler_->Hold(rec.id));
      // A job that ran had its dependencies met; one that never did
      // waits again until they are (checked at the end of Load).
      if (rec.attempt == 0) RETURN_IF_ERROR(WaitForDependencies(rec));
      // A begin time still ahead holds it (only a job that never ran).
      RETURN_IF_ERROR(WaitForBegin(rec, now));
      // Past its array's running limit: waits for a slot.
      if (WaitsForArraySlot(rec)) RETURN_IF_ERROR(scheduler_->Hold(rec.id));
      // The scheduler's view of it may differ from the record (a launch
      // lost before it ran); the first write brings the record in line.
      MarkDirty(rec.id);
    }
    // ended_ sums over ended jobs only (unfinished ones are in records_).
    ended_.preemptions -= rec.preemptions;
    ended_.promotions -= rec.promotions;
    ended_.cpu_seconds -= rec.cpu_seconds;
    if (rec.array_id > 0) deps_.AddArrayJobs(rec.array_id, 1);
    records_[rec.id] = std::move(rec);
  }
  for (; next_split != splitting.end(); ++next_split) {
    AddSplittingLocked(*next_split);
  }
  restart_.Open(clock_->NowMonotonic() + options_.node_timeout);
  // Dependencies met or broken while the master was down: released or
  // ended now, written by the first Commit.
  ResolveDependencies(now);
  return absl::OkStatus();
}

Cluster& MasterState::cluster() {
  return cluster_ ? *cluster_ : *empty_cluster_;
}

MasterState::Launch* MasterState::CurrentLaunch(JobId id) {
  auto rec = records_.find(id);
  if (rec == records_.end()) return nullptr;
  return table_.Find({id, rec->second.attempt});
}

void MasterState::AddEvent(JobId id, Seconds t, EventKind kind,
                           std::string detail) {
  to_write_.Event(
      JobEvent{id, 0, t, std::string(EventKindName(kind)), std::move(detail)});
}

void MasterState::MoveJob(JobRecord& rec, JobRecordState to) {
  absl::Status moved = MoveJobState(rec.state, to, rec.id);
  if (moved.ok()) return;
  std::fprintf(stderr, "tiresias master: invariant: %s\n",
               std::string(moved.message()).c_str());
  std::abort();
}

void MasterState::SyncRecord(JobRecord& rec, Seconds now) {
  if (IsFinal(rec.state)) return;
  const Job* job = scheduler_->Find(rec.id);
  if (job == nullptr) return;  // a finished job: its final counters
  if (job->queue() != rec.queue) {
    const bool promoted = job->queue() < rec.queue;
    AddEvent(rec.id, now, promoted ? EventKind::kPromoted : EventKind::kDemoted,
             absl::StrCat("queue ", rec.queue, " -> ", job->queue()));
    if (promoted) ++rec.promotions;
    rec.queue = job->queue();
    MarkDirty(rec.id);
  }
  // A running job's record holds the values at the start of its run.
  const Seconds at = job->running() ? job->run_start() : now;
  const Seconds executed = job->Executed(at);
  const Seconds total = job->TotalExecuted(at);
  if (executed != rec.executed || total != rec.total_executed ||
      (!job->running() && job->last_stop() != rec.last_stop_time)) {
    rec.executed = executed;
    rec.total_executed = total;
    rec.attained_gpu_seconds = job->num_gpus() * executed.count();
    if (!job->running()) rec.last_stop_time = job->last_stop();
    MarkDirty(rec.id);
  }
}

std::pair<double, int64_t> MasterState::UsageWithRunning(
    const JobRecord& rec) const {
  std::pair<double, int64_t> usage{rec.cpu_seconds, rec.max_memory_bytes};
  if (const Launch* launch = table_.Find({rec.id, rec.attempt})) {
    for (const Part& part : launch->parts) {
      if (part.ended()) continue;  // in the record already
      usage.first += part.cpu_seconds;
      usage.second = std::max(usage.second, part.memory_peak_bytes);
    }
  }
  return usage;
}

void MasterState::LiveView(JobRecord& rec, Seconds now) const {
  if (IsFinal(rec.state)) return;
  if (std::optional<JobId> array = splits_.Holding(rec.id)) {
    UnwrittenView(rec, *array, now);
    return;
  }
  if (IsStarting(rec)) rec.state = JobRecordState::kStarting;
  rec.waiting_on_dependencies = deps_.Waiting(rec.id);
  FillPendingReason(rec, now);
  std::tie(rec.cpu_seconds, rec.max_memory_bytes) = UsageWithRunning(rec);
  const Job* job = scheduler_->Find(rec.id);
  if (job == nullptr || !job->running()) return;
  rec.borrowing = Borrowing(rec.id);
  rec.executed = job->Executed(now);
  rec.total_executed = job->TotalExecuted(now);
  rec.attained_gpu_seconds = job->AttainedGpuSeconds(now);
  rec.queue = job->queue();
}

void MasterState::Finalize(JobRecord& rec, JobRecordState state, Seconds now,
                           std::optional<int> exit_code, std::string detail) {
  SyncRecord(rec, now);
  MoveJob(rec, state);
  rec.end_time = now;
  rec.exit_code = exit_code;
  AddEvent(rec.id, now, EndEventKind(state), std::move(detail));
  MarkDirty(rec.id);
  pass_wanted_ = true;
  // Ended while it waited (cancelled): it waits no more. The jobs waiting
  // for it, or for its whole array, are checked at the next
  // ResolveDependencies.
  deps_.Ended(rec.id, rec.spec.dependencies, rec.array_id,
              state == JobRecordState::kFinished);
  begin_waits_.erase({rec.spec.begin, rec.id});
  // Its array's slot goes to the next job of the array at the next Commit.
  LeaveArraySlot(rec, /*held=*/false);
}

absl::Status MasterState::Commit() {
  const Seconds now = clock_->NowUnixSeconds();
  // Every report applied so far is in what follows (GroupCommit).
  const uint64_t covers = reports_.Covering(&mu_);
  // Jobs that ended since the last write release (or end) the jobs
  // waiting for them, in this same write.
  ResolveDependencies(now);
  // Slots of arrays freed by jobs that ended (or were held) since.
  RefillArraySlots(now);
  // Only jobs something happened to can differ from the scheduler's view
  // (a waiting job's counters stand still; a running one's record holds
  // the values at its run's start): O(changed jobs), not O(jobs).
  for (JobId id : to_write_.jobs()) {
    auto it = records_.find(id);
    if (it != records_.end()) SyncRecord(it->second, now);
  }
  StoreWrite write;
  for (JobId id : to_write_.jobs()) {
    auto it = records_.find(id);
    if (it == records_.end()) continue;
    // A launch being re-adopted keeps what was stored.
    JobRecord& rec = it->second;
    if (!restart_.Adopting(id)) rec.live_attempt = LiveAttemptOf(rec);
    write.jobs.push_back(rec);
  }
  for (int64_t id : to_write_.Take(&write)) {
    // As it is now: a row written directly since (UpsertNode) is no newer.
    if (const NodeInfo* node = table_.FindNode(id)) {
      write.nodes.push_back(node->record);
    }
  }
  if (!write.jobs.empty() || !write.events.empty() || !write.launches.empty() ||
      !write.nodes.empty()) {
    const auto write_began = std::chrono::steady_clock::now();
    absl::Status written = store_->Write(write);
    ++commit_stats_.writes;
    commit_stats_.write_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      write_began)
            .count();
    if (!written.ok()) {
      reports_.Ended(&mu_, covers, written);
      // Nothing was stored: keep it all for the next write (the ended
      // jobs' records stay in memory until then).
      to_write_.PutBack(std::move(write));
      PublishDesired();  // stops need no durability; starts wait for it
      return written;
    }
    if (!write.events.empty()) {
      EventsWritten();
      QueueJobNotifications(write.events);
    }
  }
  // Durable now: released launches may be sent, changed desired states
  // published.
  for (const LaunchKey& key : to_write_.TakeReleased()) {
    Launch* launch = table_.Find(key);
    if (launch == nullptr) continue;
    launch->durable = true;
    table_.Touch(*launch);
  }
  PublishDesired();
  // Ended jobs leave memory once on disk (a job only ends through a write,
  // once), their counts going to ended_.
  for (const JobRecord& rec : write.jobs) {
    if (!IsFinal(rec.state)) continue;
    ++ended_.by_state[rec.state];
    if (rec.state == JobRecordState::kFinished) NoteFinishedForDrift(rec);
    ended_.preemptions += rec.preemptions;
    ended_.promotions += rec.promotions;
    ended_.cpu_seconds += rec.cpu_seconds;
    records_.erase(rec.id);
  }
  reports_.Ended(&mu_, covers, absl::OkStatus());  // also with nothing written
  return absl::OkStatus();
}

absl::Status MasterState::CommitReports() {
  return reports_.Join(
      &mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Commit(); });
}

MasterState::CommitStats MasterState::commit_stats() {
  MutexLock lock(&mu_);
  return CommitStatsLocked();
}

MasterState::CommitStats MasterState::CommitStatsLocked() {
  CommitStats stats = commit_stats_;
  stats.reports = reports_.joined(&mu_);
  stats.report_commits = reports_.led(&mu_);
  return stats;
}

absl::StatusOr<JobId> MasterState::SubmitJob(const JobRequest& spec) {
  ASSIGN_OR_RETURN(SubmitResult result, SubmitJob(spec, ""));
  return result.id;
}

std::optional<double> MasterState::PlacementSkewOf(JobId id) {
  MutexLock lock(&mu_);
  const Job* job = scheduler_->Find(id);
  return job == nullptr ? std::nullopt : job->spec().measured_skew;
}

absl::StatusOr<JobRecord> MasterState::GetJob(JobId id) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(JobRecord rec, store_->GetJob(id));
  LiveView(rec, clock_->NowUnixSeconds());
  return rec;
}

absl::StatusOr<std::vector<JobRecord>> MasterState::ListJobs(
    std::optional<JobRecordState> state) {
  ASSIGN_OR_RETURN(JobPage page, ListJobsPage({.state = state}));
  return std::move(page.jobs);
}

absl::StatusOr<JobRecord> MasterState::CancelJob(JobId id) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(JobRecord result,
                   CancelLocked(id, clock_->NowUnixSeconds(), false));
  RETURN_IF_ERROR(Commit());
  return result;
}

absl::StatusOr<JobRecord> MasterState::CancelLocked(JobId id, Seconds now,
                                                    bool timeout) {
  // An array's job not written yet is split off first (the caller checked
  // that it may act on it).
  RETURN_IF_ERROR(SplitThroughLocked(id, now));
  auto it = records_.find(id);
  if (it == records_.end()) {
    ASSIGN_OR_RETURN(JobRecord rec, store_->GetJob(id));  // NotFound
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " has already ended (",
        std::string(JobRecordStateName(rec.state)), ")"));
  }
  JobRecord& rec = it->second;
  if (IsFinal(rec.state)) {
    // Ended, its record not yet written (a failed write keeps it in memory
    // for the next one): it does not end again.
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " has already ended (",
        std::string(JobRecordStateName(rec.state)), ")"));
  }
  if (rec.cancel_requested) return rec;  // already being cancelled
  bool cancelling = false;
  table_.ForEachLaunchOf(id, [&](const Launch& launch) {
    cancelling = cancelling || (launch.phase == Phase::kStopping &&
                                launch.stop_reason == v1::STOP_REASON_CANCEL &&
                                !launch.AllEnded());
  });
  if (cancelling) return rec;  // already being cancelled
  restart_.Forget(id);         // its adopted parts are stopped below
  const Job* job = scheduler_->Find(id);
  if (job && !job->finished()) {
    SyncRecord(rec, now);  // its counters as of now, before it leaves
    RETURN_IF_ERROR(scheduler_->Remove(id, now, cluster()));
  }
  MarkDirty(id);
  pass_wanted_ = true;
  // A launch never released is forgotten (nothing of it ran); every other
  // launch with a part that has not ended is stopped, and the job ends
  // cancelled once they all have (MaybeFinishCancel).
  if (Launch* current = CurrentLaunch(id);
      current != nullptr && current->phase == Phase::kDeferred) {
    table_.Erase({id, current->attempt});
  }
  std::vector<LaunchKey> live_launches;
  table_.ForEachLaunchOf(id, [&](Launch& launch) {
    if (!launch.AllEnded()) live_launches.push_back(launch.key());
  });
  for (const LaunchKey& key : live_launches) {
    table_.Stop(*table_.Find(key), v1::STOP_REASON_CANCEL);
  }
  const bool live = !live_launches.empty();
  if (live) {
    rec.cancel_requested = true;  // stored: a restart finishes the cancel
    rec.timeout_requested = timeout;
    AddEvent(id, now, timeout ? EventKind::kTimingOut : EventKind::kCancelling,
             timeout ? "its time limit reached: stopping its tasks"
                     : "stopping its tasks");
  } else if (timeout) {
    Finalize(rec, JobRecordState::kTimeout, now, std::nullopt,
             "its time limit reached");
  } else {
    Finalize(rec, JobRecordState::kCancelled, now, std::nullopt,
             "cancelled by user");
  }
  return rec;
}

std::string MasterState::NodeName(int64_t node_id) {
  MutexLock lock(&mu_);
  return table_.NodeName(node_id);
}

Seconds MasterState::NextWakeup() {
  MutexLock lock(&mu_);
  return scheduler_->NextWakeup();
}

bool MasterState::TakePassWanted() {
  MutexLock lock(&mu_);
  return std::exchange(pass_wanted_, false);
}

}  // namespace tiresias

namespace tiresias {

absl::StatusOr<std::vector<JobEvent>> MasterState::EventsAfter(
    int64_t after_sequence, int limit) {
  return store_->EventsAfter(after_sequence, limit);
}

absl::StatusOr<int64_t> MasterState::LastEventSequence() {
  // The store only answers "the first event after x", so the highest
  // sequence is the smallest x with nothing after it: doubling, then
  // bisecting (about 2 log2(n) indexed lookups).
  auto any_after = [&](int64_t x) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(std::vector<JobEvent> events, store_->EventsAfter(x, 1));
    return !events.empty();
  };
  ASSIGN_OR_RETURN(bool any, any_after(0));
  if (!any) return 0;
  int64_t lo = 0;  // something after lo
  int64_t hi = 1;
  while (true) {
    ASSIGN_OR_RETURN(any, any_after(hi));
    if (!any) break;
    lo = hi;
    if (hi > std::numeric_limits<int64_t>::max() / 2) {
      hi = std::numeric_limits<int64_t>::max();
      break;
    }
    hi *= 2;
  }
  while (hi - lo > 1) {  // something after lo, nothing after hi
    const int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(any, any_after(mid));
    if (any) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}

uint64_t MasterState::EventGeneration() { return events_written_.Get(); }

uint64_t MasterState::WaitForEvents(uint64_t seen,
                                    std::chrono::milliseconds timeout) {
  return events_written_.WaitChange(seen, timeout);
}

void MasterState::EventsWritten() { events_written_.Bump(); }

void MasterState::WakeEventWatchers() { events_written_.Bump(); }

void MasterState::PublishDesired() {
  if (!table_.TakeDesiredChanged()) return;
  WakeDesiredWatchers();
}

uint64_t MasterState::DesiredGeneration() { return desired_changes_.Get(); }

uint64_t MasterState::WaitForDesired(uint64_t seen,
                                     std::chrono::milliseconds timeout) {
  return desired_changes_.WaitChange(seen, timeout);
}

void MasterState::WakeDesiredWatchers() { desired_changes_.Bump(); }

}  // namespace tiresias
