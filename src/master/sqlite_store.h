// SqliteStore: the master's embedded Store (store.h), one SQLite file in WAL
// mode with synchronous=FULL, so that every write is on disk when the call
// returns OK. Its schema and row codecs are in store_rows.h; its methods are
// spread over sqlite_store.cc (open, schema, nodes), sqlite_store_jobs.cc
// (jobs, events, launches), store_security.cc, store_profiles.cc and
// store_history.cc.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store,
//                    SqliteStore::Open(state_dir + "/state.db"));
//
// Thread-safe: one internal mutex serializes every call.
#ifndef TIRESIAS_MASTER_SQLITE_STORE_H_
#define TIRESIAS_MASTER_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "master/store.h"

namespace tiresias {

class SqliteDb;
class SqliteReplicator;
class SqliteTransaction;
struct SqliteWrite;

struct SqliteStoreOptions {
  // Hold an exclusive lock on the file for the store's life, so that a
  // second master on the same state directory fails at Open (Unavailable)
  // instead of running every job twice.
  bool exclusive = true;
  // Every commit fsyncs the WAL (synchronous = FULL), so that it survives
  // a power loss. A copy of a replicated store (etcd_store.h) need not:
  // the log in etcd is what is durable, and a copy that lost its last
  // commits to a power loss lost their log_index with them, so it replays
  // them (NORMAL: consistent after any crash, one fsync per checkpoint).
  bool sync_every_commit = true;
  // The cluster id a new store takes (a replica of a cluster: etcd_store.h);
  // an existing store with another is refused (FailedPrecondition). Empty:
  // a new store makes one.
  std::string cluster_id;
};

// Records in `db`'s open transaction that the replicated log's entries up
// to `index` are in it (SqliteStore::log_index).
absl::Status WriteLogIndex(SqliteDb& db, int64_t index);

class SqliteStore final : public Store {
 public:
  // The schema version this build writes; Open upgrades files with an older
  // one in place (1 -> 2 adds jobs.failed_starts, 2 -> 3 the launches
  // table, 3 -> 4 jobs.request_id with its unique index, indexes by user
  // and by name, and nodes.agent_token_hash, 4 -> 5 the tokens and audit
  // tables, 5 -> 6 job profiles, 6 -> 7 placement runs, 7 -> 8 the jobs'
  // workdir, output and error, 8 -> 9 job control: time limit, no-preempt,
  // held, 9 -> 10 nodes.drained and drain_reason, 10 -> 11 the jobs'
  // dependencies, 11 -> 12 the cluster_history table, 12 -> 13 job arrays,
  // 13 -> 14 request ids unique per user, 14 -> 15 a job's spec in one
  // column, 15 -> 16 what a job's tasks used, ... 20 -> 21 arrays stored
  // as one record, 21 -> 22 the launch a job's tasks may be running: see
  // store_rows.h) and refuses newer ones.
  static constexpr int kSchemaVersion = 22;

  // Opens the state file at `path`, creating it (and its schema) if absent.
  // An older schema version is upgraded, in one transaction. Errors name the
  // path: "<path>: not a Tiresias state file: ..." for a file that is not
  // one, FailedPrecondition for a newer schema version, Unavailable if
  // another process holds it. The file (with its -wal and -shm) is its
  // owner's alone: created 0600, and group and others' permissions removed
  // from an existing one, since it holds jobs' environments.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, SqliteStoreOptions options = {});
  ~SqliteStore() override;

  absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> CreateJobs(
      const std::vector<NewJob>& jobs, Seconds submit_time) override;
  absl::StatusOr<std::vector<CreatedJob>> CreateJobsAllOrNothing(
      const std::vector<NewJob>& jobs, Seconds submit_time) override;
  absl::Status Write(const StoreWrite& write) override;
  absl::StatusOr<JobRecord> GetJob(JobId id) const override;
  absl::StatusOr<JobPage> QueryJobs(const JobQuery& query) const override;
  absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() const override;
  absl::StatusOr<std::vector<JobRecord>> SplitArray(JobId array_id, int from,
                                                    int split_to) override;
  absl::StatusOr<std::vector<JobRecord>> ListSplittingArrays() const override;
  absl::StatusOr<std::vector<JobEvent>> Events(JobId job) const override;
  absl::StatusOr<std::vector<JobEvent>> EventsAfter(int64_t after_sequence,
                                                    int limit) const override;
  absl::StatusOr<JobTotals> Totals() const override;
  absl::StatusOr<std::vector<std::string>> LaunchNodes(
      JobId job, int attempt) const override;
  absl::StatusOr<int64_t> UpsertNode(const NodeRecord& node) override;
  absl::Status SetNodeDrain(int64_t id, bool drained,
                            const std::string& reason) override;
  absl::StatusOr<std::vector<NodeRecord>> ListNodes() const override;
  absl::StatusOr<int64_t> CreateToken(const TokenRecord& token) override;
  absl::Status RevokeToken(int64_t id, Seconds at) override;
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() const override;
  absl::Status AppendAudit(const AuditRecord& record) override;
  absl::Status PutVc(const VcRecord& vc) override;
  absl::Status RemoveVc(const std::string& name) override;
  absl::StatusOr<std::vector<VcRecord>> ListVcs() const override;
  absl::Status PutQos(const QosRecord& qos) override;
  absl::Status RemoveQos(const std::string& name) override;
  absl::StatusOr<std::vector<QosRecord>> ListQos() const override;
  absl::Status PutSetting(const std::string& name,
                          const std::string& bytes) override;
  absl::StatusOr<std::optional<std::string>> GetSetting(
      const std::string& name) const override;
  absl::Status SaveProfile(JobId job, const std::string& signature,
                           const JobProfile& profile) override;
  absl::Status AddPlacementRun(const PlacementRunRecord& run) override;
  absl::StatusOr<std::vector<PlacementRunRecord>> ListPlacementRuns()
      const override;
  absl::StatusOr<std::vector<AuditRecord>> AuditAfter(
      int64_t after, int limit) const override;
  absl::Status AddClusterSample(const ClusterSample& sample,
                                const HistoryRetention& retention) override;
  absl::StatusOr<std::vector<ClusterSample>> ClusterHistory(
      Seconds since, Seconds until) const override;
  const std::string& cluster_id() const override { return cluster_id_; }

  // Write transactions committed since Open (each one fsync): what tests
  // and benchmarks read to see submissions share transactions.
  int64_t commits() const;

  // The database file's path.
  const std::string& path() const { return path_; }

  // A replica of a replicated store (etcd_store.h). The last entry of the
  // log applied to this file (0: none).
  absl::StatusOr<int64_t> log_index() const;
  // Every later write transaction goes through `replicator` before it
  // commits (SqliteDb::SetReplicator); null: none.
  void SetReplicator(SqliteReplicator* replicator);
  // Runs entry `index` of the log in one transaction that also records it
  // as applied. The caller applies entries in order, once each.
  absl::Status ApplyLogEntry(int64_t index,
                             const std::vector<SqliteWrite>& writes);
  // Writes a whole copy of the store to a new file at `path` (replacing
  // one there), a few pages at a time so that the store's users get in
  // between; the copy's log_index.
  absl::StatusOr<int64_t> CopyTo(const std::string& path) const;

 private:
  explicit SqliteStore(std::unique_ptr<SqliteDb> db);

  // CreateJobs; with `all_or_nothing`, the first job refused rolls the
  // transaction back and is the outer error ("jobs[I]: ...").
  absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> CreateJobsImpl(
      const std::vector<NewJob>& jobs, Seconds submit_time,
      bool all_or_nothing);

  // Each requires mu_ held.
  absl::Status InitSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Upgrades the open transaction's file from `from_version` to
  // kSchemaVersion and records the new version.
  absl::Status Migrate(int from_version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // UpsertNode's checks, and its statement in the open transaction; the
  // node's id.
  static absl::Status CheckNode(const NodeRecord& node);
  absl::StatusOr<int64_t> UpsertNodeLocked(const NodeRecord& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UpdateJobLocked(const JobRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AppendEventLocked(const JobEvent& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertLaunchLocked(const LaunchRecord& launch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<JobRecord>> SelectJobs(const std::string& where,
                                                    int64_t arg) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<JobEvent>> SelectEvents(const std::string& where,
                                                     int64_t arg,
                                                     int64_t limit) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckJobExists(JobId id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stored job of `user` submitted with `request_id`, if any.
  absl::StatusOr<std::optional<JobRecord>> FindByRequestId(
      const std::string& user, const std::string& request_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The profile stored for `signature`, if any.
  absl::StatusOr<std::optional<JobProfile>> ProfileBySignatureLocked(
      const std::string& signature) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `encoded_spec`: job.spec's EncodeSpec. `id`: the job's id, kept for
  // it by its array (SplitArray); 0: the next free one.
  absl::StatusOr<JobId> InsertJobLocked(
      const NewJob& job, const std::string& encoded_spec, Seconds submit_time,
      const std::optional<JobProfile>& profile, JobId array_id, JobId id = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Arrays stored as one record (sqlite_store_arrays.cc). The unwritten
  // jobs of the arrays whose ids lie in (after, upto] that `query` selects
  // (its states, user, name, submit time, array and VC), in id order, at
  // most `limit` (< 0: all).
  absl::StatusOr<std::vector<JobRecord>> UnwrittenJobsLocked(
      const JobQuery& query, JobId after, JobId upto, int64_t limit) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The unwritten job `id` of an array, if it is one.
  absl::StatusOr<std::optional<JobRecord>> UnwrittenJobLocked(JobId id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The unwritten array job that request id "<base>#<k>" of `user` names
  // (job k of the array whose first job has "<base>#0"), if any.
  absl::StatusOr<std::optional<JobRecord>> UnwrittenByRequestIdLocked(
      const std::string& user, const std::string& request_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A stored job of `user` whose request id one of the `count` jobs of a
  // new array with first request id "<base>#0" would take ("<base>#<k>",
  // 0 < k < count), if any.
  absl::StatusOr<std::optional<JobRecord>> ArrayRequestIdTakenLocked(
      const std::string& user, const std::string& first_request_id,
      int count) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How many jobs are unwritten, over every array.
  absl::StatusOr<int64_t> UnwrittenCountLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A table of (name TEXT PRIMARY KEY, config BLOB) rows: VCs and QOS
  // (store_vcs.cc). `what` and `short_name` name a row in errors
  // ("virtual cluster \"a\": no such VC").
  absl::Status PutConfigRow(std::string_view table, const std::string& name,
                            const std::string& bytes);
  absl::Status RemoveConfigRow(std::string_view table, std::string_view what,
                               std::string_view short_name,
                               const std::string& name);
  template <typename Proto, typename Record>
  absl::StatusOr<std::vector<Record>> ListConfigRows(
      std::string_view table, Record (*from_proto)(const Proto&)) const;
  absl::Status CommitLocked(SqliteTransaction& txn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the cluster id from `meta`, making one first if there is none.
  absl::Status LoadClusterId() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_PT_GUARDED_BY(mu_);
  int64_t commits_ ABSL_GUARDED_BY(mu_) = 0;
  std::string cluster_id_;  // set by Open, constant after
  std::string path_;        // set by Open, constant after
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_SQLITE_STORE_H_
