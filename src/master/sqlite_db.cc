#include "master/sqlite_db.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"

namespace tiresias {

SqliteQuery::SqliteQuery(SqliteQuery&& other) noexcept
    : db_(other.db_),
      stmt_(other.stmt_),
      bind_error_(other.bind_error_),
      last_error_code_(other.last_error_code_) {
  other.stmt_ = nullptr;
}

SqliteQuery::~SqliteQuery() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

SqliteQuery& SqliteQuery::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteQuery& SqliteQuery::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteQuery& SqliteQuery::Bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteQuery& SqliteQuery::BindBlob(int index, std::string_view bytes) {
  // A null pointer would bind NULL: an empty blob needs one that is not.
  static constexpr char kEmpty[] = "";
  int rc =
      sqlite3_bind_blob64(stmt_, index, bytes.data() ? bytes.data() : kEmpty,
                          bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteQuery& SqliteQuery::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

absl::StatusOr<bool> SqliteQuery::Step() {
  if (bind_error_ != 0) {
    last_error_code_ = bind_error_;
    return db_->Error(bind_error_, "binding a value");
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  last_error_code_ = sqlite3_extended_errcode(sqlite3_db_handle(stmt_));
  return db_->Error(rc, "running a statement");
}

absl::Status SqliteQuery::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

bool SqliteQuery::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t SqliteQuery::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double SqliteQuery::Double(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string SqliteQuery::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), size);
}

std::string SqliteQuery::Blob(int column) const {
  const void* bytes = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (bytes == nullptr) return "";
  return std::string(static_cast<const char*>(bytes), size);
}

int SqliteQuery::Type(int column) const {
  return sqlite3_column_type(stmt_, column);
}

const char* SqliteQuery::TypeName(int column) const {
  switch (Type(column)) {
    case SQLITE_INTEGER: return "integer";
    case SQLITE_FLOAT: return "real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "blob";
    default: return "null";
  }
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(
    const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                               SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot open: ", message));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(path, db));
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

absl::Status SqliteDb::Exec(std::string_view sql) {
  std::string sql_text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql_text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string text = message ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return Error(sqlite3_extended_errcode(db_), "running a statement", text);
}

absl::StatusOr<SqliteQuery> SqliteDb::Prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                                &stmt, nullptr);
    if (rc != SQLITE_OK) {
      return Error(sqlite3_extended_errcode(db_), "preparing a statement");
    }
    it = statements_.emplace(sql, stmt).first;
  }
  return SqliteQuery(this, it->second);
}

int64_t SqliteDb::LastInsertRowId() const {
  return sqlite3_last_insert_rowid(db_);
}

int SqliteDb::Changes() const { return sqlite3_changes(db_); }

absl::Status SqliteDb::Error(int code, absl::string_view context,
                             absl::string_view message_override) const {
  // The connection's message is for the last failure, which is `code` when
  // the caller reports at once; fall back to the generic text otherwise.
  std::string message(message_override);
  if (message.empty()) {
    message = sqlite3_extended_errcode(db_) == code ? sqlite3_errmsg(db_)
                                                    : sqlite3_errstr(code);
  }
  std::string text = absl::StrCat(path_, ": ", context, ": ", message);
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": not a Tiresias state file: ", message));
    case SQLITE_CORRUPT:
      return absl::DataLossError(
          absl::StrCat(path_, ": state file is corrupt: ", message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(absl::StrCat(
          path_, ": in use by another process (another master on this state "
                 "directory?): ", message));
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(text);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(text);
    case SQLITE_IOERR:
      return absl::UnavailableError(text);
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::StatusOr<SqliteTransaction> SqliteTransaction::Begin(SqliteDb& db) {
  absl::Status status = db.Exec("BEGIN IMMEDIATE");
  if (!status.ok()) return status;
  return SqliteTransaction(&db);
}

SqliteTransaction::~SqliteTransaction() {
  if (db_ != nullptr) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status SqliteTransaction::Commit() {
  absl::Status status = db_->Exec("COMMIT");
  if (status.ok()) db_ = nullptr;
  return status;  // on failure the destructor rolls back
}

}  // namespace tiresias
