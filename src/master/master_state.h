// The master daemon's brain host: everything the master knows and decides,
// behind one mutex, with no threads or sockets of its own. The gRPC services
// (service.h) and the scheduling thread (server.h) call into it; tests drive
// it directly with a fake clock.
//
// It owns the durable Store, the node registry, a Cluster built from the up
// nodes (one server per node, its GPUs numbered 0..gpus-1 locally) and the
// pure Scheduler (src/sched) that decides on that Cluster.
//
// Two views of GPUs. The Scheduler's Cluster says who *should* hold a GPU;
// the node registry's `busy` table says who *does* (a task was started there
// and has not reported its end). A start decision whose GPUs are still busy
// (a preempted job's tasks are still checkpointing) is deferred: its
// StartTasks are queued only once every GPU it needs is physically free.
//
// Node set changes (register, node down): the Topology cannot grow in place,
// so a new Cluster is built. The Scheduler keeps nothing of the topology but
// the GPU ids of running jobs, so it stays: running jobs whose nodes are all
// still up keep their GPUs (remapped to the new numbering), running jobs
// that lost a node become preempted at that instant (both by
// Scheduler::Replace, O(running x log n)); waiting jobs are untouched.
// Executed time, first start, last stop and queue carry over exactly.
//
// Durability: every public method that changes a job writes all its changes
// (records and events) in one Store::Write before it returns; a job id is
// returned only once Store::CreateJobs committed. The record of a running job
// holds its executed time as of the start of its current run; reads
// (GetJob, ListJobs) overlay the live value. A write re-reads from the
// scheduler only the jobs marked dirty (acted on, re-queued at a wakeup, or
// replaced in the scheduler), so its cost follows what changed, not the
// backlog.
//
// Starting: a job whose current launch is decided but not yet fully
// running (deferred, or started with some part not yet reported RUNNING)
// is stored as pending or preempted, what it reverts to if the launch is
// lost, and is shown as kStarting by the reads (LiveView). Launches live in
// memory only, so a restarted master shows it as stored until it decides
// again; the store stays free of a state that recovery would have to undo.
//
// Accounting: executed time follows the agents' reports. The Scheduler
// starts counting at its start decision; once every part of the launch has
// reported RUNNING, its run start is moved to the latest reported start
// (clamped to [decision, now]). A finish is accounted at the latest reported
// end, and a preempted launch's run is extended to the latest reported end
// (its checkpointing). Each correction swaps the job's record in the
// scheduler (ReplaceSchedulerJob: Scheduler::Replace, O(log n)).
//
// Gang start: a part that exits kStartFailedExitCode before every part has
// run stops the others (reason PREEMPT) and puts the job back to waiting
// (pending if it never ran, preempted otherwise) with no executed time for
// that launch, counting a restart; after kMaxFailedStarts such launches in a
// row (JobRecord::failed_starts, stored, so it survives a master restart)
// the job fails.
//
// Restart recovery: Open() over an existing state dir reloads unfinished
// jobs. Pending and preempted ones go into the scheduler at once. Running
// ones wait for their agents to Register with their tasks (adopted, no new
// StartTask) until node_timeout after Open; those not fully adopted by then
// are stopped where found and become preempted.
//
// Submissions (group commit, LevelDB's DBImpl::Write): concurrent SubmitJob
// calls queue up; the one at the front leads, takes everything queued (at
// most kMaxSubmitBatch), writes it in ONE store transaction (one fsync)
// without holding the mutex, then under the mutex puts the new jobs into
// the scheduler and the records, hands every writer its result and wakes
// the next leader. A job is answered only once its transaction committed;
// if it fails, every writer of the batch gets the error and nothing of it
// is in memory. Request ids (idempotent retries) are matched by the store,
// also within one batch.
//
// Thread-safety: every public method takes the one internal mutex (SubmitJob
// only around its checks and its in-memory part, never across the fsync).
#ifndef TIRESIAS_MASTER_MASTER_STATE_H_
#define TIRESIAS_MASTER_MASTER_STATE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cluster.h"
#include "master/clock.h"
#include "master/store.h"
#include "place/placement.h"
#include "proto/tiresias.pb.h"
#include "sched/queues.h"
#include "sched/scheduler.h"

namespace tiresias {

struct MasterOptions {
  // Holds state.db and, by default, checkpoints/job-<id>/. Must exist.
  std::string state_dir;
  std::string policy = "tiresias-l";
  // Placement scheme; empty: the policy's default.
  std::string placement;
  PlacementOptions placement_options;
  QueueConfig queues = QueueConfig::PaperDefault();
  // PROMOTEKNOB; infinity turns it off.
  double promote_knob = std::numeric_limits<double>::infinity();
  // An agent silent this long is marked down; also how long running jobs
  // wait to be re-adopted after a master restart.
  Seconds node_timeout{30};
  // Told to agents at Register.
  Seconds heartbeat_interval{2};
  // MASTER_PORT of a launch is base_port + (16 x job id + attempt) mod 10000.
  int base_port = 29500;
};

class MasterState {
 public:
  // Exit code agents report for a task whose command could not be started.
  static constexpr int kStartFailedExitCode = 127;
  // Failed gang starts in a row after which a job fails.
  static constexpr int kMaxFailedStarts = 3;

  // Opens (or creates) <state_dir>/state.db and reloads unfinished jobs.
  // `clock` must outlive the MasterState.
  static absl::StatusOr<std::unique_ptr<MasterState>> Open(
      MasterOptions options, master::Clock* clock);
  ~MasterState();
  MasterState(const MasterState&) = delete;
  MasterState& operator=(const MasterState&) = delete;

  // Client API. Errors: InvalidArgument naming the field (a spec past a
  // limit of job_limits.h or otherwise malformed: ValidateJobRequest; gpus
  // more than the up nodes have), NotFound for an unknown id,
  // FailedPrecondition for cancelling an ended job. With no node up, any
  // positive GPU count is accepted and waits for nodes. SubmitJob(spec) is
  // SubmitJob(spec, "") (below): always a new job.
  absl::StatusOr<JobId> SubmitJob(const JobRequest& spec);
  absl::StatusOr<JobRecord> GetJob(JobId id);
  // Every job (ListJobsPage without limits). `state` matches the state
  // shown, kStarting included (a starting job is not listed as pending or
  // preempted).
  absl::StatusOr<std::vector<JobRecord>> ListJobs(
      std::optional<JobRecordState> state = std::nullopt);
  absl::StatusOr<JobRecord> CancelJob(JobId id);
  absl::StatusOr<std::vector<v1::Node>> ListNodes();

  // Where the log of one task of a job lives, for ReadJobLog: the launch
  // (attempt 0: the current or last one) and the node that ran that rank
  // (the store records each launch's nodes when it is decided). For a
  // launch recorded before that table existed, the candidates are the
  // job's last nodes, then every other node (agents answer NOT_FOUND for a
  // log they do not have). Errors: NotFound (unknown job, or an attempt it
  // never had), InvalidArgument (no such rank in that launch),
  // FailedPrecondition (the job has not started yet).
  struct LogNode {
    std::string name;
    std::string log_address;  // empty: its agent serves no logs
    bool up = false;
  };
  struct TaskLogLocation {
    int attempt = 0;          // the launch the log belongs to
    int current_attempt = 0;  // the job's current (or last) launch
    JobRecordState state = JobRecordState::kPending;  // as shown
    bool ended = false;  // the task has ended: its log will not grow
    std::vector<LogNode> nodes;
  };
  absl::StatusOr<TaskLogLocation> LocateTaskLog(JobId id, int attempt,
                                                int rank);

  // What /metrics reports: a consistent snapshot, taken under the mutex.
  struct Metrics {
    // Jobs by the state shown (starting included), every state present.
    std::map<JobRecordState, int64_t> jobs_by_state;
    int64_t jobs_submitted = 0;  // ever accepted
    int64_t preemptions = 0;     // summed over all jobs
    int64_t promotions = 0;
    std::map<int, int64_t> waiting_by_queue;  // pending/preempted, by queue
    int64_t nodes_up = 0;
    int64_t nodes_down = 0;
    int64_t gpus_up = 0;    // GPUs of the up nodes
    int64_t gpus_busy = 0;  // of those, held by a task now
    int64_t passes = 0;     // scheduling passes since the master started
    double pass_seconds = 0;  // their total wall time
    int64_t last_event_sequence = 0;
  };
  absl::StatusOr<Metrics> SnapshotMetrics();
  // OK if the master's lock can be taken and its store answers (/healthz).
  absl::Status CheckHealth();

  // Agent protocol (see proto/tiresias.proto). Heartbeat answers NotFound
  // for a node id not registered since this master started.
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& req);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& req);

  // One scheduling pass at the clock's now: start decisions become queued
  // StartTasks (deferred while their GPUs are busy), preemptions StopTasks.
  absl::Status RunPass();
  // Marks nodes silent for node_timeout down (their jobs preempted), and
  // ends the post-restart adoption window.
  absl::Status CheckTimeouts();
  // Unix seconds of the scheduler's next demotion/promotion; kNever if none.
  Seconds NextWakeup();
  // True (and reset) if something happened since the last call that a
  // scheduling pass should see.
  bool TakePassWanted();

  // Event watchers (WatchEvents). Reads go straight to the store (its own
  // lock), never under the state's mutex, so a slow watcher cannot stall
  // the master. EventsAfter: every job's stored events with sequence >
  // `after_sequence`, oldest first, at most `limit`. LastEventSequence: the
  // highest sequence stored so far (0 if none).
  absl::StatusOr<std::vector<JobEvent>> EventsAfter(int64_t after_sequence,
                                                    int limit);
  absl::StatusOr<int64_t> LastEventSequence();
  // A counter bumped after every store write that appended events. A
  // watcher reads it, reads the store, and if nothing new came waits with
  // WaitForEvents(seen, ...) until it moves, WakeEventWatchers() is
  // called, or `timeout` passes; returns the counter's value then.
  uint64_t EventGeneration();
  uint64_t WaitForEvents(uint64_t seen, std::chrono::milliseconds timeout);
  void WakeEventWatchers();

 private:
  // One part of a launch: the task of one rank, on one node.
  struct Part {
    int64_t node_id = 0;
    std::vector<int> local_gpus;
    bool running = false;  // reported RUNNING
    bool ended = false;    // reported ended, or its node was lost
    std::optional<int> exit_code;
    std::optional<Seconds> start_time;  // agent's clock
    std::optional<Seconds> end_time;    // agent's clock
  };
  enum class Phase { kDeferred, kActive, kStopping };
  // One launch (attempt) of a job.
  struct Launch {
    JobId job = 0;
    int attempt = 0;
    std::vector<Part> parts;  // rank order
    Phase phase = Phase::kDeferred;
    v1::StopReason stop_reason = v1::STOP_REASON_UNSPECIFIED;
    bool all_running = false;  // every part reported RUNNING at some point
    Seconds stop_decided{0};   // when a preemption was decided
    bool AllEnded() const;
  };
  using LaunchKey = std::pair<JobId, int>;
  struct NodeInfo {
    NodeRecord record;
    std::string log_address;  // its AgentLogs service (Register, Heartbeat)
    bool up = false;  // registered since this master started and not down
    std::vector<LaunchKey> busy;  // per local GPU; {0,0} = free
  };

  MasterState(MasterOptions options, master::Clock* clock,
              std::unique_ptr<Store> store);
  absl::Status Load(Seconds now);  // restart recovery

  // Requires mu_ (all below).
  absl::StatusOr<std::unique_ptr<Scheduler>> MakeScheduler() const;
  Cluster& cluster();  // the live one, or an empty stand-in
  absl::Status Commit();
  void MarkDirty(JobId id) { dirty_.insert(id); }
  void AddEvent(JobId id, Seconds t, std::string kind, std::string detail);
  void SyncRecord(JobRecord& rec, Seconds now);
  // A stored record as reads show it: live counters of a running job, and
  // kStarting for a launch in progress (IsStarting).
  void LiveView(JobRecord& rec, Seconds now) const;
  // True if `rec` (pending or preempted) has a current launch that is
  // deferred, or active with some part not yet reported RUNNING.
  bool IsStarting(const JobRecord& rec) const;
  void Finalize(JobRecord& rec, JobRecordState state, Seconds now,
                std::optional<int> exit_code, std::string detail);
  Launch* CurrentLaunch(JobId id);

  // Scheduling (master_state.cc).
  void StartLaunch(const StartDecision& start, Seconds now);
  void PreemptLaunch(JobId id, Seconds now);
  void ReleaseDeferred();
  bool TryRelease(Launch& launch);
  void QueueStart(const Launch& launch, int rank);
  void QueueStop(int64_t node_id, JobId job, int attempt,
                 v1::StopReason reason);
  void FreeBusy(int64_t node_id, LaunchKey key);
  std::string Describe(const Launch& launch) const;

  // Agents (master_agents.cc).
  void HandleTask(int64_t node_id, const v1::TaskStatus& task, Seconds now,
                  v1::HeartbeatResponse* resp);
  void OnPartEnded(Launch& launch, const v1::TaskStatus& task, Seconds now);
  // A part exited with kStartFailedExitCode before every part ran: the
  // others are stopped and the job waits again, or fails after
  // kMaxFailedStarts such launches in a row.
  void OnStartFailed(Launch& launch, const v1::TaskStatus& task, Seconds now);
  // The reported end of a preempted launch: its checkpointing time counts.
  void AccountStop(const Launch& launch);
  void MaybeMarkRunning(Launch& launch, Seconds now);
  void AdoptOrOrphan(int64_t node_id, const v1::TaskStatus& task,
                     Seconds now);
  void LoseNode(int64_t node_id, Seconds now, const std::string& why);
  void EndAdoptionWindow(Seconds now);

  // Node set changes (master_rebuild.cc).
  absl::Status Rebuild(Seconds now);
  Job JobFromRecord(const JobRecord& rec) const;
  // Swaps the scheduler's record of job.id() for `job` and marks the job
  // dirty (GPUs in the cluster untouched).
  absl::Status ReplaceSchedulerJob(const Job& job, Seconds now);
  // The job's counters as the scheduler holds them, with its current run
  // restarted at `run_start` (the agents' reported start).
  Job ShiftRunStart(const Job& old, Seconds run_start) const;
  // A waiting job whose last run ended at `end` instead of at last_stop().
  Job ShiftStop(const Job& old, Seconds end) const;
  // A running job put back to waiting at `now` with no executed time for
  // its current run (it never really started).
  Job UndoRun(const Job& old, Seconds now) const;
  // A job the scheduler just stopped whose last run never happened (its
  // launch was deferred and never started): that run's time removed; a job
  // that never ran before is as submitted.
  Job UndoStoppedRun(const Job& old) const;

  MasterOptions options_;
  master::Clock* clock_;
  std::unique_ptr<Store> store_;

  std::mutex mu_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Cluster> cluster_;  // null while no node is up
  std::unique_ptr<Cluster> empty_cluster_;
  std::map<int64_t, int> server_of_node_;  // node id -> server index
  std::vector<int64_t> node_of_server_;
  std::map<int64_t, NodeInfo> nodes_;
  std::map<int64_t, std::vector<v1::Command>> outbox_;  // per node
  std::map<LaunchKey, Launch> launches_;
  std::map<JobId, JobRecord> records_;  // unfinished jobs (and just-ended)
  std::set<JobId> adopting_;  // running at restart, not yet re-adopted
  Seconds adopt_deadline_{0};
  std::set<std::pair<int64_t, LaunchKey>> orphan_stops_sent_;
  std::set<JobId> dirty_;
  std::vector<JobEvent> events_;
  std::vector<LaunchRecord> launch_records_;  // written by the next Commit
  bool pass_wanted_ = true;
  int64_t passes_ = 0;
  double pass_seconds_ = 0;
  // For metrics: jobs ever accepted, and over ended jobs only the count by
  // final state and the summed preemptions and promotions (loaded at Open,
  // kept by SubmitJob and Commit).
  JobTotals ended_;

  // Watchers: never taken before mu_ (taken inside it by EventsWritten).
  void EventsWritten();
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  uint64_t event_generation_ = 0;

  // ======================================================================
  // Client front door: idempotent, group-committed submissions and paged
  // listings (master_front_door.cc).
  // ======================================================================
 public:
  // Most submissions one transaction holds.
  static constexpr size_t kMaxSubmitBatch = 1000;

  struct SubmitResult {
    JobId id = 0;
    // `request_id` named a job submitted before (with the same spec): `id`
    // is that job's and nothing new was created.
    bool existing = false;

    bool operator==(const SubmitResult&) const = default;
  };
  // Accepts a job once it is durable (see "Submissions" above). The spec
  // and `request_id` (empty: none) are validated first, before queueing;
  // then InvalidArgument as for SubmitJob(spec), AlreadyExists for a
  // request id used before with another spec (naming that job), or the
  // store's error for the whole batch. Blocks while another batch is being
  // written; thread-safe.
  absl::StatusOr<SubmitResult> SubmitJob(const JobRequest& spec,
                                         std::string_view request_id);

  // Which jobs ListJobsPage returns: every condition given holds.
  struct JobListQuery {
    // As shown: kStarting matches jobs whose launch is in progress (from
    // memory); kPending and kPreempted exclude them.
    std::optional<JobRecordState> state;
    JobId after_id = 0;               // only ids > after_id (the page cursor)
    std::optional<std::string> user;  // exactly
    std::optional<std::string> name;  // exactly
    std::optional<Seconds> submitted_since;  // submit_time >= this
    int64_t limit = -1;                      // at most this many; < 0: no limit
    int64_t max_bytes = -1;  // as JobQuery::max_bytes; < 0: no limit
  };
  // One page of jobs in id order, as GetJob shows them (live counters,
  // starting), without events; `more` if jobs after the last one may match
  // too. Filters and pages are evaluated by the store (SQL), so the cost
  // follows the page, not the number of jobs; the mutex is held only to
  // overlay the live view.
  absl::StatusOr<JobPage> ListJobsPage(const JobListQuery& query);

  // Submission batches written so far and the jobs they held (new or
  // existing), since Open: batches < jobs shows submissions shared
  // transactions.
  struct SubmitStats {
    int64_t batches = 0;
    int64_t jobs = 0;
  };
  SubmitStats submit_stats();

 private:
  // One SubmitJob call waiting in submit_queue_ (lives on its caller's
  // stack until `done`).
  struct SubmitWriter {
    const JobRequest* spec;
    std::string_view request_id;
    absl::StatusOr<SubmitResult> result;
    bool done = false;
    std::condition_variable cv;  // signalled under submit_mu_
  };
  // InvalidArgument if the up nodes have fewer GPUs than `spec` asks for.
  // Takes mu_.
  absl::Status CheckFitsCluster(const JobRequest& spec);
  // The leader's work: writes `batch` in one transaction, then (under mu_)
  // admits the new jobs and sets every writer's result. Holds no lock but
  // the store's own during the write.
  void WriteSubmitBatch(const std::vector<SubmitWriter*>& batch);
  // ListJobsPage for kStarting: from the launches in memory.
  JobPage ListStartingJobs(const JobListQuery& query);

  // Never held together with mu_ (the leader takes them in turn).
  std::mutex submit_mu_;
  std::deque<SubmitWriter*> submit_queue_;  // guarded by submit_mu_
  SubmitStats submit_stats_;                // guarded by submit_mu_
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_MASTER_STATE_H_
