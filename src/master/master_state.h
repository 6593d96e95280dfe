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
// the launches and the agents' reports say who *does*: a GPU is busy while
// a released part of a launch on it has not ended, or while its agent
// reports a task there that no launch names (an orphan, being stopped). A
// start decision whose GPUs are still busy (a preempted job's tasks are
// still checkpointing) is deferred, and released only once they are free.
//
// The agent protocol is level-triggered (proto/tiresias.proto, "Agent
// protocol"): nothing is queued for an agent. Its desired state (the tasks
// that should run on the node, the launches being stopped there) is built
// from the launches each time it is asked for (LaunchTable::DesiredStateOf,
// each StartTask filled from the job's record): whole in
// every Register answer, and in a Heartbeat answer whole or, when the agent
// names the version it was last answered with, as a delta against it
// (AnswerDesired); the WatchDesiredState stream only wakes the agent (a
// version, nothing else) on a per-node version that grows whenever a
// launch touching the node changes. A launch appears in a desired state only
// once the write that recorded it (its attempt, its nodes) is durable: persist,
// then answer.
//
// One attempt at a time: a launch is released only when no earlier launch
// of its job has a part that has not ended, no node reports a live task of
// the job, and, after a master restart, every node of the job's last launch
// has reported in (or the post-restart adoption window, one node timeout,
// has passed: by then a node that never came back has fenced its tasks).
//
// Fencing: an agent holds a lease (RegisterResponse.lease_seconds = node
// timeout - its grace - kFenceMargin), renewed by every heartbeat that
// succeeds; when it lapses its task shims stop every task. A node is
// declared lost only after the node timeout, so its tasks are gone by then
// and its parts can be counted ended.
//
// System stops are preemptions: a task reported PREEMPTED that nobody asked
// to stop (the agent shut down, or was fenced), or that vanished from its
// agent's report after running, preempts its job; it resumes from its
// checkpoint like any preempted job.
//
// Node set changes. A node that comes up joins the cluster in place: its
// server is appended (Cluster::AddServer), so its cost does not grow with
// the cluster's size, and nothing running is touched (JoinCluster). Any
// other change (a node down, leaving, drained with preemption, back with a
// new shape, or VCs bound to the cluster) builds a new Cluster, servers in
// node id order. The Scheduler keeps nothing of the topology but the GPU
// ids of running jobs, so it stays: running jobs whose nodes are all still
// up keep their GPUs (remapped to the new numbering), running jobs that
// lost a node become preempted at that instant (both by Scheduler::Replace,
// O(running x log n)); waiting jobs are untouched. Executed time, first
// start, last stop and queue carry over exactly.
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
// memory only; the record keeps only the attempt released to the agents and
// not stopped (JobRecord::live_attempt, set by Commit), so that a restarted
// master adopts a launch whose task started but whose report was lost
// (AdoptOnto), and never starts the job again beside it.
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
// jobs. Pending and preempted ones go into the scheduler at once (their
// next launch waits for the nodes of their last one, see above). Running
// ones, and those whose launch was released and not stopped
// (JobRecord::live_attempt), wait for their agents to Register with their
// tasks (adopted, no new start) until node_timeout after Open; one whose
// node registers without its task, and those not fully adopted by then,
// are stopped where found and become preempted (GiveUpAdoptionsOn,
// StopAdopting).
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
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cluster.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "master/array_slots.h"
#include "master/array_splits.h"
#include "master/audit_limit.h"
#include "master/clock.h"
#include "master/cluster_history.h"
#include "master/commit_queue.h"
#include "master/dependency_table.h"
#include "master/generation.h"
#include "master/group_commit.h"
#include "master/launch_table.h"
#include "master/master_lead.h"
#include "master/notifier.h"
#include "master/principal.h"
#include "master/qos_registry.h"
#include "master/restart_adoption.h"
#include "master/store.h"
#include "master/tuning_convert.h"
#include "master/vc_registry.h"
#include "place/pack_limit_runs.h"
#include "place/placement.h"
#include "proto/tiresias.pb.h"
#include "sched/pending_reason.h"
#include "sched/queues.h"
#include "sched/scheduler.h"
#include "tune/drift.h"

namespace tiresias {

struct MasterOptions {
  // Holds state.db (created if missing).
  std::string state_dir;
  // Where a job that names no checkpoint dir checkpoints, on the nodes: an
  // absolute folder under which each owner gets one of their own
  // (<base>/<owner>/<cluster id>/job-<id>, made by the agent); empty: under
  // the owner's home (~/.tiresias/checkpoints/<cluster id>/job-<id>). See
  // StartTask.checkpoint_base.
  std::string checkpoint_base;
  std::string policy = "tiresias-l";
  // Placement scheme; empty: the policy's default.
  std::string placement;
  PlacementOptions placement_options;
  QueueConfig queues = QueueConfig::PaperDefault();
  // PROMOTEKNOB; infinity turns it off.
  double promote_knob = std::numeric_limits<double>::infinity();
  QueueOrder queue_order = QueueOrder::kStable;
  // An agent silent this long is declared lost (its jobs preempted, its
  // GPUs given to others); also how long running jobs wait to be re-adopted
  // after a master restart. It bounds the agents' leases: lease = node
  // timeout - the agent's grace - kFenceMargin, at least kMinLeaseBeats
  // heartbeats (Register refuses an agent whose grace does not fit).
  Seconds node_timeout{60};
  // Told to agents at Register; capped at node_timeout / 10, so that a
  // lease spans several heartbeats.
  Seconds heartbeat_interval{2};
  // Heartbeats per second the whole cluster sends at rest, at most: on a
  // cluster of more than heartbeat_interval x this many nodes, agents are
  // told a longer interval (nodes / this), still at most node_timeout / 5
  // and a third of their lease (kMinLeaseBeats). Decisions reach agents on
  // their watch streams, and agents report a change at once, so the interval
  // only keeps nodes alive (as the kubelet's 10 s node lease). At 2,000 nodes
  // and 2 s, heartbeats held 38% of a core (BENCHMARKS.md, "2,000 agents
  // against a real master"). 0: no scaling.
  double max_heartbeat_rate = 200;
  // Register refuses a node with more GPUs than this, and a new node
  // name beyond max_nodes known nodes.
  int max_gpus_per_node = 1024;
  int max_nodes = 10000;
  // Streams one user may hold open at once (RESOURCE_EXHAUSTED past it):
  // event watches (each `tiresias watch`) and sessions joined to a task
  // (`attach`, `port-forward`); user_streams.h. 0: no limit.
  int max_streams_per_user = 64;
  // A submission batch's leader waits this long for more submissions
  // before it writes, when the last batch held more than one (clients
  // submitting concurrently): for a store whose commit is a network round
  // trip (etcd), where larger batches, not faster commits, raise the
  // throughput. Zero: it writes at once.
  std::chrono::microseconds submit_linger{0};
  // Clients must authenticate (a token or a user certificate) and are
  // authorized per job; agents must present their node's certificate.
  // false: --insecure, nobody is checked (tests, a trusted laptop).
  bool require_auth = false;
  // Listings show other users' jobs without their commands (their
  // environment is never shown to others).
  bool hide_others_commands = false;
  // MASTER_PORT of a launch is base_port + (16 x job id + attempt) mod
  // 10000, or the next free one above it on its nodes
  // (LaunchTable::ChoosePorts).
  int base_port = 29500;
  // PACKLIMIT learnt from measured runs (place/pack_limit_runs.h): each
  // launch's iteration time, from its traffic profile, with its placement
  // (spread over servers or not) is kept in the store whatever the
  // placement scheme; with `profiled` placement and learn_pack_limit, the
  // classifier is refitted at most every pack_limit_refresh while new runs
  // came in, and placement follows its PACKLIMIT. It starts at
  // placement_options.pack_limit (pack_limit_learning.start is ignored).
  bool learn_pack_limit = true;
  Seconds pack_limit_refresh{60};
  PackLimitOptions pack_limit_learning;
  // A launch is profiled while its job has no periodic profile, and while
  // fewer than this many runs of its signature were measured with the
  // launch's placement (so that both placements get measured).
  int profiled_runs_per_placement = 3;
  // Jobs that may not be preempted (JobRequest::no_preempt) are accepted
  // with at most this many GPUs; 0 refuses them all, < 0: any size.
  int max_no_preempt_gpus = -1;
  // On a secure master, whether users who are not admins may submit such
  // jobs (`--no-preempt-for users`); by default only admins may.
  bool no_preempt_users = false;
  // Per-user fair share (SchedulerOptions::fair_per_user).
  bool fair_per_user = false;
  double fair_quantum = kDefaultFairQuantum;
  // The cluster's history (cluster_history.h): MasterServer samples it this
  // often (0 or less: never), and the store keeps it bounded so.
  Seconds history_interval{10};
  HistoryRetention history_retention;
  // Notifications (notifier.h). Jobs' webhooks go only to these hosts
  // (`host` or `host:port`; "*": any; empty: none); mailto: only with a
  // sendmail that exists. admin_notify: webhooks (or mailto:) told of
  // nodes lost and drained. notify_key: what webhooks are signed with.
  std::vector<std::string> notify_hosts;
  std::vector<std::string> admin_notify;
  std::string sendmail = "/usr/sbin/sendmail";
  std::string notify_key;
  // This master's lead (master_lead.h: of a state dir, or of an etcd
  // store), taken before Open: its epoch goes in every answer to agents,
  // and status shows it with the standbys. Null (tests): epoch 0, no
  // leader shown.
  std::shared_ptr<const MasterLead> lead;
};

// What UpdateJobs does to each job (proto JobAction).
enum class JobAction { kCancel, kHold, kRelease, kRequeue, kRequeueHold };
std::string_view JobActionName(JobAction action);  // "cancel", "hold", ...

class MasterState {
 public:
  // Exit code agents report for a task whose command could not be started.
  static constexpr int kStartFailedExitCode = LaunchTable::kStartFailedExitCode;
  // Failed gang starts in a row after which a job fails.
  static constexpr int kMaxFailedStarts = 3;

  // Opens (or creates) <state_dir>/state.db (a SqliteStore) and reloads
  // unfinished jobs. `clock` must outlive the MasterState.
  static absl::StatusOr<std::unique_ptr<MasterState>> Open(
      MasterOptions options, master::Clock* clock);
  // The same over a store made by the caller (another backend, or a
  // FaultStore in tests), which the MasterState owns from now on;
  // options.state_dir is not used to find it.
  static absl::StatusOr<std::unique_ptr<MasterState>> Open(
      MasterOptions options, master::Clock* clock,
      std::unique_ptr<Store> store);
  ~MasterState();
  MasterState(const MasterState&) = delete;
  MasterState& operator=(const MasterState&) = delete;

  // The store's cluster id (Store::cluster_id), which keys the default
  // checkpoint dirs. Constant; thread-safe.
  const std::string& cluster_id() const { return store_->cluster_id(); }
  // The lead's epoch (MasterOptions::lead), 0 without one. Constant.
  uint64_t epoch() const {
    return options_.lead != nullptr ? options_.lead->epoch() : 0;
  }
  // Whether this master may still command the agents (MasterLead::Holds):
  // false once a lead by lease may have lapsed.
  bool LeadHolds() const {
    return options_.lead == nullptr || options_.lead->Holds();
  }

  // Client API. Errors: InvalidArgument naming the field (a spec past a
  // limit of job_limits.h or otherwise malformed: ValidateJobRequest; gpus
  // more than the up nodes have), NotFound for an unknown id,
  // FailedPrecondition for cancelling an ended job. With no node up, any
  // positive GPU count is accepted and waits for nodes. SubmitJob(spec) is
  // SubmitJob(spec, "") (below): always a new job.
  absl::StatusOr<JobId> SubmitJob(const JobRequest& spec);
  absl::StatusOr<JobRecord> GetJob(JobId id);
  // The tensor skew the scheduler places unfinished job `id` by
  // (JobSpec::measured_skew, from its profile); nullopt if none is known
  // or the job is not in the scheduler.
  std::optional<double> PlacementSkewOf(JobId id);
  // Every job (ListJobsPage without limits). `state` matches the state
  // shown, kStarting included (a starting job is not listed as pending or
  // preempted).
  absl::StatusOr<std::vector<JobRecord>> ListJobs(
      std::optional<JobRecordState> state = std::nullopt);
  absl::StatusOr<JobRecord> CancelJob(JobId id);
  absl::StatusOr<std::vector<v1::Node>> ListNodes();

  // Job control (master_jobctl.cc): one action on many jobs, under one
  // lock and in one store write. Jobs are named by id, or selected by a
  // filter over the unfinished jobs (every condition given holds; state as
  // shown, starting included). `may_act` says whether the caller may act
  // on a job (its owner or an admin); a job it refuses gets its status,
  // and so do unknown ids and jobs the action does not apply to, each
  // alone (see proto JobAction). Results in id order, each with the job
  // as shown after the action.
  struct JobActionResult {
    JobId id = 0;
    absl::Status status;
    JobRecord job;           // set when status is OK
    bool unchanged = false;  // nothing to do (e.g. already held)
  };
  struct JobFilter {
    std::optional<JobRecordState> state;
    std::optional<std::string> user;
    std::optional<std::string> name;
    std::optional<JobId> array_id;  // the jobs of this array
  };
  using MayAct = std::function<bool(const JobRecord&)>;
  absl::StatusOr<std::vector<JobActionResult>> UpdateJobs(
      JobAction action, std::vector<JobId> ids, const MayAct& may_act);
  absl::StatusOr<std::vector<JobActionResult>> UpdateMatchingJobs(
      JobAction action, const JobFilter& filter, const MayAct& may_act);
  // Changing a waiting job's request (master_modify.cc, proto ModifyJob):
  // each field given changes, the others stay; at least one.
  struct JobChanges {
    std::optional<Seconds> time_limit;
    std::optional<int> gpus;
    std::optional<std::string> qos;
    std::optional<Seconds> begin;
  };
  // The new request is checked as a submission's (ValidateJobRequest, a
  // changed GPU count by CheckFitsCluster, then `check`: the RPC layer's
  // QOS right, may be null) with no lock held; then, if job `id` still
  // waits (pending or preempted, not starting) with the request it was
  // built from, it changes in memory, in the scheduler (its GPUs and QOS
  // re-keyed in place) and in the store, with a "modified" event. A job
  // that runs (or starts, or is being re-adopted) may change its time
  // limit alone. InvalidArgument (nothing to change, a bad value),
  // FailedPrecondition (running and more than its time limit changes,
  // being stopped; a begin time for a job that has run), Aborted (changed
  // meanwhile), NotFound. The caller checks who may.
  using CheckRequest = std::function<absl::Status(const JobRequest&)>;
  absl::StatusOr<JobRecord> ModifyJob(JobId id, const JobChanges& changes,
                                      const CheckRequest& check);

  // Job dependencies (master_deps.cc). Checks the jobs `spec` depends on
  // before it is submitted: InvalidArgument "<field>.dependencies: ..."
  // naming a job that does not exist (none can be the job itself or a
  // later one: those do not exist yet), PermissionDenied naming one that
  // `may_depend` refuses (a non-admin may depend only on jobs of the
  // spec's user; null: any). SubmitJob and SubmitJobs check existence
  // themselves; the RPC layer calls this first for the ownership.
  // Takes mu_; O(dependencies) reads.
  absl::Status CheckDependencyTargets(const JobRequest& spec,
                                      const MayAct& may_depend,
                                      std::string_view field = "spec");
  // Virtual clusters (teams; master_vcs.cc, vc_registry.h). SetVc creates
  // (`create`) or changes one, normalized by VcRegistry::CheckSet (its
  // errors; the fit is checked against every registered node, down ones
  // too); RemoveVc: NotFound, or FailedPrecondition naming an unfinished
  // job in it. Both are durable before they return and applied to the
  // scheduler at once (ChangeVcs). The caller audits them.
  // With `expected` (a change made from a VC read before): Aborted unless
  // the VC is still exactly that, so that concurrent changes lose none.
  absl::Status SetVc(VcRecord vc, bool create,
                     const std::optional<VcRecord>& expected = std::nullopt);
  absl::Status RemoveVc(const std::string& name);
  // Sets a submission's spec.vc (VcRegistry::Resolve).
  absl::Status ResolveVc(JobRequest& spec, bool admin, std::string_view field);
  struct VcView {
    VcRecord vc;
    int quota_gpus = 0;
    int guaranteed_gpus = 0;  // its running jobs' GPUs on its quota
    int borrowed_gpus = 0;    // and beyond it
    int running_jobs = 0;
    int waiting_jobs = 0;
    std::vector<std::string> bound_cells;  // "node:first-last"
  };
  std::vector<VcView> ListVcs();

  // Priority levels (QOS; master_qos.cc, qos_registry.h), as VCs are:
  // durable before they return, applied to the scheduler at once
  // (Scheduler::SetQos), audited by the caller; RemoveQos refuses while an
  // unfinished job has it. ResolveQos checks a submission's QOS and its
  // --no-preempt (QosRegistry::Resolve, with options().no_preempt_users).
  absl::Status SetQos(QosRecord qos, bool create,
                      const std::optional<QosRecord>& expected = std::nullopt);
  absl::Status RemoveQos(const std::string& name);
  // Scheduling settings (master_tuning.cc): SetTuning checks `req`
  // (InvalidArgument naming the field; ABORTED if req.expected is set and
  // differs from the settings in force), stores it durably, then applies
  // it at once (Scheduler::Retune, and a new placer if placement
  // changed). A restarted master keeps the stored settings over its flags.
  // Audited by the caller. Returns the status as TuningStatus shows it.
  absl::StatusOr<v1::TuningStatus> SetTuning(const v1::SetTuningRequest& req,
                                             const std::string& who);
  // Notifications queued since the last call (MasterServer hands them to
  // its Notifier); and one for the admins' webhooks (node lost, drained).
  std::vector<Notification> TakeNotifications();
  // The flags' scheduling settings changed (`master --config`'s file
  // reloaded on SIGHUP): `tuning` is the flags' from now on, in force at
  // once (returns true) unless settings applied by SetTuning are, which
  // win as they do at a start (false), also when an admin's SetTuning
  // lands while this one is being made.
  absl::StatusOr<bool> SetFlagsTuning(const Scheduler::Tuning& tuning);
  // SetTuning's work: `req` checked and applied; stored when `store`,
  // else the stored settings are dropped (a reset to the flags').
  absl::StatusOr<v1::TuningStatus> ApplyTuning(const v1::SetTuningRequest& req,
                                               const std::string& who,
                                               bool store);
  absl::Status ResolveQos(const JobRequest& spec, bool admin,
                          std::string_view field);
  struct QosView {
    QosRecord qos;
    int running_jobs = 0;
    int waiting_jobs = 0;
    int gpus = 0;  // its running jobs'
  };
  // By priority, highest first, then by name.
  std::vector<QosView> ListQos();

  // Node drain for maintenance (master_nodes.cc). A drained node takes no
  // new launch (its server is cordoned in the scheduler's Cluster, and a
  // launch decided there but not yet released is taken back); its running
  // jobs finish, or with `preempt` are preempted now (checkpoint, requeue)
  // and resume elsewhere. Durable (Store::SetNodeDrain) before memory
  // changes. Draining again updates the reason. Errors: InvalidArgument
  // (reason empty, past kMaxDrainReasonBytes, not UTF-8, control
  // characters), NotFound (unknown node).
  static constexpr size_t kMaxDrainReasonBytes = 256;
  struct DrainResult {
    v1::Node node;                 // as ListNodes shows it now
    std::vector<JobId> preempted;  // by this call
  };
  absl::StatusOr<DrainResult> DrainNode(const std::string& name,
                                        const std::string& reason,
                                        bool preempt);
  // Takes a drained node back (a node not drained is left alone).
  // NotFound for an unknown node.
  absl::StatusOr<v1::Node> ResumeNode(const std::string& name);

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
    int io = 0;  // JobRequest::io (JobIo)
  };
  absl::StatusOr<TaskLogLocation> LocateTaskLog(JobId id, int attempt,
                                                int rank);

  // What /metrics reports: a consistent snapshot, taken under the mutex.
  // Commits of changes (not submissions): store transactions tried (each
  // one fsync; failed ones included) and the seconds they took;
  // heartbeats and registrations that waited for one, and the commits
  // those led (reports / report_commits: how many shared a commit they
  // led, see GroupCommit).
  struct CommitStats {
    int64_t writes = 0;
    double write_seconds = 0;
    int64_t reports = 0;
    int64_t report_commits = 0;
  };
  struct Metrics {
    // Jobs by the state shown (starting included), every state present.
    std::map<JobRecordState, int64_t> jobs_by_state;
    int64_t jobs_submitted = 0;  // ever accepted
    int64_t preemptions = 0;     // summed over all jobs
    int64_t promotions = 0;
    std::map<int, int64_t> waiting_by_queue;  // pending/preempted, by queue
    int64_t nodes_up = 0;
    int64_t nodes_down = 0;
    int64_t gpus_up = 0;       // GPUs of the up nodes
    int64_t gpus_busy = 0;     // of those, held by a launch now
    int64_t gpus_running = 0;  // of those, held by a task reported running
    // Up nodes drained (DrainNode), their GPUs, and of those the ones no
    // launch holds (neither busy nor free: no new job may take them).
    int64_t nodes_drained = 0;
    int64_t gpus_drained = 0;
    int64_t gpus_drained_idle = 0;
    int64_t passes = 0;       // scheduling passes since the master started
    double pass_seconds = 0;  // their total wall time
    CommitStats commits;      // since the master started
    // The master process's open descriptors and its limit (-1: unknown):
    // an agent or client past the limit is refused a connection.
    int64_t open_files = -1;
    int64_t open_files_limit = -1;
    // This master's lead (MasterOptions::lead): null without one; the live
    // standbys on its state dir, as "pid@host".
    std::optional<LeaderRecord> leader;
    std::vector<std::string> standbys;
    StoreHealth store;
    int64_t last_event_sequence = 0;
    // Placement, and PACKLIMIT: the value placement uses (learnt or
    // configured), the runs measured, those that are classifier samples
    // (their signature measured both ways), and why it has its value
    // (PackLimitFitName); `learning`: it follows the classifier.
    std::string placement;
    // The K queues, PROMOTEKNOB, queue order in force, their source, drift.
    v1::TuningStatus tuning;
    double pack_limit = 0;
    int64_t pack_limit_runs = 0;
    int64_t pack_limit_samples = 0;
    std::string pack_limit_fit;
    bool pack_limit_learning = false;
    // Refusals in the audit log by cause, and of those the ones written
    // only in a summary (AuditRateLimit::Counts).
    std::vector<AuditCauseCount> audit_refusals;
    // CPU time of every job's tasks ever (from their cgroups; running
    // tasks' latest readings included), and what each running job used.
    double cpu_seconds = 0;
    struct JobUsage {
      JobId id = 0;
      std::string user;
      double cpu_seconds = 0;
      int64_t max_memory_bytes = 0;
    };
    std::vector<JobUsage> running_usage;  // by job id
    // Virtual clusters (ListVcs; only when asked for: /metrics), and
    // borrowers preempted to give a VC its quota back since the master
    // started.
    std::vector<VcView> vcs;
    std::vector<QosView> qos;  // likewise (ListQos)
    int64_t vc_reclaims = 0;
  };
  absl::StatusOr<Metrics> SnapshotMetrics(bool with_vcs = false);
  // The cluster's history (master_history.cc). RecordClusterSample stores
  // the busy GPUs, up GPUs, waiting and running jobs now (SnapshotMetrics)
  // at the clock's now, pruning to options().history_retention; called by
  // MasterServer every options().history_interval. ClusterHistory: the
  // samples with since <= time <= until, oldest first, thinned to at most
  // max_points (ThinSamples; <= 0: all). Neither holds mu_ while the store
  // works.
  absl::Status RecordClusterSample();
  // The clock's now, Unix seconds (the default end of a history window).
  Seconds NowForHistory() const;
  absl::StatusOr<std::vector<ClusterSample>> ClusterHistory(Seconds since,
                                                            Seconds until,
                                                            int max_points);
  // OK if the master's lock can be taken and its store answers (/healthz).
  absl::Status CheckHealth();

  // The name of node `node_id`; empty if there is no such node.
  std::string NodeName(int64_t node_id);

  // Agent protocol (see proto/tiresias.proto). Register: InvalidArgument
  // for a bad field, AlreadyExists if a live agent with another token holds
  // the name, FailedPrecondition if the agent's grace leaves no lease within
  // the node timeout. Heartbeat: NotFound for a node or session not
  // registered with this master (register again). A task report with an
  // impossible field is refused alone (in the answer's `rejected`); the rest
  // of the heartbeat applies.
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& req);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& req);
  // The node's desired state if its version is above `after_version`, else
  // nullopt. NotFound if the node or session is not (or no longer) live.
  absl::StatusOr<std::optional<v1::DesiredState>> DesiredStateAfter(
      int64_t node_id, uint64_t session, uint64_t after_version);
  // A counter bumped whenever any node's desired state changes (after the
  // write that made it durable); WaitForDesired(seen, timeout) waits until
  // it moves, WakeDesiredWatchers() is called, or `timeout` passes.
  uint64_t DesiredGeneration();
  uint64_t WaitForDesired(uint64_t seen, std::chrono::milliseconds timeout);
  void WakeDesiredWatchers();

  // Authentication and the audit log (master_auth.cc). Tokens live in
  // memory (loaded at Open, kept by CreateToken and RevokeToken after their
  // write is durable), so checking one costs no store read and a revocation
  // takes effect at once. Thread-safe; these take auth_mu_, never mu_.
  //
  // The principal a bearer token stands for, or Unauthenticated saying why
  // (malformed, unknown, revoked or expired); never echoes the secret.
  absl::StatusOr<Principal> AuthenticateToken(const std::string& token);
  struct IssuedTokenText {
    int64_t id = 0;
    std::string text;  // "tsk_<id>_<secret>": returned once, never stored
    std::optional<Seconds> expires;
  };
  // Issues a token (user: 1..64 printable characters; ttl > 0 or none).
  absl::StatusOr<IssuedTokenText> CreateToken(const std::string& user,
                                              bool admin,
                                              std::optional<Seconds> ttl,
                                              const std::string& description);
  // Every token, without salt or hash.
  std::vector<TokenRecord> ListTokens();
  // NotFound for an unknown id.
  absl::Status RevokeToken(int64_t id);
  // Appends to the audit log, its text escaped and bounded (audit_text.h:
  // a caller's bad field never makes the log unreadable). Refusals are
  // written at most kAuditRefusalsPerSecond a second (an attacker hammering
  // the door must not turn it into an fsync storm); the ones beyond are
  // counted by cause and summarized in one entry a second later
  // (audit_limit.h), and every refusal counts in Metrics::audit_refusals.
  // Never fails the caller: a write that fails is reported on stderr.
  void Audit(AuditRecord record);
  static constexpr int kAuditRefusalsPerSecond = 20;
  // Writes the summary of refusals not written, once one is due (a second
  // after them); MasterServer calls it every second, so a flood that stops
  // is summarized even if nothing else is audited after it.
  void FlushAudit();
  absl::StatusOr<std::vector<AuditRecord>> AuditAfter(int64_t after, int limit);
  const MasterOptions& options() const { return options_; }

  // Lease = node timeout - grace - kFenceMargin: covers the task shim's
  // lease check interval, SIGKILL taking effect, and clock rate drift.
  static constexpr Seconds kFenceMargin{1};
  // A lease must span at least this many heartbeat intervals.
  static constexpr int kMinLeaseBeats = 3;
  // The heartbeat interval agents are told (options capped, see above).
  Seconds HeartbeatInterval() const;
  // The interval told to a node's agent now: HeartbeatInterval(), longer
  // on a large cluster (max_heartbeat_rate), at most a third of `lease`.
  Seconds AgentHeartbeatInterval(Seconds lease) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One scheduling pass at the clock's now: start decisions become queued
  // StartTasks (deferred while their GPUs are busy), preemptions StopTasks.
  absl::Status RunPass();
  // Marks nodes silent for node_timeout down (their jobs preempted), and
  // ends the post-restart adoption window.
  absl::Status CheckTimeouts();
  // The master itself stalled for `stall` (stopped, swapped out, a long
  // pass or write): nodes could not be heard meanwhile through no fault of
  // theirs, so their silence is not evidence that they died. Moves every
  // node's last-heard time and the adoption window on by `stall` (never
  // past now), so that the reports waiting for the master are taken before
  // any node is judged lost. MasterServer's loop calls it when the gap
  // between two of its timeout checks is longer than a beat.
  void OnStall(Seconds stall);
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
  // The agent-protocol records (launch_table.h).
  using Part = LaunchTable::Part;
  using Launch = LaunchTable::Launch;
  using Phase = LaunchPhase;
  using NodeInfo = LaunchTable::Node;

  MasterState(MasterOptions options, master::Clock* clock,
              std::unique_ptr<Store> store);
  // Restart recovery.
  absl::Status Load(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Requires mu_ (all below).
  // Also sets placement_.
  absl::StatusOr<std::unique_ptr<Scheduler>> MakeScheduler()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live one, or an empty stand-in.
  Cluster& cluster() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes what changed; on success, makes the launches it released
  // durable (they enter their nodes' desired states). Wakes desired-state
  // watchers if any desired state changed.
  absl::Status Commit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commit for a heartbeat's or a registration's reports, shared with those
  // that came meanwhile (GroupCommit): may let go of mu_ before it returns.
  absl::Status CommitReports() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // commit_stats() with mu_ held.
  CommitStats CommitStatsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkDirty(JobId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    to_write_.Job(id);
  }
  void AddEvent(JobId id, Seconds t, EventKind kind, std::string detail)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the stored state of `rec` (LegalJobMove); an illegal move is a
  // bug in the master and stops it (a job that ended must never run again).
  static void MoveJob(JobRecord& rec, JobRecordState to);
  void SyncRecord(JobRecord& rec, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A stored record as reads show it: live counters of a running job, and
  // kStarting for a launch in progress (IsStarting).
  // What `rec` and its current launch's running tasks used (their latest
  // readings added to the record's).
  std::pair<double, int64_t> UsageWithRunning(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LiveView(JobRecord& rec, Seconds now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // LiveView of a job of `array` not written yet (master_array_split.cc):
  // unless held, it waits as the array's last written waiting job does
  // (the same spec: dependencies, begin time, limit), else for its turn.
  void UnwrittenView(JobRecord& rec, JobId array, Seconds now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets rec.pending_reason for a waiting job as shown (after LiveView's
  // state): from ExplainWaiting over the scheduler, computed once per pass
  // when first asked (reasons_); for a deferred starting job, which launch
  // holds its GPUs. Clears it for any other state.
  void FillPendingReason(JobRecord& rec, Seconds now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The reason itself; nullopt where FillPendingReason clears it.
  std::optional<PendingReason> PendingReasonOf(const JobRecord& rec,
                                               Seconds now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A node as ListNodes shows it (live free GPUs and jobs).
  v1::Node NodeView(int64_t id, const NodeInfo& info) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether an exclusive job holds node `id`'s server (none of its GPUs
  // is free for another job).
  bool ReservedNode(int64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True if `rec` (pending or preempted) has a current launch that is
  // deferred, or active with some part not yet reported RUNNING.
  bool IsStarting(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What Commit stores as rec.live_attempt: rec.attempt while that launch
  // is released and not stopped (master_launch.cc), else 0.
  int LiveAttemptOf(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finalize(JobRecord& rec, JobRecordState state, Seconds now,
                std::optional<int> exit_code, std::string detail)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Launch* CurrentLaunch(JobId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Job dependencies (master_deps.cc). A job waiting for its dependencies
  // is held in the scheduler (Scheduler::Hold, as a user's hold is, so no
  // pass can start it) and waits in deps_ (DependencyTable); the
  // scheduler's hold is lifted only when neither the user's hold
  // (JobRecord::held) nor the dependency wait remains. When a job ends
  // (Finalize), the jobs waiting for it, and only they, are checked again
  // at the next ResolveDependencies (Commit runs it first): O(dependents
  // of the jobs that ended), never O(jobs).
  //
  // WaitForDependencies: `rec` (waiting, in the scheduler, in records_)
  // starts waiting if it has dependencies; they are checked at the next
  // ResolveDependencies.
  absl::Status WaitForDependencies(const JobRecord& rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks the queued dependents: met: released (unless held by a user),
  // with a "dependency" event; never met: out of the scheduler and ended
  // kFailed with an event naming the dependency; else still waiting.
  void ResolveDependencies(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How job `id` stands for its dependents: from records_, else the store.
  DependencyTarget TargetOf(JobId id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a whole array (`id` its array id): unfinished while any
  // of its jobs is, succeeded when every one finished, else failed.
  DependencyTarget ArrayTargetOf(JobId array_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Begin times (master_modify.cc; JobRequest::begin). A job that never
  // ran whose begin time is ahead is held in the scheduler (as for
  // dependencies) and listed in begin_waits_ by time; ReleaseDueBegins,
  // every CheckTimeouts, releases those whose time came unless another
  // hold remains (MayRelease). O(log jobs) per change.
  absl::Status WaitForBegin(const JobRecord& rec, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WaitsForBegin(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseDueBegins(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether nothing but the scheduler's hold keeps waiting job `rec` from
  // running: no user's hold, dependency, array slot or begin time.
  bool MayRelease(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lifts the scheduler's hold of unfinished job `id` (its last reason is
  // gone) and asks for a pass. Fails only for a job the scheduler no
  // longer has, which an unfinished record excludes: logged as a broken
  // invariant.
  void ReleaseHold(JobId id, Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Job arrays' running limits (master_arrays.cc). A job of an array with
  // a limit (JobArraySpec::max_running) holds one of the array's slots
  // from when it may be scheduled until it ends (running, starting,
  // preempted and waiting to resume) or a user holds it; a job without
  // one is held in the scheduler (Scheduler::Hold, as for dependencies:
  // the simulator's core knows nothing of arrays) and shows
  // PendingReasonKind::kArrayLimit. Finalize (and a user's hold) frees a
  // slot; RefillArraySlots, run by every Commit, gives freed slots to the
  // array's lowest ids that are not held by a user. Not stored: the limit
  // is in each job's spec, and Load hands the slots out again (jobs that
  // ran first). O(jobs of the arrays touched) per Commit. The slots are
  // array_slots_'s (array_slots.h); these apply what it answers.
  // `rec` (waiting, in the scheduler and records_) joins its array: takes
  // a free slot unless held by a user, else is held in the scheduler.
  // Nothing for a job outside a limited array.
  absl::Status JoinArraySlots(const JobRecord& rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Load: hands out the slots of every limited array among the unfinished
  // `jobs` (running and cancelling ones first, then those that ran, then by
  // id), touching no scheduler state; Load holds the queued ones.
  void PlanArraySlots(const std::vector<JobRecord>& jobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `rec` waits for a slot of its array.
  bool WaitsForArraySlot(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `rec` ended (or, with `held`, was held by a user): its slot, if any, is
  // freed for the next RefillArraySlots; an ended job leaves the array.
  void LeaveArraySlot(const JobRecord& rec, bool held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RefillArraySlots(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Scheduling (master_launch.cc).
  void StartLaunch(const StartDecision& start, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PreemptLaunch(JobId id, Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseDeferred(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TryRelease(Launch& launch, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `node`'s spare CPUs not held by another CPU-only launch's
  // live part (one whose task has not reported its end) hold `launch`'s
  // job's. O(parts on the node).
  bool SpareCpusFree(int64_t node_id, LaunchKey launch,
                     const NodeInfo& node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True while another attempt of the job may still run: a launch with a
  // part that has not ended, a live task of the job reported by an agent,
  // or (after a restart) a node of its last launch not yet heard from.
  bool EarlierAttemptMayRun(const Launch& launch, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes desired-state watchers if the table says a desired state changed
  // (LaunchTable::Touch); Commit calls it once its write is durable.
  void PublishDesired() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Desired state (master_desired.cc), assembled by the table
  // (LaunchTable::DesiredStateOf) with each StartTask filled here.
  // LaunchTable::AnswerDesired, for node `node_id`'s report naming `held`.
  v1::DesiredState AnswerDesired(int64_t node_id, uint64_t held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // LaunchTable::FillStart: false for a job no longer known.
  bool FillDesiredStart(const Launch& launch, int rank,
                        v1::StartTask* start) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillStartTask(const Launch& launch, int rank, v1::StartTask* start) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ModifyJob of a running job's time limit (master_modify.cc).
  absl::StatusOr<JobRecord> ChangeRunningTimeLimit(JobRecord& rec,
                                                   Seconds limit, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The processes of `rec`'s task on `part`'s node.
  static int ProcessesOn(const JobRecord& rec, const Part& part);
  // Launches' ports lie in [base_port, base_port + kPortWindow).
  static constexpr int kPortWindow = 10000;
  // A launch's first port before ChoosePorts moves it past others'.
  int DefaultPort(LaunchKey launch) const;

  // Agents (master_agents.cc; adoption after a restart: master_adoption.cc).
  // One agent report's task statuses, checked: those to apply, and every
  // task named (refused ones too, so that a refused report of a live task
  // does not read as the task having vanished).
  struct CheckedReports {
    std::vector<const v1::TaskStatus*> valid;
    std::set<TaskKey> present;
  };
  // Splits task reports into those to apply and those refused (each added
  // to `resp`'s `rejected` with its line): impossible fields, and launches
  // that never existed (a job id above any ever given, an attempt above
  // the job's).
  // A live task must be a part placed on this node (now, or in a launch
  // the store recorded there): an agent speaks for its own node only.
  template <typename Response>
  CheckedReports CheckReports(
      const google::protobuf::RepeatedPtrField<v1::TaskStatus>& tasks,
      const NodeRecord& node, Seconds now, Response* resp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether rank `rank` of launch (job, attempt) was ever placed on the
  // node called `node`.
  bool PlacedOn(JobId job, int attempt, int rank, const std::string& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies one agent report: each task, then the parts it no longer has
  // (ended without a status: a system stop), then its orphans. Adds the
  // acknowledgements to `resp` (a Register or Heartbeat answer).
  template <typename Response>
  void Reconcile(int64_t node_id, const CheckedReports& reports, Seconds now,
                 Response* resp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleTask(int64_t node_id, const v1::TaskStatus& task, Seconds now,
                  google::protobuf::RepeatedPtrField<v1::TaskRef>* acks)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnPartEnded(Launch& launch, const v1::TaskStatus& task, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A rank of `job` reported its traffic profile: kept if it is the job's
  // first or better (BetterProfile), stored with the job and its
  // signature, and the scheduler's job given the measured skew (Replace,
  // so that its cached placement scheme follows).
  void OnProfile(Launch& launch, const v1::TrafficProfile& profile, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A rank's usage reading kept with its part; once the part `ended`, its
  // last reading is added to the job's record (JobRecord::cpu_seconds,
  // max_memory_bytes).
  void NoteUsage(Launch& launch, const v1::TaskStatus& task, bool ended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds an ended part's last reading to its job's record (if in memory).
  void AddPartUsage(JobId job, const Part& part)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // PACKLIMIT learning (master_pack_limit.cc). Open: the runs stored, the
  // classifier fitted on them and placement given its PACKLIMIT.
  absl::Status LoadPlacementRuns() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a launch of `rec` placed `spread` (or not) runs profiled.
  bool WantsProfile(const JobRecord& rec, bool spread) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A rank of `launch` reported periodic profile `measured`: if it is the
  // launch's best, the launch's run is (re)recorded, durably.
  void RecordPlacementRun(Launch& launch, const JobProfile& measured,
                          Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Refits when new runs came in and pack_limit_refresh passed since the
  // last refit (CheckTimeouts calls it every second).
  void MaybeRefitPackLimit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the scheduler a `profiled` placer with the learnt PACKLIMIT, when
  // that is the placement and learning is on.
  absl::Status ApplyPackLimit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool LearnsPackLimit() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A part exited with kStartFailedExitCode before every part ran: the
  // others are stopped and the job waits again, or fails after
  // kMaxFailedStarts such launches in a row.
  void OnStartFailed(Launch& launch, const v1::TaskStatus& task, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every rank of a gang with a failure has ended: preempts or fails the
  // job (see Launch::first_failure). Erases `launch`.
  void ClassifyEndedGang(Launch& launch, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A launch being stopped (preempted, requeued, drained, cancelled,
  // stopped by the system) all of whose tasks had ended on their own
  // before the stop reached them: their end wins. The job ends finished
  // (every task exited 0) or failed (the first non-zero code by rank), the
  // stop's preemption is taken back, and a later attempt decided meanwhile
  // (deferred: nothing of it ran) is dropped. Erases `launch`.
  void OnOwnEndWhileStopping(Launch& launch, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An own end of a launch the master no longer holds: forgotten by a
  // restart (the job was being preempted or cancelled when the master went
  // down), or given up (its node lost, or silent past the adoption window)
  // while its task ended on its own before its lease lapsed. A node
  // reporting that such a launch (one rank, released on that node: the
  // store's launch record) ended on its own ends the unfinished job with
  // that exit, as OnOwnEndWhileStopping would have; an attempt started
  // since is stopped. The task's own end is ground truth: the job ran once.
  // True if it ended the job; the store's error if it could not read where
  // the attempt ran (then the report must not be acknowledged: the agent
  // sends it again).
  absl::StatusOr<bool> LateOwnEnd(int64_t node_id, const v1::TaskStatus& task,
                                  Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the unfinished `rec` with its tasks' own exit (`failure`: the
  // first non-zero one, as rank and code), taking back `preempted` (its
  // last stop's preemption), dropping a deferred later attempt, stopping a
  // released one (STOP_REASON_CANCEL) and taking the job out of the
  // scheduler. `why` ends the event's detail.
  void EndWithOwnExit(JobRecord& rec,
                      std::optional<std::pair<int, int>> failure,
                      bool preempted, const std::string& why, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A part of an active launch was stopped by the system, not by us (its
  // agent shut down or was fenced, or lost it): the job is preempted at
  // `end`, not failed.
  void OnSystemStop(Launch& launch, int rank, Seconds end, Seconds now,
                    const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The reported end of a preempted launch: its checkpointing time counts.
  void AccountStop(const Launch& launch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeMarkRunning(Launch& launch, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AdoptOrOrphan(int64_t node_id, const v1::TaskStatus& task, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a master restart, the jobs being adopted with a rank on the node
  // `node_id`, which registered without reporting that task (`reported`):
  // their launch cannot be adopted whole, so it is given up at once rather
  // than when the adoption window ends. A launch that was still starting
  // on that node alone never started: the job waits again (no run, no
  // preemption). Any other is stopped as StopAdopting says.
  void GiveUpAdoptionsOn(int64_t node_id, const std::set<LaunchKey>& reported,
                         Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up adopting job `id` (being adopted): what of its launch was
  // adopted is stopped, the job waits again (a preemption if it was
  // running; `why` in the event), and while the adoption window is open
  // its next attempt waits for the nodes of its launch not heard from yet
  // (RestartAdoption::Fence).
  void StopAdopting(JobId id, Seconds now, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LoseNode(int64_t node_id, Seconds now, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndAdoptionWindow(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Job control (master_jobctl.cc). CancelLocked: CancelJob without the
  // write; `timeout`: the master's stop at the job's time limit (it ends
  // kTimeout). ActLocked: one action on the unfinished job `rec`.
  absl::StatusOr<JobRecord> CancelLocked(JobId id, Seconds now, bool timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  JobActionResult ActLocked(JobAction action, JobRecord& rec, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops every running job whose executed time reached its time limit
  // (CheckTimeouts calls it every second). O(launches).
  void EnforceTimeLimits(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A job being cancelled whose last live launch has ended: it ends.
  void MaybeFinishCancel(JobId job, Seconds now, const std::string& detail)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Node set changes (master_rebuild.cc). Drained nodes' servers are
  // cordoned in the new Cluster. Jobs running on `evacuate_node` (a drain
  // with preemption; 0: none) are preempted as if they had lost it.
  absl::Status Rebuild(Seconds now, int64_t evacuate_node = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Node `node_id`, just up, joins the cluster: appended to it (its
  // servers and GPUs after the others', nothing re-numbered, no running job
  // touched), and the jobs being adopted that `reported` (the jobs of its
  // reported tasks) completes are adopted; O(its GPUs + its tasks), where
  // Rebuild is O(nodes + running jobs). Rebuilds instead for the first
  // node, a node already in the cluster, VCs, or an adoption that conflicts
  // with a launch decided meanwhile. Servers are thus in the order nodes
  // came up until the next rebuild (node id order): placement's tie-breaks
  // and a spread launch's rank order follow it.
  absl::Status JoinCluster(int64_t node_id, Seconds now,
                           std::span<const JobId> reported)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static ServerSpec ServerSpecOf(const NodeInfo& info);
  // The launch's GPUs on `cluster` (as server_of_node_ numbers its nodes)
  // into *gpus; false if a part is gone, is on `evacuate_node` (a drain
  // with preemption), or was never released to a node that is now drained
  // (it would be a new launch).
  bool MapLaunchGpus(const Cluster& cluster, const Launch& launch,
                     int64_t evacuate_node, std::vector<GpuId>* gpus) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Holds on `cluster` what the launch's job takes: its GPUs, or a CPU-only
  // job's spare CPUs on its one part's node (*server); false if they are
  // not there to hold.
  bool HoldLaunch(Cluster& cluster, JobId id, const JobSpec& spec,
                  const Launch& launch, const std::vector<GpuId>& gpus,
                  int* server) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job being adopted `id` (restart_), if every task of its launch
  // has been reported: started on `cluster` and restored to the scheduler
  // as running since its tasks' start (kAdopted); kConflict if its GPUs
  // are held.
  enum class Adoption { kAdopted, kIncomplete, kConflict };
  absl::StatusOr<Adoption> AdoptOnto(Cluster& cluster, JobId id, Seconds now,
                                     int64_t evacuate_node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The scheduler's spec of `rec` (its VC and QOS as the scheduler knows
  // them: a removed one is none).
  JobSpec SchedulerSpecOf(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Job JobFromRecord(const JobRecord& rec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Swaps the scheduler's record of job.id() for `job` and marks the job
  // dirty (GPUs in the cluster untouched).
  absl::Status ReplaceSchedulerJob(const Job& job, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's counters as the scheduler holds them, with its current run
  // restarted at `run_start` (the agents' reported start).
  Job ShiftRunStart(const Job& old, Seconds run_start) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A waiting job whose last run ended at `end` instead of at last_stop().
  Job ShiftStop(const Job& old, Seconds end) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A running job stopped at `end` (>= its run start): waiting from there,
  // with the run's time counted.
  Job StopRunAt(const Job& old, Seconds end) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A running job put back to waiting at `now` with no executed time for
  // its current run (it never really started).
  Job UndoRun(const Job& old, Seconds now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A job the scheduler just stopped whose last run never happened (its
  // launch was deferred and never started): that run's time removed; a job
  // that never ran before is as submitted.
  Job UndoStoppedRun(const Job& old) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  MasterOptions options_;
  // master_tuning.cc: the applied settings (none: the flags'), and the
  // sizes (GPU-seconds) of the last jobs that finished since, for drift.
  absl::Status LoadTuning() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Scheduler::Tuning FlagsTuning() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The flags' K queues, PROMOTEKNOB and queue order: --thresholds etc.,
  // or the configuration file's after a SIGHUP (SetFlagsTuning).
  Scheduler::Tuning flags_tuning_ ABSL_GUARDED_BY(mu_);
  void FillTuningStatus(v1::TuningStatus* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteFinishedForDrift(const JobRecord& rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<v1::StoredTuning> tuning_ ABSL_GUARDED_BY(mu_);
  std::deque<double> recent_sizes_ ABSL_GUARDED_BY(mu_);
  // The last KS test of recent_sizes_; cleared when they change, so that a
  // status or /metrics scrape does not sort 4,000 sizes again.
  std::optional<DriftTest> drift_ ABSL_GUARDED_BY(mu_);
  int64_t finished_since_drift_check_ ABSL_GUARDED_BY(mu_) = 0;
  bool drift_said_ ABSL_GUARDED_BY(mu_) = false;
  master::Clock* clock_;
  std::unique_ptr<Store> store_;

  // Guarded by mu_ (the annotations say so; scripts/check_thread_safety.sh
  // checks them).
  Mutex mu_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  // The scheme's name (options or policy default)
  std::string placement_ ABSL_GUARDED_BY(mu_);
  std::optional<PackLimitRuns> pack_runs_ ABSL_GUARDED_BY(mu_);  // set at Open
  Seconds last_pack_refit_ ABSL_GUARDED_BY(mu_){0};              // monotonic
  // Null while no node is up.
  std::unique_ptr<Cluster> cluster_ ABSL_GUARDED_BY(mu_);
  // Virtual clusters (master_vcs.cc): as admins set them; the scheduler's
  // follow them (ApplyVcs) and every cluster change.
  VcRegistry vcs_ ABSL_GUARDED_BY(mu_);
  QosRegistry qos_ ABSL_GUARDED_BY(mu_);
  absl::Status LoadQos() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LoadVcs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the scheduler the VCs on the current cluster (none without one).
  void ApplyVcs(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A running job beyond its VC's quota.
  bool Borrowing(JobId id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::unique_ptr<Cluster> empty_cluster_ ABSL_GUARDED_BY(mu_);
  // Node id -> server index.
  std::map<int64_t, int> server_of_node_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> node_of_server_ ABSL_GUARDED_BY(mu_);
  // Launches, their parts and the nodes (launch_table.h): the agent
  // protocol's records, knowing nothing of jobs.
  LaunchTable table_ ABSL_GUARDED_BY(mu_);
  // Unfinished jobs (and just-ended)
  std::map<JobId, JobRecord> records_ ABSL_GUARDED_BY(mu_);
  // What a restart leaves to settle (restart_adoption.h): the jobs being
  // adopted (by node, and those whose GPUs a rebuild found taken), the
  // waiting jobs fenced until the nodes of their last launch report in,
  // the jobs cancelled before the restart, and the adoption window.
  RestartAdoption restart_ ABSL_GUARDED_BY(mu_);
  void FinishRestartCancels(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the next Commit writes (commit_queue.h): the changed jobs (and
  // requests), node rows, events, launch records, and the launches
  // released since the last write that succeeded.
  CommitQueue to_write_ ABSL_GUARDED_BY(mu_);
  // Jobs held until their begin time, by time (WaitForBegin).
  std::set<std::pair<Seconds, JobId>> begin_waits_ ABSL_GUARDED_BY(mu_);
  // Sessions handed out are above this; it starts at a random point, so
  // that a session of an earlier master life is never taken for a current
  // one.
  uint64_t last_session_ ABSL_GUARDED_BY(mu_) = 0;
  bool pass_wanted_ ABSL_GUARDED_BY(mu_) = true;
  int64_t passes_ ABSL_GUARDED_BY(mu_) = 0;
  // Job dependencies (see WaitForDependencies): who waits, for whom, which
  // waits to check again, and how arrays waited for whole stand.
  DependencyTable deps_ ABSL_GUARDED_BY(mu_);
  // Limited arrays with unfinished jobs: which hold slots, which wait.
  ArraySlotTable array_slots_ ABSL_GUARDED_BY(mu_);
  // Arrays stored as one record with jobs not yet written (their jobs are
  // pending to every read; the scheduler sees only the written ones).
  ArraySplits splits_ ABSL_GUARDED_BY(mu_);
  // Pending reasons by job as of pass reasons_pass_ (-1: none): a cache
  // of reads, filled by FillPendingReason, reset by Rebuild.
  mutable std::map<JobId, PendingReason> reasons_ ABSL_GUARDED_BY(mu_);
  mutable int64_t reasons_pass_ ABSL_GUARDED_BY(mu_) = -1;
  double pass_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  // For metrics: jobs ever accepted, and over ended jobs only the count by
  // final state and the summed preemptions and promotions (loaded at Open,
  // kept by SubmitJob and Commit).
  JobTotals ended_ ABSL_GUARDED_BY(mu_);

  // Guarded by auth_mu_ (a leaf: never held while taking mu_).
  Mutex auth_mu_;
  std::map<int64_t, TokenRecord> tokens_ ABSL_GUARDED_BY(auth_mu_);
  AuditRateLimit audit_limit_ ABSL_GUARDED_BY(auth_mu_){
      kAuditRefusalsPerSecond};
  // Writes `records` to the store and stderr (no lock held).
  void WriteAudit(const std::vector<AuditRecord>& records);
  absl::Status LoadTokens();  // takes auth_mu_

  // Watchers of desired states (WatchDesiredState) and of events
  // (WatchEvents): bumped inside mu_, waited on outside it.
  Generation desired_changes_;
  Generation events_written_;
  void EventsWritten();  // bumps events_written_

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
    // A job array (spec.array): every job's id in index order; `id` is the
    // first, the array's id. Empty for one job.
    std::vector<JobId> array_job_ids;

    bool operator==(const SubmitResult&) const = default;
  };
  // Accepts a job once it is durable (see "Submissions" above). A spec
  // with an array makes one job per index, written as SubmitJobs writes,
  // all or none (job I of the array stored with the request id
  // "<request_id>#<I>"). The spec
  // and `request_id` (empty: none) are validated first, before queueing;
  // then InvalidArgument as for SubmitJob(spec), AlreadyExists for a
  // request id used before with another spec (naming that job), or the
  // store's error for the whole batch. Blocks while another batch is being
  // written; thread-safe.
  absl::StatusOr<SubmitResult> SubmitJob(const JobRequest& spec,
                                         std::string_view request_id);

  struct BulkSubmitResult {
    std::vector<JobId> ids;  // one per spec, in order
    // `request_id` named a request accepted before: `ids` are its jobs.
    bool existing = false;
  };
  // Accepts `specs` together, all or none (SubmitJobs), once durable: every
  // spec is validated (and fitted to the cluster) before anything is
  // queued, then they are written in one transaction of their own, in
  // turn with the other submissions. Job I is stored with the request id
  // "<request_id>#<I>" (none if `request_id` is empty). InvalidArgument for
  // the first spec refused, "jobs[I].field: ..." (or "jobs: ..." for none,
  // or more than job_limits::kMaxJobsPerSubmission; "jobs[I].array" for a
  // spec with an array: arrays go through SubmitJob); AlreadyExists
  // "jobs[I]: ..."; or the store's error; nothing is created on any error.
  // Thread-safe.
  absl::StatusOr<BulkSubmitResult> SubmitJobs(
      const std::vector<JobRequest>& specs, std::string_view request_id);

  // Which jobs ListJobsPage returns: every condition given holds.
  struct JobListQuery {
    // As shown: kStarting matches jobs whose launch is in progress (from
    // memory); kPending and kPreempted exclude them.
    std::optional<JobRecordState> state;
    // Or any of these (`jobs --state running,failed`); with `state`, one
    // of both.
    std::vector<JobRecordState> any_of;
    JobId after_id = 0;               // only ids > after_id (the page cursor)
    std::optional<std::string> user;  // exactly
    std::optional<std::string> name;  // exactly
    std::optional<Seconds> submitted_since;  // submit_time >= this
    std::optional<Seconds> ended_since;      // end_time >= this
    std::optional<Seconds> ended_before;     // end_time < this
    std::optional<JobId> array_id;           // jobs of this array
    std::optional<std::string> vc;           // jobs of this VC (spec.vc)
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
  CommitStats commit_stats();

 private:
  // One SubmitJob call waiting in submit_queue_ (lives on its caller's
  // stack until `done`).
  struct SubmitWriter {
    const JobRequest* spec = nullptr;
    std::string_view request_id;
    absl::StatusOr<SubmitResult> result;
    // A SubmitJobs request instead (spec unset): written alone, all or
    // nothing.
    std::vector<NewJob>* bulk = nullptr;  // moved from by the leader
    absl::StatusOr<BulkSubmitResult> bulk_result;
    // Written and read under submit_mu_ (not annotated: the lock is the
    // MasterState's, not the writer's).
    bool done = false;
    SteadyCondVar cv;  // signalled under submit_mu_
  };
  // Queues `self` and waits until a leader wrote it, or leads: writes the
  // writers at the queue's front (a bulk one alone) and wakes them.
  void QueueAndWrite(SubmitWriter& self);
  // The leader's work for a bulk writer: one all-or-nothing transaction.
  void WriteBulk(SubmitWriter& writer);
  // SubmitJob of a validated spec with an array: its jobs written as one
  // bulk writer, in index order, the first starting the array.
  absl::StatusOr<SubmitResult> SubmitArray(const JobRequest& spec,
                                           std::string_view request_id);
  // Puts a job the store just created into memory and the scheduler.
  // Requires mu_.
  absl::Status AdmitLocked(NewJob job, const CreatedJob& created, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rest of AdmitLocked, for a record the store holds (also a job just
  // split off its array): into records_ and the scheduler, with its begin
  // time, array slot and dependencies. Counts nothing.
  // `queue_position`: its place in the scheduler's queue (Job::
  // queue_position); none: the back.
  absl::Status AdmitRecordLocked(
      JobRecord rec, Seconds now,
      std::optional<double> queue_position = std::nullopt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Arrays stored as one record (master_array_split.cc). The array of
  // `head` joins splits_ if its jobs are not all written; its unwritten
  // jobs count as unfinished jobs of the array.
  // Its jobs join the scheduler's queue after what has joined it so far.
  void AddSplittingLocked(const JobRecord& head)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the array's jobs through position split_to - 1
  // (Store::SplitArray) and admits them. If the write fails nothing
  // changed; a job that cannot be admitted (a broken invariant) is logged
  // and its error returned, the others admitted.
  absl::Status SplitArrayLocked(JobId array_id, int split_to, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // If `job` is an unwritten job of an array, splits its array through it
  // (and the jobs before it), so that it is a job in memory like any other.
  absl::Status SplitThroughLocked(JobId job, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Before and after a pass: each array not submitted held keeps enough of
  // its jobs written and waiting for the pass to start as many as the
  // cluster could run (SplitWindow); true if any job was split off.
  bool TopUpSplitsLocked(Seconds now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A job a retried request id named (`created.existing`) that the store
  // holds unfinished but memory does not: its first submission committed
  // and was answered with an error (an acknowledgement lost after the
  // commit). Admits it as stored; does nothing for any other job. Requires
  // mu_; reads the store only for an existing job not in memory.
  absl::Status AdmitIfLostLocked(NewJob job, const CreatedJob& created)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // InvalidArgument if the up nodes have fewer GPUs than `spec` asks for.
  // Takes mu_.
  absl::Status CheckFitsCluster(const JobRequest& spec);
  // master_notify.cc: spec.notify goes where this master may send
  // (options_.notify_hosts, a sendmail); InvalidArgument naming it.
  absl::Status CheckNotifyAllowed(const JobRequest& spec) const;
  // Notifications for the events just written (Commit), and admins' for a
  // node: queued in outbox_ for TakeNotifications.
  void QueueJobNotifications(const std::vector<JobEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueTimeLimitNotification(const JobRecord& rec, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueAdminNotification(std::string_view event, const std::string& node,
                              const std::string& detail, Seconds now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Notification> outbox_ ABSL_GUARDED_BY(mu_);
  // Jobs (and attempts) told their time limit is near, so once each.
  std::set<std::pair<JobId, int>> time_limit_told_ ABSL_GUARDED_BY(mu_);
  // The leader's work: writes `batch` in one transaction, then (under mu_)
  // admits the new jobs and sets every writer's result. Holds no lock but
  // the store's own during the write.
  void WriteSubmitBatch(const std::vector<SubmitWriter*>& batch);
  // After admitting new jobs (requires mu_): checks those with
  // dependencies and writes what that changed.
  void CommitDependencies() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ListJobsPage for kStarting: from the launches in memory.
  JobPage ListStartingJobs(const JobListQuery& query);

  // Never held together with mu_ (the leader takes them in turn).
  Mutex submit_mu_;
  std::deque<SubmitWriter*> submit_queue_ ABSL_GUARDED_BY(submit_mu_);
  SubmitStats submit_stats_ ABSL_GUARDED_BY(submit_mu_);
  size_t last_submit_batch_ ABSL_GUARDED_BY(submit_mu_) = 0;

  // Heartbeats' reports, committed together (Heartbeat, Commit).
  GroupCommit reports_ ABSL_GUARDED_BY(mu_);
  CommitStats commit_stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_MASTER_STATE_H_
