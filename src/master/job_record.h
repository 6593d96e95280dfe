// The master's records of jobs, their events and nodes: plain values, as the
// store keeps them and the RPC layer converts them (proto_convert.h). Free of
// gRPC and SQLite so that either side can change alone.
//
// All instants are Unix seconds (`Seconds` since the epoch), durations are
// `Seconds`, attained service is GPU-seconds.
#ifndef TIRESIAS_MASTER_JOB_RECORD_H_
#define TIRESIAS_MASTER_JOB_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dependency.h"
#include "core/job.h"
#include "core/job_array.h"
#include "core/time.h"
#include "core/warn_signal.h"

namespace tiresias {

// JobRequest::io, as proto IoMode numbers them.
inline constexpr int kIoNone = 0;
inline constexpr int kIoPipes = 1;
inline constexpr int kIoPty = 2;

// What a user asked to run (proto JobSpec). Never changes after submission.
struct JobRequest {
  std::string name;  // free-form label; may be empty
  std::string user;  // who submitted it; informational
  int num_gpus = 1;  // all at once (gang)
  std::vector<std::string> command;           // argv, argv[0] first
  std::map<std::string, std::string> env;     // extra environment
  std::string checkpoint_dir;                 // TIRESIAS_CHECKPOINT_DIR
  std::string model;  // model name hint for placement; empty if unknown
  // Where the tasks start (absolute); empty: the agent's own folder.
  std::string workdir;
  // Path patterns (output_pattern.h) of the files the tasks' stdout and
  // stderr are also appended to; empty: none (error: with stdout).
  std::string output;
  std::string error;
  // Limit on the job's executed time summed over its attempts; 0: none.
  // Past it the master stops the job and it ends kTimeout.
  Seconds time_limit{0};
  // Never preempted by the scheduler once started (JobSpec::no_preempt).
  bool no_preempt = false;
  // Submitted held (JobRecord::held starts true).
  bool hold = false;
  // Runs only once these are met (core/dependency.h); stored.
  std::vector<JobDependency> dependencies;
  // Submitted as a job array (core/job_array.h): every job of the array
  // stores the same spec, this included (its running limit survives a
  // master restart). Empty indices: not an array.
  JobArraySpec array;
  // Its shape (JobSpec.nodes, gpus_per_node): exactly `nodes` nodes with
  // `gpus_per_node` GPUs each (num_gpus is their product); 0 and 0: any
  // spread the placement scheme picks.
  int nodes = 0;
  int gpus_per_node = 0;
  // Processes per node (JobSpec.tasks_per_node); 0: one per GPU there.
  int tasks_per_node = 0;
  // A signal before the time limit (JobSpec.signal); signal 0: none.
  WarnSignal warn;
  // Which nodes may run it (JobSpec.gpu_type, constraint, nodelist,
  // exclude; core/node_filter.h): all empty, any.
  std::string gpu_type;
  std::string constraint;
  std::vector<std::string> nodelist;
  std::vector<std::string> exclude;
  // CPUs and memory with each GPU (JobSpec.cpus_per_gpu, mem_per_gpu_mib):
  // placed only where each GPU's slice holds them; 0: the node's default.
  int cpus_per_gpu = 0;
  int64_t mem_per_gpu_mib = 0;
  // Its nodes run nothing else (JobSpec.exclusive).
  bool exclusive = false;
  // A CPU-only job (num_gpus 0; JobSpec.cpus, mem_mib): the CPUs and
  // memory it needs on one node's spare CPUs; mem_mib 0: a per-CPU share.
  int cpus = 0;
  int64_t mem_mib = 0;
  // Its virtual cluster (JobSpec.vc); "" on a master without VCs.
  std::string vc;
  // Its priority level (JobSpec.qos); "" none.
  std::string qos;
  // An interactive job (JobSpec.io): 0 none, 1 pipes, 2 a pty; and the
  // seconds its tasks may run with nobody attached (0: kDefaultIoGrace).
  int io = 0;  // kIoNone, kIoPipes, kIoPty
  double io_grace_seconds = 0;
  std::string image;  // JobSpec.image; empty: no container
  // JobSpec.notify and notify_on: where and on which events the master
  // sends notifications (notifier.h).
  std::string notify;
  std::vector<std::string> notify_on;
  // Not started before this instant (JobSpec.begin_time); 0: none.
  Seconds begin{0};

  bool cpu_only() const { return num_gpus == 0; }
  bool operator==(const JobRequest&) const = default;
};

// A job's traffic as the traffic profiler measured it (proto
// TrafficProfile). The per-iteration figures are set only when periodic.
struct JobProfile {
  bool periodic = false;
  std::optional<double> tensor_skew;  // largest message / iteration, [0, 1]
  std::optional<double> iteration_s;
  std::optional<double> bytes_per_iteration;
  std::optional<double> messages_per_iteration;
  JobId measured_job_id = 0;  // the job it was measured on

  bool operator==(const JobProfile&) const = default;
};

// Whether `a` should replace `b` as a job's profile: periodic beats not;
// among periodic ones, more bytes per iteration (in a parameter-server job,
// each rank may report: the worker sends every tensor, so it has the most).
bool BetterProfile(const JobProfile& a, const JobProfile& b);
// The skew placement may use: set only for a periodic profile.
std::optional<double> PlacementSkew(const std::optional<JobProfile>& profile);
// What the scheduling core sees of job `id` (core/job.h): its GPUs, shape,
// model, preemptibility, and the skew of `profile`. The one conversion, at
// admission and when the scheduler is rebuilt from the records.
JobSpec CoreJobSpec(JobId id, const JobRequest& spec, Seconds submit_time,
                    const std::optional<JobProfile>& profile);
// The node filter of `spec` (its gpu_type, constraint, nodelist, exclude);
// null when it has none.
std::shared_ptr<const NodeFilter> NodeFilterOf(const JobRequest& spec);
// JSON text of a profile (the store's column) and back; InvalidArgument
// when `text` is not such JSON.
std::string EncodeProfile(const JobProfile& profile);
absl::StatusOr<JobProfile> DecodeProfile(std::string_view text);

// What makes two submissions "the same job" for the profile: its name,
// command and GPU count (SHA-256, hex; not the environment, which may hold
// per-submission values). A re-submitted job with the same
// signature starts with the profile measured before.
std::string JobSignature(const JobRequest& spec);

// The master's view of a job's life. Richer than the core's JobState: the
// core only needs "finished", the master says how.
enum class JobRecordState {
  kPending,    // accepted, never ran
  kRunning,    // every task of its current launch reported running
  kPreempted,  // ran, stopped to yield its GPUs, waiting to resume
  kFinished,   // every task exited 0
  kFailed,     // a task exited non-zero
  kCancelled,  // cancelled by a user
  // Decided to run, its tasks not all running yet (or its GPUs not yet freed
  // by a preempted job). Never stored: a view of a launch in progress, which
  // lives in the master's memory only. The store holds such a job as pending
  // or preempted (what it reverts to if the launch is lost, e.g. at a master
  // restart); MasterState shows it as starting on reads.
  kStarting,
  // Stopped by the master at its time limit (JobRequest::time_limit).
  kTimeout,
};

// "pending", "starting", "running", ... (also the store's on-disk spelling
// of the stored states).
std::string_view JobRecordStateName(JobRecordState state);
// The inverse of JobRecordStateName; InvalidArgument naming `text` else.
absl::StatusOr<JobRecordState> ParseJobRecordState(std::string_view text);
// Finished, failed, cancelled or timeout. Pending, starting, running and
// preempted jobs are unfinished.
bool IsFinal(JobRecordState state);

// The life of a stored job's state, one table of legal moves:
//   pending   -> pending, running, preempted, or an end
//   running   -> preempted, or an end
//   preempted -> preempted, running, pending (it never ran: preempted while
//                starting, then its next start failed), or an end
// where an end is finished, failed, cancelled or timeout. An ended job never
// moves again (it must never run again), and nothing moves to kStarting
// (a view of reads, never stored).
bool LegalJobMove(JobRecordState from, JobRecordState to);
// FailedPrecondition "job <id>: illegal move <from> -> <to>" unless
// legal; on OK, `state` is `to`.
absl::Status MoveJobState(JobRecordState& state, JobRecordState to, int64_t id);

// What happened to a job, as its event says (JobEvent::kind): one lowercase
// word each, the same in the store, the API and JSON.
enum class EventKind {
  kSubmitted,
  kStarted,
  kResumed,
  kAdopted,
  kPreempted,
  kPromoted,
  kDemoted,
  kProfiled,
  kRankFailed,
  kStartFailed,
  kNodeDown,
  kDrain,
  kHeld,
  kReleased,
  kRequeued,
  kDependency,
  kModified,  // ModifyJob changed its request
  kBegin,     // its begin time came (JobSpec.begin_time)
  kCancelling,
  kTimingOut,
  // A job's end: the word of its final state.
  kFinished,
  kFailed,
  kCancelled,
  kTimeout,
};
// "submitted", "started", ... "rank_failed", ...
std::string_view EventKindName(EventKind kind);
// The event that ends a job in final state `state` (IsFinal).
EventKind EndEventKind(JobRecordState state);

// One thing that happened to a job.
struct JobEvent {
  JobId job_id = 0;
  // Position in the store's global event log, assigned by the store when
  // the event is written (ignored on write); strictly increasing.
  int64_t sequence = 0;
  Seconds time{0};     // when it happened (Unix seconds)
  std::string kind;    // one lowercase word: "submitted", "started", ...
  std::string detail;  // human-readable; may be empty

  bool operator==(const JobEvent&) const = default;
};

// A job as the master records it (proto Job).
struct JobRecord {
  JobId id = 0;  // assigned by the store: > 0, increasing, never reused
  JobRequest spec;
  JobRecordState state = JobRecordState::kPending;
  int queue = 0;  // 0 = highest priority
  // num_gpus x executed: what the queues are decided on.
  double attained_gpu_seconds = 0;
  Seconds executed{0};        // run since submission or last promotion
  Seconds total_executed{0};  // run over its whole life
  Seconds submit_time{0};
  std::optional<Seconds> first_start_time;  // nullopt: never ran
  std::optional<Seconds> end_time;          // nullopt: unfinished
  // Last stop, or submission, or last promotion: waiting is measured from
  // here.
  Seconds last_stop_time{0};
  int preemptions = 0;
  int promotions = 0;
  int restarts = 0;  // starts after having run (TIRESIAS_RESTART_COUNT)
  int attempt = 0;   // number of the current or last launch; 0: never
  // The attempt whose launch was released to its agents and not stopped,
  // as of the record's last write (MasterState::Commit); 0: none. A
  // restarted master adopts that launch from the agents' reports, also one
  // still starting (stored pending or preempted), rather than start the job
  // again beside it. Stored.
  int live_attempt = 0;
  // Launches in a row whose gang start failed (a part exited
  // MasterState::kStartFailedExitCode before every part ran); back to 0
  // once a launch has fully run. Stored, so that a master restart does not
  // forget it: the job fails at MasterState::kMaxFailedStarts.
  int failed_starts = 0;
  // A user cancelled it while its tasks still ran: it ends cancelled once
  // they have stopped, also if the master restarts meanwhile.
  bool cancel_requested = false;
  // With cancel_requested: the stop is the master's, at the job's time
  // limit; it ends kTimeout rather than kCancelled.
  bool timeout_requested = false;
  // Held by a user: waits and is never started until released. Stored.
  bool held = false;
  // Some of spec.dependencies are not met yet: kept out of the scheduler
  // (as a held job is) until they are. Not stored: MasterState works it
  // out from the dependencies when it loads or admits the job.
  bool waiting_on_dependencies = false;
  // A job of an array (spec.array): the array's id (its first job's) and
  // its index; 0 and 0 outside one. Written once, at creation.
  JobId array_id = 0;
  int array_index = 0;
  // The first job of an array stored as one record (Store::SplitArray):
  // the array's job count, and how many of its jobs are written (the
  // others exist only as this count); 0 and 0 otherwise. Stored.
  int array_count = 0;
  int array_split = 0;
  std::vector<std::string> nodes;  // node names it runs (or last ran) on
  std::optional<int> exit_code;
  // What its ended tasks used (proto Job.cpu_seconds, max_memory_bytes):
  // CPU time summed, the largest memory peak. Stored; reads add the
  // running tasks' latest readings (MasterState::LiveView).
  double cpu_seconds = 0;
  int64_t max_memory_bytes = 0;
  // The client's idempotency key it was submitted with
  // (SubmitJobRequest.request_id); empty if none. Written once, at creation.
  std::string request_id;
  // Its traffic profile, once measured or inherited (by signature); the
  // store writes it only with Store::SaveProfile.
  std::optional<JobProfile> profile;
  // History, oldest first. Filled by Store::GetJob; empty from ListJobs and
  // ignored by writes (events are appended, never rewritten).
  std::vector<JobEvent> events;
  // Why it waits (sched/pending_reason.h), as reads show it: never stored;
  // MasterState's reads fill it for a waiting (or deferred starting) job.
  // `pending_reason_kind` is a PendingReasonKind value, 0 for none.
  std::string pending_reason;
  int pending_reason_kind = 0;
  // A running job beyond its VC's quota (Job.borrowing); never stored.
  bool borrowing = false;

  bool operator==(const JobRecord&) const = default;
};

// Whether a restarted master must take the job's current launch to be live
// on its agents, to adopt and never to start beside: stored running, or
// stored starting (pending or preempted) with that launch released
// (live_attempt).
bool StoredAsLive(const JobRecord& rec);

// About the size of the job in an RPC message, in bytes: its strings plus a
// few bytes of framing each, and its numbers. For cutting pages of jobs to
// a byte budget (Store::QueryJobs); never below the strings' total.
int64_t ApproxEncodedBytes(const JobRecord& job);

enum class NodeState { kUp, kDown };

std::string_view NodeStateName(NodeState state);  // "up", "down"
absl::StatusOr<NodeState> ParseNodeState(std::string_view text);

// A GPU server as the master last heard of it.
struct NodeRecord {
  int64_t id = 0;       // assigned by the store on first upsert of the name
  std::string name;     // unique
  std::string address;  // host[:port] its job processes are reached at
  int gpus = 0;
  NodeState state = NodeState::kUp;
  Seconds last_heartbeat{0};  // Unix seconds, master's clock
  // SHA-256 (hex) of the token of the agent that last registered it (the
  // agent protocol's identity; the store keeps it as given). Empty: none.
  std::string agent_token_hash;
  // Drained by an admin (no new launches) and why. UpsertNode leaves both
  // as stored; SetNodeDrain writes them.
  bool drained = false;
  std::string drain_reason;

  bool operator==(const NodeRecord&) const = default;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_JOB_RECORD_H_
