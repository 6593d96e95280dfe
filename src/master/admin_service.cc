#include "master/admin_service.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "master/service.h"
#include "master/tuning_convert.h"
#include "security/rpc_status.h"

namespace tiresias {

absl::StatusOr<Principal> AdminService::Admin(const grpc::ServerContext& ctx,
                                              std::string_view action) {
  ASSIGN_OR_RETURN(Principal who, auth_.Client(ctx, action));
  if (!who.admin) {
    return auth_.Deny(who, action,
                      "only an admin may manage tokens, virtual clusters and "
                      "read the audit log");
  }
  return who;
}

grpc::Status AdminService::CreateToken(grpc::ServerContext* ctx,
                                       const v1::CreateTokenRequest* req,
                                       v1::CreateTokenResponse* resp) {
  absl::StatusOr<Principal> who = Admin(*ctx, "CreateToken");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (!std::isfinite(req->ttl_seconds()) || req->ttl_seconds() < 0) {
    return security::ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "ttl_seconds: expected 0 (never expires) or a positive number, got ",
        req->ttl_seconds())));
  }
  std::optional<Seconds> ttl;
  if (req->ttl_seconds() > 0) ttl = Seconds{req->ttl_seconds()};
  absl::StatusOr<MasterState::IssuedTokenText> token = state_->CreateToken(
      req->user(), req->admin(), ttl, req->description());
  if (!token.ok()) return security::ToGrpc(token.status());
  auth_.Done(*who, absl::StrCat("CreateToken ", token->id),
             absl::StrCat("for ", req->user(), req->admin() ? " (admin)" : "",
                          ttl ? absl::StrCat(", expires in ", ttl->count(), " s")
                              : ", never expires"));
  resp->set_id(token->id);
  resp->set_token(token->text);
  if (token->expires) resp->set_expires(token->expires->count());
  return grpc::Status::OK;
}

grpc::Status AdminService::ListTokens(grpc::ServerContext* ctx,
                                      const v1::ListTokensRequest*,
                                      v1::ListTokensResponse* resp) {
  absl::StatusOr<Principal> who = Admin(*ctx, "ListTokens");
  if (!who.ok()) return security::ToGrpc(who.status());
  for (const TokenRecord& t : state_->ListTokens()) {
    v1::TokenInfo* out = resp->add_tokens();
    out->set_id(t.id);
    out->set_user(t.user);
    out->set_admin(t.admin);
    out->set_created(t.created.count());
    if (t.expires) out->set_expires(t.expires->count());
    if (t.revoked) out->set_revoked(t.revoked->count());
    out->set_description(t.description);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::RevokeToken(grpc::ServerContext* ctx,
                                       const v1::RevokeTokenRequest* req,
                                       v1::RevokeTokenResponse*) {
  absl::StatusOr<Principal> who = Admin(*ctx, "RevokeToken");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (absl::Status s = state_->RevokeToken(req->id()); !s.ok()) {
    return security::ToGrpc(s);
  }
  auth_.Done(*who, absl::StrCat("RevokeToken ", req->id()), "");
  return grpc::Status::OK;
}

grpc::Status AdminService::ListAudit(grpc::ServerContext* ctx,
                                     const v1::ListAuditRequest* req,
                                     v1::ListAuditResponse* resp) {
  absl::StatusOr<Principal> who = Admin(*ctx, "ListAudit");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (req->limit() < 0 || req->after_sequence() < 0) {
    return security::ToGrpc(absl::InvalidArgumentError(
        "limit, after_sequence: expected >= 0"));
  }
  const int limit = req->limit() == 0
                        ? kMaxAuditEntries
                        : std::min(req->limit(), kMaxAuditEntries);
  absl::StatusOr<std::vector<AuditRecord>> records =
      state_->AuditAfter(req->after_sequence(), limit);
  if (!records.ok()) return security::ToGrpc(records.status());
  for (const AuditRecord& r : *records) {
    v1::AuditEntry* out = resp->add_entries();
    out->set_sequence(r.sequence);
    out->set_time(r.time.count());
    out->set_principal(r.principal);
    out->set_peer(r.peer);
    out->set_action(r.action);
    out->set_outcome(r.outcome);
    out->set_detail(r.detail);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::SetVc(grpc::ServerContext* ctx,
                                 const v1::SetVcRequest* req,
                                 v1::SetVcResponse*) {
  const std::string action =
      absl::StrCat(req->create() ? "CreateVc " : "SetVc ", req->vc().name());
  absl::StatusOr<Principal> who = Admin(*ctx, action);
  if (!who.ok()) return security::ToGrpc(who.status());
  VcRecord vc = VcFromProto(req->vc());
  std::optional<VcRecord> expected;
  if (req->has_expected()) expected = VcFromProto(req->expected());
  if (absl::Status s = state_->SetVc(vc, req->create(), expected); !s.ok()) {
    return security::ToGrpc(s);
  }
  auth_.Done(
      *who, action,
      absl::StrCat("quota ", vc.quota.empty() ? "none" : vc.quota, ", weight ",
                   vc.weight, ", borrow ", vc.borrow_limit, ", lend ",
                   vc.lend_limit, ", members ", vc.members.size()));
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveVc(grpc::ServerContext* ctx,
                                    const v1::RemoveVcRequest* req,
                                    v1::RemoveVcResponse*) {
  const std::string action = absl::StrCat("RemoveVc ", req->name());
  absl::StatusOr<Principal> who = Admin(*ctx, action);
  if (!who.ok()) return security::ToGrpc(who.status());
  if (absl::Status s = state_->RemoveVc(req->name()); !s.ok()) {
    return security::ToGrpc(s);
  }
  auth_.Done(*who, action, "");
  return grpc::Status::OK;
}

grpc::Status AdminService::SetQos(grpc::ServerContext* ctx,
                                  const v1::SetQosRequest* req,
                                  v1::SetQosResponse*) {
  const std::string action =
      absl::StrCat(req->create() ? "CreateQos " : "SetQos ", req->qos().name());
  absl::StatusOr<Principal> who = Admin(*ctx, action);
  if (!who.ok()) return security::ToGrpc(who.status());
  QosRecord qos = QosFromProto(req->qos());
  std::optional<QosRecord> expected;
  if (req->has_expected()) expected = QosFromProto(req->expected());
  if (absl::Status s = state_->SetQos(qos, req->create(), expected); !s.ok()) {
    return security::ToGrpc(s);
  }
  auth_.Done(
      *who, action,
      absl::StrCat("priority ", qos.priority, ", no-preempt ",
                   qos.allow_no_preempt ? "allowed" : "not allowed",
                   ", max GPUs per user ", qos.max_gpus_per_user, ", users ",
                   qos.users.size(), ", vcs ", qos.vcs.size()));
  return grpc::Status::OK;
}

grpc::Status AdminService::SetTuning(grpc::ServerContext* ctx,
                                     const v1::SetTuningRequest* req,
                                     v1::SetTuningResponse* resp) {
  const std::string action = "SetTuning";
  absl::StatusOr<Principal> who = Admin(*ctx, action);
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<v1::TuningStatus> status = state_->SetTuning(
      *req, who->user.empty() ? std::string("(insecure)") : who->user);
  if (!status.ok()) return security::ToGrpc(status.status());
  *resp->mutable_status() = *status;
  auth_.Done(*who, action,
             absl::StrCat(DescribeTuning(status->tuning()),
                          req->note().empty() ? "" : ": ", req->note()));
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveQos(grpc::ServerContext* ctx,
                                     const v1::RemoveQosRequest* req,
                                     v1::RemoveQosResponse*) {
  const std::string action = absl::StrCat("RemoveQos ", req->name());
  absl::StatusOr<Principal> who = Admin(*ctx, action);
  if (!who.ok()) return security::ToGrpc(who.status());
  if (absl::Status s = state_->RemoveQos(req->name()); !s.ok()) {
    return security::ToGrpc(s);
  }
  auth_.Done(*who, action, "");
  return grpc::Status::OK;
}

}  // namespace tiresias
