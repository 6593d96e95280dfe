// MasterState: bearer tokens and the audit log.
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/agent_reports.h"
#include "master/audit_text.h"
#include "master/master_state.h"
#include "core/to_absl.h"
#include "security/identity.h"
#include "security/tokens.h"

namespace tiresias {
namespace {

absl::Status Unauthenticated(absl::string_view why) {
  return absl::UnauthenticatedError(
      absl::StrCat(why, "; ask an admin for a token (`tiresias admin token "
                        "create --user YOU`) and set TIRESIAS_TOKEN"));
}

}  // namespace

absl::StatusOr<Principal> MasterState::AuthenticateToken(
    const std::string& token) {
  absl::StatusOr<security::ParsedToken> parsed = security::ParseToken(token);
  if (!parsed.ok()) return Unauthenticated("the token is malformed");
  const Seconds now = clock_->NowUnixSeconds();
  MutexLock lock(&auth_mu_);
  auto it = tokens_.find(parsed->id);
  // The same answer for an unknown id and a wrong secret: it says nothing
  // about which tokens exist.
  if (it == tokens_.end() ||
      !security::SecretMatches(parsed->secret, it->second.salt,
                               it->second.hash)) {
    return Unauthenticated(
        absl::StrCat("token ", parsed->id, " is not valid"));
  }
  const TokenRecord& t = it->second;
  if (t.revoked) {
    return Unauthenticated(absl::StrCat("token ", t.id, " was revoked"));
  }
  if (t.expires && now >= *t.expires) {
    return Unauthenticated(absl::StrCat("token ", t.id, " has expired"));
  }
  return Principal{t.user, t.admin, "token", ""};
}

absl::StatusOr<MasterState::IssuedTokenText> MasterState::CreateToken(
    const std::string& user, bool admin, std::optional<Seconds> ttl,
    const std::string& description) {
  // Tasks run as the owner's Unix account: a name that could be one.
  if (absl::Status valid = security::ValidateUserName(user); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("user: ", valid.message()));
  }
  if (description.size() > 256 || !IsPrintableUtf8(description)) {
    return absl::InvalidArgumentError(
        "description: expected at most 256 printable bytes");
  }
  if (ttl && !(ttl->count() > 0 && std::isfinite(ttl->count()))) {
    return absl::InvalidArgumentError(
        "ttl_seconds: expected a positive number of seconds, or 0 for none");
  }
  const Seconds now = clock_->NowUnixSeconds();
  // The store gives the id; the secret, its salt and hash do not depend on
  // it, so the text is composed once the row exists.
  const security::IssuedToken issued = security::NewToken(1);
  ASSIGN_OR_RETURN(const security::ParsedToken parsed,
                   security::ParseToken(issued.text));
  TokenRecord record;
  record.user = user;
  record.admin = admin;
  record.salt = issued.salt;
  record.hash = issued.hash;
  record.created = now;
  if (ttl) record.expires = now + *ttl;
  record.description = description;
  // Durable first; only then does it authenticate anyone.
  ASSIGN_OR_RETURN(record.id, store_->CreateToken(record));
  IssuedTokenText out{
      record.id,
      absl::StrCat(ToAbsl(security::kTokenPrefix), record.id, "_",
                   parsed.secret),
      record.expires};
  MutexLock lock(&auth_mu_);
  tokens_[record.id] = std::move(record);
  return out;
}

std::vector<TokenRecord> MasterState::ListTokens() {
  MutexLock lock(&auth_mu_);
  std::vector<TokenRecord> out;
  for (const auto& [id, t] : tokens_) {
    TokenRecord shown = t;
    shown.salt.clear();
    shown.hash.clear();
    out.push_back(std::move(shown));
  }
  return out;
}

absl::Status MasterState::RevokeToken(int64_t id) {
  const Seconds now = clock_->NowUnixSeconds();
  RETURN_IF_ERROR(store_->RevokeToken(id, now));
  MutexLock lock(&auth_mu_);
  auto it = tokens_.find(id);
  if (it != tokens_.end() && !it->second.revoked) it->second.revoked = now;
  return absl::OkStatus();
}

void MasterState::Audit(AuditRecord record) {
  record.time = clock_->NowUnixSeconds();
  record.detail = security::RedactTokens(record.detail);
  record.action = security::RedactTokens(record.action);
  // Escaped before anything reads it: the rate limit's causes, stderr and
  // the store all see clean text.
  record = SanitizedAuditRecord(std::move(record));
  std::vector<AuditRecord> to_write;
  {
    MutexLock lock(&auth_mu_);
    to_write = audit_limit_.Admit(std::move(record));
  }
  WriteAudit(to_write);
}

void MasterState::FlushAudit() {
  const Seconds now = clock_->NowUnixSeconds();
  std::optional<AuditRecord> summary;
  {
    MutexLock lock(&auth_mu_);
    summary = audit_limit_.Flush(now);
  }
  if (summary) WriteAudit({*std::move(summary)});
}

void MasterState::WriteAudit(const std::vector<AuditRecord>& records) {
  for (const AuditRecord& record : records) {
    std::fprintf(stderr, "tiresias master: audit: %s %s from %s: %s%s%s\n",
                 record.principal.c_str(), record.action.c_str(),
                 record.peer.c_str(), record.outcome.c_str(),
                 record.detail.empty() ? "" : ": ", record.detail.c_str());
    if (absl::Status s = store_->AppendAudit(record); !s.ok()) {
      std::fprintf(stderr, "tiresias master: audit log: %s\n",
                   s.ToString().c_str());
    }
  }
}

absl::StatusOr<std::vector<AuditRecord>> MasterState::AuditAfter(int64_t after,
                                                                 int limit) {
  return store_->AuditAfter(after, limit);
}

}  // namespace tiresias
