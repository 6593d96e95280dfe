#include "master/sqlite_db.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tiresias {

SqliteQuery::SqliteQuery(SqliteQuery&& other) noexcept
    : db_(other.db_),
      stmt_(other.stmt_),
      bind_error_(other.bind_error_),
      last_error_code_(other.last_error_code_),
      stepped_(other.stepped_),
      binds_(std::move(other.binds_)),
      captured_at_(other.captured_at_) {
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
  if (db_->capturing()) {
    Keep(index, {.kind = SqliteValue::Kind::kInteger, .integer = value});
  }
  return *this;
}

SqliteQuery& SqliteQuery::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  if (db_->capturing()) {
    Keep(index, {.kind = SqliteValue::Kind::kReal, .real = value});
  }
  return *this;
}

SqliteQuery& SqliteQuery::Bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  if (db_->capturing()) {
    Keep(index,
         {.kind = SqliteValue::Kind::kText, .bytes = std::string(value)});
  }
  return *this;
}

SqliteQuery& SqliteQuery::BindBlob(int index, std::string_view bytes) {
  // A null pointer would bind NULL: an empty blob needs one that is not.
  static constexpr char kEmpty[] = "";
  int rc =
      sqlite3_bind_blob64(stmt_, index, bytes.data() ? bytes.data() : kEmpty,
                          bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  if (db_->capturing()) {
    Keep(index,
         {.kind = SqliteValue::Kind::kBlob, .bytes = std::string(bytes)});
  }
  return *this;
}

SqliteQuery& SqliteQuery::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  if (db_->capturing()) Keep(index, {});
  return *this;
}

absl::StatusOr<bool> SqliteQuery::Step() {
  if (bind_error_ != 0) {
    last_error_code_ = bind_error_;
    return db_->Error(bind_error_, "binding a value");
  }
  const bool capture =
      !stepped_ && db_->capturing() && !sqlite3_stmt_readonly(stmt_);
  if (capture && !db_->in_transaction_) {
    return absl::InternalError(
        absl::StrCat(db_->path(),
                     ": a write outside a transaction cannot "
                     "be replicated: ",
                     sqlite3_sql(stmt_)));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
    // A failed statement changed nothing (SQLite undoes it alone): only
    // one that ran is kept.
    if (capture) {
      captured_at_ = static_cast<int>(db_->captured_.size());
      db_->captured_.push_back({sqlite3_sql(stmt_), std::move(binds_)});
      binds_.clear();
    }
    stepped_ = true;
  }
  if (rc == SQLITE_DONE && captured_at_ >= 0 &&
      static_cast<size_t>(captured_at_) < db_->captured_.size()) {
    db_->captured_[captured_at_].changes =
        sqlite3_changes64(sqlite3_db_handle(stmt_));
  }
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

void SqliteQuery::Keep(int index, SqliteValue value) {
  if (index < 1) return;
  if (binds_.size() < static_cast<size_t>(index)) binds_.resize(index);
  binds_[index - 1] = std::move(value);
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

absl::StatusOr<std::unique_ptr<SqliteBackup>> SqliteBackup::Start(
    SqliteDb& from, SqliteDb& to) {
  sqlite3_backup* backup =
      sqlite3_backup_init(to.db_, "main", from.db_, "main");
  if (backup == nullptr) {
    return to.Error(sqlite3_extended_errcode(to.db_),
                    absl::StrCat("starting a copy of ", from.path()));
  }
  return std::unique_ptr<SqliteBackup>(new SqliteBackup(&to, backup));
}

SqliteBackup::~SqliteBackup() { sqlite3_backup_finish(backup_); }

absl::StatusOr<bool> SqliteBackup::Step(int pages) {
  const int rc = sqlite3_backup_step(backup_, pages);
  if (rc == SQLITE_DONE) return true;
  if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    return false;  // more to copy, or the source was busy: again
  }
  return to_->Error(rc, "copying the database");
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

absl::Status SqliteDb::Replay(const SqliteWrite& write) {
  ASSIGN_OR_RETURN(SqliteQuery query, Prepare(write.sql));
  for (size_t i = 0; i < write.binds.size(); ++i) {
    const SqliteValue& v = write.binds[i];
    const int index = static_cast<int>(i + 1);
    switch (v.kind) {
      case SqliteValue::Kind::kNull:
        query.BindNull(index);
        break;
      case SqliteValue::Kind::kInteger:
        query.Bind(index, v.integer);
        break;
      case SqliteValue::Kind::kReal:
        query.Bind(index, v.real);
        break;
      case SqliteValue::Kind::kText:
        query.Bind(index, std::string_view(v.bytes));
        break;
      case SqliteValue::Kind::kBlob:
        query.BindBlob(index, v.bytes);
        break;
    }
  }
  RETURN_IF_ERROR(query.Run());
  if (write.changes >= 0 && sqlite3_changes64(db_) != write.changes) {
    return absl::DataLossError(absl::StrCat(
        path_, ": replaying \"", write.sql, "\" changed ",
        sqlite3_changes64(db_), " rows, not ", write.changes,
        " as it did on the leader: this copy has drifted from the log"));
  }
  return absl::OkStatus();
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
  db.in_transaction_ = true;
  db.captured_.clear();
  return SqliteTransaction(&db);
}

SqliteTransaction::~SqliteTransaction() {
  if (db_ == nullptr) return;
  db_->Exec("ROLLBACK").IgnoreError();
  db_->in_transaction_ = false;
  db_->captured_.clear();
}

absl::Status SqliteTransaction::Commit() {
  SqliteReplicator* replicator = db_->replicator_;
  const bool replicated = replicator != nullptr && !db_->captured_.empty();
  if (replicated) {
    std::vector<SqliteWrite> writes = std::move(db_->captured_);
    db_->captured_.clear();
    db_->replicating_ = true;
    absl::Status shipped = replicator->Replicate(*db_, std::move(writes));
    db_->replicating_ = false;
    if (!shipped.ok()) return shipped;  // the destructor rolls back
  }
  absl::Status status = db_->Exec("COMMIT");
  if (status.ok()) {
    db_->in_transaction_ = false;
    db_ = nullptr;
  } else if (replicated) {
    replicator->CommitFailed(status);
  }
  return status;  // on failure the destructor rolls back
}

}  // namespace tiresias
