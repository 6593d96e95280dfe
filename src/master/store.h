// The master's durable state: jobs, their event histories and nodes.
//
// `Store` is the interface the master codes against and takes from outside
// (MasterState::Open), so that a replicated backend (etcd) can serve a
// highly available master later and tests can make writes fail on purpose
// (FaultStore, fault_store.h); `SqliteStore` (sqlite_store.h) is the
// embedded default, one SQLite file in WAL mode. Every write is durable
// (on disk, fsync'ed) when the call returns OK: a job id the client has seen
// survives a crash of the master or the machine. A write that fails is
// rolled back; only one whose commit failed at the fsync may still reach the
// disk, so a caller acknowledges nothing whose write failed, and does not
// count on its absence either.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
//                    SqliteStore::Open(state_dir + "/state.db"));
//   ASSIGN_OR_RETURN(JobId id, store->CreateJob(request, now));
//   ASSIGN_OR_RETURN(auto created, store->CreateJobs({{a, "req-1"}, {b, ""}},
//                                                    now));
//   record.state = JobRecordState::kRunning;
//   RETURN_IF_ERROR(store->UpdateJob(record, {{id, 0, now, "started", ""}}));
//
// Methods never throw; implementations are thread-safe (SqliteStore: one
// internal mutex, calls serialized, each write costs one fsync; CreateJobs
// writes a whole batch of submissions with one).
#ifndef TIRESIAS_MASTER_STORE_H_
#define TIRESIAS_MASTER_STORE_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "master/auth_records.h"
#include "master/cluster_history.h"
#include "master/job_record.h"
#include "master/qos_record.h"
#include "master/vc_record.h"
#include "place/pack_limit_runs.h"

namespace tiresias {

// Counts over every job ever stored (for metrics).
struct JobTotals {
  std::map<JobRecordState, int64_t> by_state;  // stored states only
  int64_t jobs = 0;         // all of them
  int64_t preemptions = 0;  // sum of JobRecord::preemptions
  int64_t promotions = 0;   // sum of JobRecord::promotions
  double cpu_seconds = 0;   // sum of JobRecord::cpu_seconds
  JobId max_id = 0;         // the highest job id ever given; 0: none
};

// Where one launch of a job ran: the node name of each rank, rank order.
struct LaunchRecord {
  JobId job_id = 0;
  int attempt = 0;
  std::vector<std::string> nodes;

  bool operator==(const LaunchRecord&) const = default;
};

// Several job updates and events written at once (e.g. everything one
// scheduling pass decided): all of it is stored, or none of it.
struct StoreWrite {
  // Each replaces the mutable fields of the job with its id (state, queue,
  // attained, executed, times, counts, failed starts, nodes, exit code).
  // `spec`, `id`, `submit_time` and `events` are not written. A state of
  // kStarting is refused (InvalidArgument): it is never stored.
  std::vector<JobRecord> jobs;
  // Appended after the updates, in this order; `sequence` is assigned.
  std::vector<JobEvent> events;
  // Launches to record (a launch is written once, when it is decided).
  std::vector<LaunchRecord> launches;
  // Node rows to write as UpsertNode does (by name; a new row takes `id`
  // if set; `drained` and `drain_reason` not written), in the same
  // transaction: a registration's row goes with the jobs it adopted.
  std::vector<NodeRecord> nodes;
  // Jobs of `jobs` whose request changed (MasterState::ModifyJob): their
  // `spec` is written too. An id not in `jobs`: InvalidArgument.
  std::set<JobId> new_specs;
};

// A launch's measured speed (Store::AddPlacementRun).
struct PlacementRunRecord {
  JobId job = 0;
  int attempt = 0;
  Seconds time{0};  // when it was measured
  PlacementRun run;
};

// One job for Store::CreateJobs.
struct NewJob {
  JobRequest spec;
  // The client's idempotency key (SubmitJobRequest.request_id); empty:
  // none. Unique per spec.user: another user's same key is another job.
  std::string request_id;
  // A job of an array (spec.array): its index. The array's jobs follow one
  // another in a batch, the first with `starts_array`: its id becomes the
  // array's id (JobRecord::array_id), stored with every job of the array.
  // Every job of an array has the first's spec: the store may encode it
  // and look its profile up once.
  std::optional<int> array_index;
  bool starts_array = false;
  // An array stored as one record (SubmitArray): this job, the array's
  // first (`starts_array`), stands for all `array_count` of its jobs. The
  // ids after it, through id + array_count - 1, are kept for the others,
  // which exist only as that count (they are read, listed and counted as
  // pending jobs) until SplitArray writes them. 0: an ordinary job.
  int array_count = 0;
};

// What became of one NewJob.
struct CreatedJob {
  JobId id = 0;
  // Its request_id named a job stored before (or earlier in the batch):
  // `id` is that job's and nothing was written for this one.
  bool existing = false;
  // The profile it starts with: the last one measured of a job with its
  // signature (JobSignature), if any; unset when `existing`.
  std::optional<JobProfile> profile;
  // For a job of an array: the array's id (its first job's); else 0.
  JobId array_id = 0;
  // For the first job of an array stored as one record: its job count
  // (the array's ids are id .. id + array_count - 1); else 0.
  int array_count = 0;
};

// Which jobs Store::QueryJobs returns: every condition given holds.
struct JobQuery {
  // Only jobs stored in one of these states; empty: any. (kStarting is
  // never stored, so it matches nothing.)
  std::vector<JobRecordState> states;
  JobId after_id = 0;               // only ids > after_id (the page cursor)
  std::optional<std::string> user;  // exactly this user
  std::optional<std::string> name;  // exactly this name
  std::optional<Seconds> submitted_since;  // submit_time >= this
  // An unfinished job (no end_time) matches neither.
  std::optional<Seconds> ended_since;   // end_time >= this
  std::optional<Seconds> ended_before;  // end_time < this
  std::optional<JobId> array_id;        // jobs of this array only
  std::optional<std::string> vc;        // jobs of this VC (spec.vc) only
  int64_t limit = -1;  // at most this many jobs; < 0: no limit
  // The page stops before the job that would take the sum of
  // ApproxEncodedBytes past this, but always holds at least one job;
  // < 0: no limit.
  int64_t max_bytes = -1;
};

// A page of QueryJobs.
struct JobPage {
  std::vector<JobRecord> jobs;  // id order, events empty
  // True if a job after the last one matches too (the page was cut by
  // limit or max_bytes): ask again with after_id = the last id.
  bool more = false;
};

class Store {
 public:
  virtual ~Store() = default;

  // Records new pending jobs submitted at `submit_time`, each with a
  // "submitted" event, in ONE transaction (one fsync for the batch), and
  // says what became of each, in order. New ids are greater than every id
  // this store ever returned, also across restarts, and follow the batch's
  // order. Request ids are scoped to the job's user (spec.user): a job
  // whose request_id names a stored job of the same user (or one earlier
  // in the batch) is not written again: with the same spec it gets that job's
  // id and `existing`; with another spec, AlreadyExists naming that job
  // (refused alone). The outer status fails (and nothing is written) when
  // the transaction does, or for a non-finite `submit_time`. Specs are
  // stored as given, their strings as bytes; the caller validates them.
  virtual absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> CreateJobs(
      const std::vector<NewJob>& jobs, Seconds submit_time) = 0;

  // CreateJobs, all or nothing (SubmitJobs): if any job cannot be stored
  // (AlreadyExists as above), nothing is written and the
  // error is that job's, its message starting "jobs[I]: " (I its index in
  // `jobs`). Otherwise what became of each job, in order.
  virtual absl::StatusOr<std::vector<CreatedJob>> CreateJobsAllOrNothing(
      const std::vector<NewJob>& jobs, Seconds submit_time) = 0;

  // A batch of one job without a request id: its id.
  absl::StatusOr<JobId> CreateJob(const JobRequest& spec, Seconds submit_time);

  // Applies `write` in one transaction. NotFound (and nothing written) if
  // any job or event names a job that does not exist.
  virtual absl::Status Write(const StoreWrite& write) = 0;

  // One job's update plus its events, atomically.
  absl::Status UpdateJob(const JobRecord& record,
                         std::vector<JobEvent> events = {}) {
    return Write(StoreWrite{{record}, std::move(events)});
  }
  absl::Status AppendEvent(JobId job, Seconds time, std::string kind,
                           std::string detail) {
    return Write(StoreWrite{
        {}, {JobEvent{job, 0, time, std::move(kind), std::move(detail)}}});
  }

  // The job with its event history; NotFound if there is none.
  virtual absl::StatusOr<JobRecord> GetJob(JobId id) const = 0;
  // One page of the jobs `query` selects, in id order, without events;
  // filtered and cut by the database, so its cost follows the page, not
  // the store (indexed by id, and by state, user and name).
  virtual absl::StatusOr<JobPage> QueryJobs(const JobQuery& query) const = 0;
  // Every job in id order, without events; only those in `state` if given.
  absl::StatusOr<std::vector<JobRecord>> ListJobs(
      std::optional<JobRecordState> state = std::nullopt) const;
  // Pending, running and preempted jobs in id order, without events: what a
  // restarted master reloads into its scheduler.
  virtual absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() const = 0;
  // The job's events, oldest first; NotFound if there is no such job.
  virtual absl::StatusOr<std::vector<JobEvent>> Events(JobId job) const = 0;

  // Arrays stored as one record (NewJob::array_count). The jobs of such an
  // array that are not written yet (positions array_split .. array_count-1
  // of its first job's record) are still jobs to every read: GetJob,
  // QueryJobs and Totals show each as a pending job that never ran (held
  // if the array was submitted held), with the array's spec, submit time
  // and request id ("<base>#<position>"), its index from the spec's
  // indices, and the one event "submitted".
  //
  // SplitArray writes the array's jobs at positions [array_split,
  // split_to) as CreateJobs would have, in one transaction with the
  // array's new array_split, and returns the jobs at positions [from,
  // split_to) (the caller's own count of written jobs: those written by a
  // split whose answer was lost come back too), as stored, in id order,
  // without events. NotFound if `array_id` is no array stored as one
  // record; InvalidArgument for a split_to past array_count.
  virtual absl::StatusOr<std::vector<JobRecord>> SplitArray(JobId array_id,
                                                            int from,
                                                            int split_to) = 0;
  // The first jobs of arrays with jobs not written yet (array_split <
  // array_count), ended or not, in id order, without events, each with the
  // array's spec as submitted (what its unwritten jobs are made with), not
  // the first job's own, which `update` may have changed.
  virtual absl::StatusOr<std::vector<JobRecord>> ListSplittingArrays()
      const = 0;
  // Every job's events with sequence > `after_sequence`, oldest first, at
  // most `limit` of them (for a watcher catching up).
  virtual absl::StatusOr<std::vector<JobEvent>> EventsAfter(
      int64_t after_sequence, int limit) const = 0;

  // Counts by state and summed counters over all jobs, in one query.
  virtual absl::StatusOr<JobTotals> Totals() const = 0;

  // The node of each rank of one launch, rank order; empty if the launch
  // is not recorded (it never was decided, or predates schema version 3).
  virtual absl::StatusOr<std::vector<std::string>> LaunchNodes(
      JobId job, int attempt) const = 0;

  // Inserts the node, or updates the one with the same name; returns its
  // id (stable for the name). A new row's id is `node.id` if set (the
  // master's next, which must be free), else the next; a row of this name
  // keeps its own. `drained` and `drain_reason` are ignored (a new node is
  // not drained; an agent registering again never undoes a drain):
  // SetNodeDrain writes those.
  virtual absl::StatusOr<int64_t> UpsertNode(const NodeRecord& node) = 0;
  // Drains node `id` with `reason` (drained) or takes it back into service
  // (reason ignored, stored empty). NotFound for an unknown id.
  virtual absl::Status SetNodeDrain(int64_t id, bool drained,
                                    const std::string& reason) = 0;
  // Every node in id order.
  virtual absl::StatusOr<std::vector<NodeRecord>> ListNodes() const = 0;

  // Tokens and the audit log (store_security.cc). CreateToken stores
  // `token` (its id ignored) and returns the id it was given; RevokeToken
  // marks it revoked at `at` (NotFound if there is no such token; a second
  // revocation keeps the first time); ListTokens returns every token in id
  // order, revoked ones included.
  virtual absl::StatusOr<int64_t> CreateToken(const TokenRecord& token) = 0;
  virtual absl::Status RevokeToken(int64_t id, Seconds at) = 0;
  virtual absl::StatusOr<std::vector<TokenRecord>> ListTokens() const = 0;
  // Appends `record` (its sequence ignored); AuditAfter returns the records
  // with sequence > `after`, oldest first, at most `limit`. Text is written
  // and returned escaped and bounded (SanitizedAuditRecord, audit_text.h),
  // also a row written raw before: one bad field never hides the log.
  virtual absl::Status AppendAudit(const AuditRecord& record) = 0;
  virtual absl::StatusOr<std::vector<AuditRecord>> AuditAfter(
      int64_t after, int limit) const = 0;

  // Stores `profile` as job `job`'s (JobRecord::profile; UpdateJob leaves
  // it alone) and as the last measured for `signature` (JobSignature of its
  // spec), which jobs created later with that signature start with. One
  // transaction; NotFound if there is no such job.
  virtual absl::Status SaveProfile(JobId job, const std::string& signature,
                                   const JobProfile& profile) = 0;

  // A launch's measured speed with its placement (one row per job and
  // attempt: a second for the same launch replaces the first), and every
  // one stored, oldest first: what the master's PACKLIMIT is learnt from
  // (place/pack_limit_runs.h). InvalidArgument for an empty signature or
  // a non-finite number.
  virtual absl::Status AddPlacementRun(const PlacementRunRecord& run) = 0;
  virtual absl::StatusOr<std::vector<PlacementRunRecord>> ListPlacementRuns()
      const = 0;

  // The cluster's history (cluster_history.h; store_history.cc). Adds
  // `sample` and prunes the table to `retention`, in one transaction; a
  // sample at a time already stored replaces it. InvalidArgument for a
  // non-finite time or a negative count. ClusterHistory: the samples with
  // since <= time <= until, oldest first.
  virtual absl::Status AddClusterSample(const ClusterSample& sample,
                                        const HistoryRetention& retention) = 0;
  virtual absl::StatusOr<std::vector<ClusterSample>> ClusterHistory(
      Seconds since, Seconds until) const = 0;

  // Virtual clusters (store_vcs.cc): PutVc inserts `vc`, or replaces the
  // one of its name; RemoveVc deletes one (NotFound if there is none);
  // ListVcs returns them by name. Stored as given; the caller validates.
  virtual absl::Status PutVc(const VcRecord& vc) = 0;
  virtual absl::Status RemoveVc(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<VcRecord>> ListVcs() const = 0;
  // Priority levels (QOS; store_vcs.cc), as VCs are.
  virtual absl::Status PutQos(const QosRecord& qos) = 0;
  virtual absl::Status RemoveQos(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<QosRecord>> ListQos() const = 0;
  // Settings an admin changes at run time (store_vcs.cc), by name, as
  // bytes the caller encodes: PutSetting inserts or replaces one, durable
  // before it returns; GetSetting returns it, nullopt if never put.
  virtual absl::Status PutSetting(const std::string& name,
                                  const std::string& bytes) = 0;
  virtual absl::StatusOr<std::optional<std::string>> GetSetting(
      const std::string& name) const = 0;

  // This store's cluster id: 32 lowercase hex digits (128 random bits),
  // made when the store is first opened by a build that has them and kept
  // for its life (in the `meta` table). A fresh state gets a new one, so
  // what is keyed by it (the default checkpoint dirs) is never mistaken for
  // an earlier cluster's, whose job ids were the same. Constant.
  virtual const std::string& cluster_id() const = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_STORE_H_
