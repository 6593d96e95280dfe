// The replicated store (--store etcd://...): every master keeps its own
// SQLite copy of the state (SqliteStore), and the leader's write
// transactions go to etcd as a log that every other master replays.
//
// Each committed transaction of the leader is one entry, <prefix>log/
// <index, 20 digits>: its write statements with their bound values
// (proto/store_log.proto), captured by SqliteDb as they ran. The leader
// appends an entry inside its open SQLite transaction, before COMMIT, in
// an etcd transaction that succeeds only while <prefix>leader is still
// this lead's key (EtcdLead) and the index is free; then it records the
// index in the same SQLite transaction and commits. So the log holds
// exactly what leaders acknowledged, in order, and a deposed leader can
// append nothing. A master that is not leading applies the entries after
// its copy's log_index, each in one transaction; one taking the lead
// applies all of them before it opens the state.
//
// The entries' SQL is deterministic (no clock, no random(): values are
// bound), and every master runs the same build, so the copies agree.
// When an append's outcome is unknown (etcd did not answer), the leader
// reads the entry back; if it cannot tell, or its own COMMIT fails after
// the append, it gives up the lead (EtcdLead::Lost) and its copy catches
// up when it next leads.
//
// Every `snapshot_every` entries the leader writes a snapshot of its copy
// and deletes the log up to it (etcd_snapshot.h), from a thread of its
// own. A copy behind the snapshot gets OutOfRange from CatchUp: closed,
// its file is replaced (InstallSnapshot), and it catches up from there.
//
//   ASSIGN_OR_RETURN(std::string id, EtcdClusterId(*client, prefix));
//   ASSIGN_OR_RETURN(auto store, SqliteStore::Open(path, {.cluster_id = id}));
//   auto log = std::make_shared<EtcdLog>(client, prefix);
//   RETURN_IF_ERROR(log->CatchUp(*store).status());       // a standby, often
//   ... lead->TryLead() ...
//   RETURN_IF_ERROR(log->StartLeading(*store, lead.get()));  // then serve
#ifndef TIRESIAS_MASTER_ETCD_STORE_H_
#define TIRESIAS_MASTER_ETCD_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "master/etcd_client.h"
#include "master/etcd_lead.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"

namespace tiresias {

// The cluster id every copy takes: <prefix>cluster_id, made (random) by
// the first master to ask.
absl::StatusOr<std::string> EtcdClusterId(EtcdClient& client,
                                          const std::string& prefix);

class EtcdLog final : public SqliteReplicator {
 public:
  // An entry larger than this, compressed, is refused: its transaction
  // fails and is rolled back.
  static constexpr size_t kMaxEntryBytes = 64 << 20;

  struct Options {
    // A snapshot after this many entries since the last (0: never).
    int64_t snapshot_every = 10000;
    size_t chunk_bytes = 1 << 20;  // kSnapshotChunkBytes
    // An entry larger than this, compressed (etcd's default request limit
    // is 1.5 MiB), is written in parts of this size before the entry,
    // which then says where they are (store_log.proto, Parts). 0 or more
    // than 1 MiB: 1 MiB.
    size_t part_bytes = 1 << 20;
  };
  EtcdLog(std::shared_ptr<EtcdClient> client, std::string prefix)
      : EtcdLog(std::move(client), std::move(prefix), Options()) {}
  EtcdLog(std::shared_ptr<EtcdClient> client, std::string prefix,
          Options options)
      : client_(std::move(client)),
        prefix_(std::move(prefix)),
        options_(options) {}
  // Waits for a snapshot under way; a store still given to it is let go.
  ~EtcdLog() override;

  // Applies to `store` every entry after its log_index, in order; how many.
  // OutOfRange when the log no longer holds the entry after the copy's
  // (compacted into a snapshot): replace the copy (ReplaceBySnapshot).
  absl::StatusOr<int64_t> CatchUp(SqliteStore& store);
  // Closes `*store` (none may hold its file but it), replaces its file by
  // the store's snapshot and opens it again with `options`; the index.
  absl::StatusOr<int64_t> ReplaceBySnapshot(std::unique_ptr<SqliteStore>* store,
                                            const SqliteStoreOptions& options);
  // Writes a snapshot now (the leader; what the thread does every
  // snapshot_every entries); its index.
  absl::StatusOr<int64_t> Snapshot() ABSL_LOCKS_EXCLUDED(mu_);
  // Snapshots written by this leader.
  int64_t snapshots() const ABSL_LOCKS_EXCLUDED(mu_);
  // The last entry this leader's copy holds, without waiting for an
  // append under way (for status).
  int64_t last_index() const { return last_index_.load(); }
  // Catches `store` up, then has its writes appended from here on, fenced
  // by `lead` (which must be leading).
  absl::Status StartLeading(SqliteStore& store, EtcdLead* lead)
      ABSL_LOCKS_EXCLUDED(mu_);

  std::string EntryKey(int64_t index) const;
  // Entries written by this leader, and the next index.
  int64_t appended() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t next_index() const ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status Replicate(SqliteDb& db, std::vector<SqliteWrite> writes) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void CommitFailed(const absl::Status& status) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Detach() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void SnapshotLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void StopSnapshots() ABSL_LOCKS_EXCLUDED(mu_);

  // Writes `value` (the entry at `index`, too large for one request) in
  // parts, fenced by `epoch`; what the entry holds instead.
  // FailedPrecondition when this master no longer leads.
  absl::StatusOr<std::string> WriteParts(int64_t index, uint64_t epoch,
                                         const std::string& value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The bytes of the entry at `index` written in parts, which `value` (what
  // the entry holds) says where are, read at `revision`.
  absl::StatusOr<std::string> ReadParts(int64_t index, const std::string& value,
                                        int64_t revision) const;
  // The append's outcome once etcd did not say: whether the entry at
  // `key` is `value`; an error if that cannot be read either.
  absl::StatusOr<bool> WasWritten(const std::string& key,
                                  const std::string& value);

  const std::shared_ptr<EtcdClient> client_;
  const std::string prefix_;
  const Options options_;
  mutable Mutex mu_;
  SteadyCondVar snapshot_cv_;
  EtcdLead* lead_ ABSL_GUARDED_BY(mu_) = nullptr;
  SqliteStore* store_ ABSL_GUARDED_BY(mu_) = nullptr;  // while leading
  int64_t snapshot_index_ ABSL_GUARDED_BY(mu_) = 0;    // the last one's
  int64_t snapshots_ ABSL_GUARDED_BY(mu_) = 0;
  bool snapshot_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool snapshot_running_ ABSL_GUARDED_BY(mu_) = false;
  bool copying_ ABSL_GUARDED_BY(mu_) = false;  // a snapshot reads the store
  int64_t snapshot_tried_at_ ABSL_GUARDED_BY(mu_) = 0;  // a failed one's
  uint64_t parts_tries_ ABSL_GUARDED_BY(mu_) = 0;       // WriteParts calls
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread snapshot_thread_;
  int64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t appended_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> last_index_{0};  // next_ - 1, read without mu_
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

// An entry's bytes (each distinct SQL text once, zlib-compressed) and
// back; errors name the index, and an entry of another schema version is
// refused (FailedPrecondition).
std::string EncodeLogEntry(uint64_t epoch, int schema_version,
                           const std::vector<SqliteWrite>& writes);
absl::StatusOr<std::vector<SqliteWrite>> DecodeLogEntry(
    int64_t index, int schema_version, const std::string& bytes);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ETCD_STORE_H_
