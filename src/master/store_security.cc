// SqliteStore: bearer tokens and the audit log (schema version 5). Each
// write is one transaction, durable before it returns, like every write of
// the store. Audit rows are written escaped and read back escaped
// (SanitizedAuditRecord): a row an older master wrote raw reads as clean
// text too.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/audit_text.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"

namespace tiresias {
namespace {

std::optional<Seconds> OptionalTime(const SqliteQuery& row, int column) {
  if (row.IsNull(column)) return std::nullopt;
  return Seconds{row.Double(column)};
}

std::optional<double> Raw(const std::optional<Seconds>& t) {
  if (!t) return std::nullopt;
  return t->count();
}

absl::Status CheckTime(const char* field, Seconds t) {
  if (!std::isfinite(t.count())) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected a finite time, got ", t.count()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> SqliteStore::CreateToken(const TokenRecord& token) {
  RETURN_IF_ERROR(CheckTime("created", token.created));
  if (token.expires) RETURN_IF_ERROR(CheckTime("expires", *token.expires));
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      SqliteQuery insert,
      db_->Prepare("INSERT INTO tokens (user, admin, salt, hash, created, "
                   "expires, revoked, description) VALUES (?, ?, ?, ?, ?, ?, "
                   "NULL, ?)"));
  RETURN_IF_ERROR(insert.Bind(1, token.user)
                      .Bind(2, int64_t{token.admin ? 1 : 0})
                      .Bind(3, token.salt)
                      .Bind(4, token.hash)
                      .Bind(5, token.created.count())
                      .Bind(6, Raw(token.expires))
                      .Bind(7, token.description)
                      .Run());
  const int64_t id = db_->LastInsertRowId();
  RETURN_IF_ERROR(CommitLocked(txn));
  return id;
}

absl::Status SqliteStore::RevokeToken(int64_t id, Seconds at) {
  RETURN_IF_ERROR(CheckTime("revoked", at));
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      SqliteQuery update,
      db_->Prepare("UPDATE tokens SET revoked = coalesce(revoked, ?) "
                   "WHERE id = ?"));
  RETURN_IF_ERROR(update.Bind(1, at.count()).Bind(2, id).Run());
  if (db_->Changes() == 0) {
    return absl::NotFoundError(absl::StrCat("token ", id, ": no such token"));
  }
  return CommitLocked(txn);
}

absl::StatusOr<std::vector<TokenRecord>> SqliteStore::ListTokens() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT id, user, admin, salt, hash, created, expires, "
                   "revoked, description FROM tokens ORDER BY id"));
  std::vector<TokenRecord> tokens;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return tokens;
    TokenRecord t;
    t.id = query.Int(0);
    t.user = query.Text(1);
    t.admin = query.Int(2) != 0;
    t.salt = query.Text(3);
    t.hash = query.Text(4);
    t.created = Seconds{query.Double(5)};
    t.expires = OptionalTime(query, 6);
    t.revoked = OptionalTime(query, 7);
    t.description = query.Text(8);
    tokens.push_back(std::move(t));
  }
}

absl::Status SqliteStore::AppendAudit(const AuditRecord& given) {
  RETURN_IF_ERROR(CheckTime("time", given.time));
  const AuditRecord record = SanitizedAuditRecord(given);
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      SqliteQuery insert,
      db_->Prepare("INSERT INTO audit (time, principal, peer, action, "
                   "outcome, detail) VALUES (?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(insert.Bind(1, record.time.count())
                      .Bind(2, record.principal)
                      .Bind(3, record.peer)
                      .Bind(4, record.action)
                      .Bind(5, record.outcome)
                      .Bind(6, record.detail)
                      .Run());
  return CommitLocked(txn);
}

absl::StatusOr<std::vector<AuditRecord>> SqliteStore::AuditAfter(
    int64_t after, int limit) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT sequence, time, principal, peer, action, outcome, "
                   "detail FROM audit WHERE sequence > ? ORDER BY sequence "
                   "LIMIT ?"));
  query.Bind(1, after).Bind(2, int64_t{limit});
  std::vector<AuditRecord> records;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return records;
    AuditRecord r;
    r.sequence = query.Int(0);
    r.time = Seconds{query.Double(1)};
    r.principal = query.Text(2);
    r.peer = query.Text(3);
    r.action = query.Text(4);
    r.outcome = query.Text(5);
    r.detail = query.Text(6);
    records.push_back(SanitizedAuditRecord(std::move(r)));
  }
}

}  // namespace tiresias
