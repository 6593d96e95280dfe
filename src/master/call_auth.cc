#include "master/call_auth.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "security/identity.h"
#include "security/tls.h"

namespace tiresias {

absl::StatusOr<Principal> CallAuth::Client(const grpc::ServerContextBase& ctx,
                                           std::string_view action) {
  const std::string peer = security::PeerAddress(ctx);
  if (!state_->options().require_auth) {
    return Principal{"", true, "insecure", peer};
  }
  if (std::optional<std::string> token = security::BearerToken(ctx)) {
    absl::StatusOr<Principal> who = state_->AuthenticateToken(*token);
    if (!who.ok()) {
      Record("-", peer, action, "unauthenticated",
             std::string(who.status().message()));
      return who.status();
    }
    who->peer = peer;
    return who;
  }
  if (std::optional<security::Identity> id = security::PeerIdentity(ctx);
      id && id->kind == security::IdentityKind::kUser) {
    return Principal{id->name, false, "certificate", peer};
  }
  const std::string why =
      "no credential: this master requires a bearer token (set "
      "TIRESIAS_TOKEN or TIRESIAS_TOKEN_FILE; an admin makes one with "
      "`tiresias admin token create --user YOU`) or a user certificate "
      "(TIRESIAS_CERT and TIRESIAS_KEY)";
  Record("-", peer, action, "unauthenticated", why);
  return absl::UnauthenticatedError(why);
}

absl::Status CallAuth::Deny(const Principal& who, std::string_view action,
                            std::string_view why) {
  Record(who.Name(), who.peer, action, "denied", std::string(why));
  return absl::PermissionDeniedError(
      absl::StrCat(ToAbsl(action), ": ", ToAbsl(why)));
}

void CallAuth::Done(const Principal& who, std::string_view action,
                    std::string_view detail) {
  Record(who.Name(), who.peer, action, "ok", std::string(detail));
}

absl::Status CallAuth::Agent(const grpc::ServerContextBase& ctx,
                             std::string_view node, std::string_view action) {
  if (!state_->options().require_auth) return absl::OkStatus();
  const std::string peer = security::PeerAddress(ctx);
  std::optional<security::Identity> id = security::PeerIdentity(ctx);
  if (!id || id->kind != security::IdentityKind::kAgent) {
    const std::string why =
        "an agent must present its node's certificate from the cluster's CA "
        "(`tiresias admin agent-cert issue NODE`)";
    Record("-", peer, action, "unauthenticated", why);
    return absl::UnauthenticatedError(why);
  }
  if (id->name != node) {
    const std::string why =
        absl::StrCat("the certificate is node ", id->name, "'s, not node ",
                     ToAbsl(node), "'s: an agent speaks only for its own node");
    Record(absl::StrCat("agent:", id->name), peer, action, "denied", why);
    return absl::PermissionDeniedError(why);
  }
  return absl::OkStatus();
}

void CallAuth::Record(std::string principal, std::string peer,
                      std::string_view action, std::string outcome,
                      std::string detail) {
  state_->Audit(AuditRecord{.principal = std::move(principal),
                            .peer = std::move(peer),
                            .action = std::string(action),
                            .outcome = std::move(outcome),
                            .detail = std::move(detail)});
}

void RedactFor(const Principal& viewer, bool hide_commands, v1::Job* job) {
  if (viewer.MayActOn(job->spec().user())) return;
  job->mutable_spec()->clear_env();
  // A webhook URL often carries its receiver's secret.
  job->mutable_spec()->clear_notify();
  if (hide_commands) job->mutable_spec()->clear_command();
}

}  // namespace tiresias
