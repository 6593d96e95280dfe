// SqliteStore (sqlite_store.h): opening the file, its schema and upgrades,
// the cluster id, commits and the node table. Jobs, events and launches are
// in sqlite_store_jobs.cc.
#include "master/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/sqlite_db.h"
#include "master/store_rows.h"

namespace tiresias {
namespace {

using store_internal::DecodeNode;
using store_internal::kNodeColumns;

// The single value of a one-row query (a PRAGMA, a count).
absl::StatusOr<int64_t> QueryInt(SqliteDb& db, const std::string& sql) {
  ASSIGN_OR_RETURN(SqliteQuery query, db.Prepare(sql));
  ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return absl::InternalError(absl::StrCat(sql, ": no result"));
  return query.Int(0);
}

// Puts the connection in the modes the store's guarantees rest on.
absl::Status Configure(SqliteDb& db, const SqliteStoreOptions& options) {
  // Exclusive locking before WAL: then SQLite keeps the WAL index in heap
  // memory and holds the file lock from the first write on.
  if (options.exclusive) {
    RETURN_IF_ERROR(db.Exec("PRAGMA locking_mode = EXCLUSIVE"));
  } else {
    RETURN_IF_ERROR(db.Exec("PRAGMA busy_timeout = 5000"));
  }
  // The first statement to read the file: a non-database fails here.
  ASSIGN_OR_RETURN(SqliteQuery wal, db.Prepare("PRAGMA journal_mode = WAL"));
  ASSIGN_OR_RETURN(bool row, wal.Step());
  if (!row || wal.Text(0) != "wal") {
    return absl::FailedPreconditionError(absl::StrCat(
        db.path(), ": cannot use write-ahead logging (journal mode is ",
        row ? wal.Text(0) : "unknown", ")"));
  }
  // FULL: every commit fsyncs the WAL, so a committed job survives a power
  // loss, not only a crash of the master.
  RETURN_IF_ERROR(db.Exec(options.sync_every_commit
                              ? "PRAGMA synchronous = FULL"
                              : "PRAGMA synchronous = NORMAL"));
  RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys = ON"));
  return absl::OkStatus();
}

// 128 bits from the kernel's random source, as 32 lowercase hex digits.
std::string RandomClusterId() {
  std::random_device random;  // getrandom(2) on Linux
  std::string id;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(
        &id, absl::Hex(static_cast<uint32_t>(random()), absl::kZeroPad8));
  }
  return id;
}

// Creates the state file 0600 if missing, and takes group and others'
// permissions from it and its -wal and -shm if they have any (SQLite gives
// those two the main file's mode): it holds every job's environment.
absl::Status MakeOwnerOnly(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);  // an error shows at SqliteDb::Open, clearer
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    struct stat st = {};
    if (lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        (st.st_mode & 077) == 0) {
      continue;
    }
    if (chmod(file.c_str(), st.st_mode & 0700) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          file, ": cannot close it to other users: ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

SqliteStore::SqliteStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

SqliteStore::~SqliteStore() {
  SqliteReplicator* replicator = nullptr;
  {
    MutexLock lock(&mu_);
    if (db_ != nullptr) {
      replicator = db_->replicator();
      db_->SetReplicator(nullptr);
    }
  }
  // Without mu_: it may wait for its own use of the store (CopyTo).
  if (replicator != nullptr) replicator->Detach();
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, SqliteStoreOptions options) {
  RETURN_IF_ERROR(MakeOwnerOnly(path));
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(Configure(*db, options));
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db)));
  store->cluster_id_ = options.cluster_id;
  store->path_ = path;
  MutexLock lock(&store->mu_);
  RETURN_IF_ERROR(store->InitSchema());
  RETURN_IF_ERROR(store->LoadClusterId());
  return store;
}

absl::Status SqliteStore::LoadClusterId() {
  SqliteDb& db = *db_;
  {
    ASSIGN_OR_RETURN(
        SqliteQuery query,
        db.Prepare("SELECT value FROM meta WHERE key = 'cluster_id'"));
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) {
      if (!cluster_id_.empty() && query.Text(0) != cluster_id_) {
        return absl::FailedPreconditionError(absl::StrCat(
            db.path(), ": a copy of cluster ", query.Text(0),
            ", not of cluster ", cluster_id_,
            " (another cluster's state; move it away to start afresh)"));
      }
      cluster_id_ = query.Text(0);
      return absl::OkStatus();
    }
  }
  // A new store, or one of a build before cluster ids: its job ids go on
  // from here, so an id made now is as good as one made with the store.
  // Not a copy of a replicated one, though: a copy starts empty, or its
  // writes would not be the log's.
  if (!cluster_id_.empty()) {
    ASSIGN_OR_RETURN(int64_t jobs, QueryInt(db, "SELECT count(*) FROM jobs"));
    if (jobs > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          db.path(), ": holds ", jobs, " jobs of a master not on cluster ",
          cluster_id_,
          "'s store; a copy must start empty (move the file away)"));
    }
  }
  const std::string id = cluster_id_.empty() ? RandomClusterId() : cluster_id_;
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(db));
  ASSIGN_OR_RETURN(SqliteQuery insert,
                   db.Prepare("INSERT INTO meta (key, value) "
                              "VALUES ('cluster_id', ?)"));
  RETURN_IF_ERROR(insert.Bind(1, id).Run());
  RETURN_IF_ERROR(txn.Commit());
  cluster_id_ = id;
  return absl::OkStatus();
}

absl::Status SqliteStore::InitSchema() {
  SqliteDb& db = *db_;
  // A write transaction: under exclusive locking it takes the lock for good,
  // so a second master fails here rather than later.
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(db));
  ASSIGN_OR_RETURN(int64_t tables,
                   QueryInt(db, "SELECT count(*) FROM sqlite_schema"));
  if (tables == 0) {
    RETURN_IF_ERROR(db.Exec(store_internal::kSchemaV1));
    RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA application_id = ",
                                         store_internal::kApplicationId)));
    ASSIGN_OR_RETURN(SqliteQuery insert,
                     db.Prepare("INSERT INTO meta (key, value) "
                                "VALUES ('schema_version', '1')"));
    RETURN_IF_ERROR(insert.Run());
    RETURN_IF_ERROR(Migrate(1));
    return txn.Commit();
  }
  const std::string not_ours =
      absl::StrCat(db.path(), ": not a Tiresias state file: ");
  ASSIGN_OR_RETURN(int64_t application_id,
                   QueryInt(db, "PRAGMA application_id"));
  if (application_id != store_internal::kApplicationId) {
    return absl::FailedPreconditionError(absl::StrCat(
        not_ours, "a SQLite database of another program (application_id ",
        application_id, ")"));
  }
  int version = 0;
  {  // reset before any migration changes the schema
    auto version_query = db.Prepare(
        "SELECT value FROM meta WHERE key = 'schema_version'");
    if (!version_query.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(not_ours, "no meta table"));
    }
    ASSIGN_OR_RETURN(bool row, version_query->Step());
    if (!row || !absl::SimpleAtoi(version_query->Text(0), &version)) {
      return absl::FailedPreconditionError(absl::StrCat(
          not_ours, "no valid schema_version in its meta table"));
    }
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        db.path(), ": schema version ", version,
        " is newer than this build of tiresias understands (", kSchemaVersion,
        "); use a newer tiresias"));
  }
  if (version < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        not_ours, "unknown schema version ", version));
  }
  RETURN_IF_ERROR(Migrate(version));
  return txn.Commit();
}

absl::Status SqliteStore::Migrate(int from_version) {
  static_assert(store_internal::kLatestSchemaVersion == kSchemaVersion,
                "a schema version bump needs its migration");
  if (from_version == kSchemaVersion) return absl::OkStatus();
  for (int v = from_version; v < kSchemaVersion; ++v) {
    absl::Status status = db_->Exec(store_internal::kMigrations[v - 1]);
    if (status.ok()) status = store_internal::MigrateInCode(*db_, v + 1);
    if (!status.ok()) {
      return absl::Status(
          status.code(), absl::StrCat("upgrading schema version ", v, " to ",
                                      v + 1, ": ", status.message()));
    }
  }
  ASSIGN_OR_RETURN(SqliteQuery update,
                   db_->Prepare("UPDATE meta SET value = ? "
                                "WHERE key = 'schema_version'"));
  return update.Bind(1, absl::StrCat(kSchemaVersion)).Run();
}

absl::Status SqliteStore::CommitLocked(SqliteTransaction& txn) {
  RETURN_IF_ERROR(txn.Commit());
  ++commits_;
  return absl::OkStatus();
}

int64_t SqliteStore::commits() const {
  MutexLock lock(&mu_);
  return commits_;
}

absl::StatusOr<int64_t> SqliteStore::UpsertNode(const NodeRecord& node) {
  RETURN_IF_ERROR(CheckNode(node));
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(int64_t id, UpsertNodeLocked(node));
  RETURN_IF_ERROR(CommitLocked(txn));
  return id;
}

absl::Status SqliteStore::CheckNode(const NodeRecord& node) {
  if (node.name.empty()) {
    return absl::InvalidArgumentError("node name: must not be empty");
  }
  if (node.gpus < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", node.name, ": gpus: expected >= 0, got ", node.gpus));
  }
  if (!std::isfinite(node.last_heartbeat.count())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", node.name, ": last_heartbeat: expected a finite number"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteStore::UpsertNodeLocked(const NodeRecord& node) {
  ASSIGN_OR_RETURN(
      SqliteQuery upsert,
      db_->Prepare(
          "INSERT INTO nodes (name, address, gpus, state, "
          "last_heartbeat, agent_token_hash, id) VALUES (?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (name) DO UPDATE SET address = excluded.address, "
          "gpus = excluded.gpus, state = excluded.state, "
          "last_heartbeat = excluded.last_heartbeat, "
          "agent_token_hash = excluded.agent_token_hash RETURNING id"));
  upsert.Bind(1, node.name)
      .Bind(2, node.address)
      .Bind(3, int64_t{node.gpus})
      .Bind(4, NodeStateName(node.state))
      .Bind(5, node.last_heartbeat.count())
      .Bind(6, node.agent_token_hash);
  // A new row takes the id given (the master's, MasterState::Register), or
  // the next (NULL). A row of this name keeps its own.
  if (node.id > 0) {
    upsert.Bind(7, node.id);
  } else {
    upsert.BindNull(7);
  }
  ASSIGN_OR_RETURN(bool row, upsert.Step());
  if (!row) return absl::InternalError("node upsert returned no id");
  int64_t id = upsert.Int(0);
  // Finishes the statement (and commits it, outside a transaction).
  RETURN_IF_ERROR(upsert.Run());
  return id;
}

absl::Status SqliteStore::SetNodeDrain(int64_t id, bool drained,
                                       const std::string& reason) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  {
    ASSIGN_OR_RETURN(SqliteQuery update,
                     db_->Prepare("UPDATE nodes SET drained = ?, "
                                  "drain_reason = ? WHERE id = ?"));
    update.Bind(1, int64_t{drained ? 1 : 0})
        .Bind(2, drained ? reason : std::string())
        .Bind(3, id);
    RETURN_IF_ERROR(update.Run());
  }
  if (db_->Changes() == 0) {
    return absl::NotFoundError(absl::StrCat("node ", id, ": no such node"));
  }
  return CommitLocked(txn);
}

absl::Status WriteLogIndex(SqliteDb& db, int64_t index) {
  ASSIGN_OR_RETURN(SqliteQuery put,
                   db.Prepare("INSERT INTO meta (key, value) "
                              "VALUES ('log_index', ?) ON CONFLICT (key) "
                              "DO UPDATE SET value = excluded.value"));
  return put.Bind(1, absl::StrCat(index)).Run();
}

absl::StatusOr<int64_t> SqliteStore::log_index() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT value FROM meta WHERE key = 'log_index'"));
  ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return 0;
  int64_t index = 0;
  if (!absl::SimpleAtoi(query.Text(0), &index) || index < 0) {
    return absl::DataLossError(
        absl::StrCat(db_->path(), ": meta log_index: expected a count, got \"",
                     query.Text(0), "\""));
  }
  return index;
}

void SqliteStore::SetReplicator(SqliteReplicator* replicator) {
  MutexLock lock(&mu_);
  db_->SetReplicator(replicator);
}

absl::Status SqliteStore::ApplyLogEntry(
    int64_t index, const std::vector<SqliteWrite>& writes) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  for (size_t i = 0; i < writes.size(); ++i) {
    absl::Status s = db_->Replay(writes[i]);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("log entry ", index, ", statement ", i + 1,
                                 ": ", s.message()));
    }
  }
  RETURN_IF_ERROR(WriteLogIndex(*db_, index));
  return CommitLocked(txn);
}

absl::StatusOr<int64_t> SqliteStore::CopyTo(const std::string& path) const {
  // Pages per step: 1 MiB at SQLite's 4 KiB pages.
  constexpr int kPagesPerStep = 256;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    if (unlink(file.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat(file, ": cannot remove: ", std::strerror(errno)));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> to, SqliteDb::Open(path));
  std::unique_ptr<SqliteBackup> backup;
  {
    MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(backup, SqliteBackup::Start(*db_, *to));
  }
  // SQLite starts the copy again when a write is rolled back; a store that
  // keeps doing so is given up on rather than waited for.
  constexpr int kMaxSteps = 1 << 20;
  for (int steps = 0, done = 0; !done; ++steps) {
    if (steps == kMaxSteps) {
      return absl::UnavailableError(
          absl::StrCat(path, ": the store kept changing under its copy"));
    }
    MutexLock lock(&mu_);
    absl::StatusOr<bool> stepped = backup->Step(kPagesPerStep);
    if (!stepped.ok()) {
      backup.reset();  // finished under mu_: it touches the source
      return stepped.status();
    }
    done = *stepped;
    if (done) backup.reset();
  }
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      to->Prepare("SELECT value FROM meta WHERE key = 'log_index'"));
  ASSIGN_OR_RETURN(bool row, query.Step());
  int64_t index = 0;
  if (row && !absl::SimpleAtoi(query.Text(0), &index)) {
    return absl::DataLossError(
        absl::StrCat(path, ": meta log_index: expected a count, got \"",
                     query.Text(0), "\""));
  }
  return index;
}

absl::StatusOr<std::vector<NodeRecord>> SqliteStore::ListNodes() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat("SELECT ", kNodeColumns,
                                             " FROM nodes ORDER BY id")));
  std::vector<NodeRecord> nodes;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return nodes;
    ASSIGN_OR_RETURN(NodeRecord node, DecodeNode(query, db_->path()));
    nodes.push_back(std::move(node));
  }
}

}  // namespace tiresias
