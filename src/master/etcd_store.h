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
// up when it next leads. The log is kept whole (no snapshots yet).
//
//   ASSIGN_OR_RETURN(std::string id, EtcdClusterId(*client, prefix));
//   ASSIGN_OR_RETURN(auto store, SqliteStore::Open(path, {.cluster_id = id}));
//   auto log = std::make_shared<EtcdLog>(client, prefix);
//   RETURN_IF_ERROR(log->CatchUp(*store).status());       // a standby, often
//   ... lead->TryLead() ...
//   RETURN_IF_ERROR(log->StartLeading(*store, lead.get()));  // then serve
#ifndef TIRESIAS_MASTER_ETCD_STORE_H_
#define TIRESIAS_MASTER_ETCD_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
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
  // An entry larger than this, compressed, is refused (etcd's default
  // request limit is 1.5 MiB): its transaction fails and is rolled back.
  static constexpr size_t kMaxEntryBytes = 1 << 20;

  EtcdLog(std::shared_ptr<EtcdClient> client, std::string prefix)
      : client_(std::move(client)), prefix_(std::move(prefix)) {}

  // Applies to `store` every entry after its log_index, in order; how many.
  absl::StatusOr<int64_t> CatchUp(SqliteStore& store);
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

 private:
  // The append's outcome once etcd did not say: whether the entry at
  // `key` is `value`; an error if that cannot be read either.
  absl::StatusOr<bool> WasWritten(const std::string& key,
                                  const std::string& value);

  const std::shared_ptr<EtcdClient> client_;
  const std::string prefix_;
  mutable Mutex mu_;
  EtcdLead* lead_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t appended_ ABSL_GUARDED_BY(mu_) = 0;
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
