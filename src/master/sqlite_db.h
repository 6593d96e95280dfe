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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tiresias {

class SqliteDb;

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
  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bind_error_ = 0;
  int last_error_code_ = 0;
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

  // A Status for SQLite result `code`: "<path>: <context>: <message>", with
  // an absl code that says what the caller can do about it. `message`
  // defaults to the connection's last error message.
  absl::Status Error(int code, absl::string_view context,
                     absl::string_view message = {}) const;

 private:
  SqliteDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

  std::string path_;
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
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
