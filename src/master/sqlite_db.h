// A thin RAII layer over the SQLite C API for the store: one connection,
// cached prepared statements with typed binds and reads, and SQLite errors
// turned into absl::Status values that name the database file.
//
// Not thread-safe: the owner (SqliteStore) serializes every call.
#ifndef TIRESIAS_MASTER_SQLITE_DB_H_
#define TIRESIAS_MASTER_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct sqlite3;
struct sqlite3_stmt;
struct sqlite3_backup;

namespace tiresias {

class SqliteDb;

// A value bound to a statement parameter, as a replicated store ships it.
struct SqliteValue {
  enum class Kind { kNull, kInteger, kReal, kText, kBlob };
  Kind kind = Kind::kNull;
  int64_t integer = 0;
  double real = 0;
  std::string bytes;  // text or blob
};

// A write statement as it ran: its SQL and its parameters (binds[i] is
// parameter i + 1), enough to run it again on a copy of the database.
struct SqliteWrite {
  std::string sql;
  std::vector<SqliteValue> binds;
  // Rows it changed, once it ran to its end; -1: not known.
  int64_t changes = -1;
};

// What a replicated store does with a transaction's writes (SqliteDb::
// SetReplicator): called inside the open transaction, before its COMMIT,
// with every statement that changed the database, in order. OK: committed
// here too. An error rolls the transaction back and is the commit's error.
// CommitFailed: the local COMMIT failed after Replicate said OK.
class SqliteReplicator {
 public:
  virtual ~SqliteReplicator() = default;
  virtual absl::Status Replicate(SqliteDb& db,
                                 std::vector<SqliteWrite> writes) = 0;
  virtual void CommitFailed(const absl::Status& status) = 0;
  // The store it was given to is closing: nothing may use it any more.
  virtual void Detach() {}
};

// One use of a cached prepared statement: bind, step, read columns. Resets
// the statement (and clears its bindings) when it goes out of scope, so the
// cache can hand it out again. Bind and column indexes: binds are 1-based,
// columns 0-based (as in SQLite).
class SqliteQuery {
 public:
  SqliteQuery(SqliteDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteQuery(SqliteQuery&& other) noexcept;
  SqliteQuery(const SqliteQuery&) = delete;
  SqliteQuery& operator=(const SqliteQuery&) = delete;
  SqliteQuery& operator=(SqliteQuery&&) = delete;
  ~SqliteQuery();

  // A failed bind is remembered and returned by the next Step.
  SqliteQuery& Bind(int index, int64_t value);
  SqliteQuery& Bind(int index, double value);
  SqliteQuery& Bind(int index, std::string_view value);
  SqliteQuery& BindNull(int index);
  // Binds bytes as a BLOB (never NULL, also when empty).
  SqliteQuery& BindBlob(int index, std::string_view bytes);
  template <typename T>
  SqliteQuery& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // Runs one step: true if a row is ready to read, false when done.
  absl::StatusOr<bool> Step();
  // Steps to the end (for statements that return no rows).
  absl::Status Run();

  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  // The bytes of a BLOB (or TEXT) column; "" for NULL.
  std::string Blob(int column) const;
  // The SQLite type name of a column in the current row ("integer", "real",
  // "text", "blob", "null"), for error messages.
  const char* TypeName(int column) const;
  // The declared storage class of a column: SQLITE_INTEGER, SQLITE_FLOAT,...
  int Type(int column) const;

  // The extended result code of the last failed Step (0 if none).
  int last_error_code() const { return last_error_code_; }

 private:
  // The value bound to parameter `index`, kept while the database
  // captures writes (SqliteDb::SetReplicator).
  void Keep(int index, SqliteValue value);

  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bind_error_ = 0;
  int last_error_code_ = 0;
  bool stepped_ = false;            // captured once, at the first step
  std::vector<SqliteValue> binds_;  // while capturing
  int captured_at_ = -1;            // its place in the transaction's writes
};

class SqliteDb {
 public:
  // Opens (creating if missing) the database file at `path`. Fails when the
  // file cannot be opened; a file that is not a database is only noticed at
  // the first statement (SQLite reads lazily).
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }

  // Runs one or more statements that return nothing of interest.
  absl::Status Exec(std::string_view sql);
  // A statement prepared once per SQL text and kept for the connection's
  // life. At most one SqliteQuery of a given SQL text may be alive at a time.
  absl::StatusOr<SqliteQuery> Prepare(const std::string& sql);

  int64_t LastInsertRowId() const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int Changes() const;

  // From now on, each transaction's writes go to `replicator` before its
  // COMMIT (null: no more), and a write outside a transaction is refused
  // (Internal): it could not be shipped before it took effect. Exec's
  // statements are not captured: call it only for what each copy does on
  // its own (the schema, PRAGMAs). Replicate may run statements on the
  // database (they are not captured).
  void SetReplicator(SqliteReplicator* replicator) { replicator_ = replicator; }
  SqliteReplicator* replicator() const { return replicator_; }
  // Runs `write` as it ran elsewhere (a replica applying the log);
  // DataLoss if it changes another number of rows than it did there.
  absl::Status Replay(const SqliteWrite& write);

  // A Status for SQLite result `code`: "<path>: <context>: <message>", with
  // an absl code that says what the caller can do about it. `message`
  // defaults to the connection's last error message.
  absl::Status Error(int code, absl::string_view context,
                     absl::string_view message = {}) const;

 private:
  friend class SqliteBackup;
  friend class SqliteQuery;
  friend class SqliteTransaction;
  SqliteDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

  bool capturing() const { return replicator_ != nullptr && !replicating_; }

  std::string path_;
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
  SqliteReplicator* replicator_ = nullptr;
  bool in_transaction_ = false;        // a SqliteTransaction is open
  bool replicating_ = false;           // inside Replicate: nothing captured
  std::vector<SqliteWrite> captured_;  // the open transaction's writes
};

// SQLite's online backup of one database into another (whose content it
// replaces), a few pages per Step, so that the source's users get in
// between; a write made meanwhile on the source's connection is carried
// into the copy. Both connections are the caller's to serialize: Start,
// each Step and the destruction (which finishes) each as one use of both.
class SqliteBackup {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteBackup>> Start(SqliteDb& from,
                                                             SqliteDb& to);
  ~SqliteBackup();
  SqliteBackup(const SqliteBackup&) = delete;
  SqliteBackup& operator=(const SqliteBackup&) = delete;
  // Copies up to `pages` more; true once the copy is whole.
  absl::StatusOr<bool> Step(int pages);

 private:
  SqliteBackup(SqliteDb* to, sqlite3_backup* backup)
      : to_(to), backup_(backup) {}
  SqliteDb* to_;
  sqlite3_backup* backup_;
};

// BEGIN IMMEDIATE ... COMMIT around a scope: rolls back unless Commit()
// succeeded.
class SqliteTransaction {
 public:
  static absl::StatusOr<SqliteTransaction> Begin(SqliteDb& db);
  SqliteTransaction(SqliteTransaction&& other) noexcept
      : db_(other.db_) { other.db_ = nullptr; }
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  ~SqliteTransaction();
  absl::Status Commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed or rolled back
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_SQLITE_DB_H_
