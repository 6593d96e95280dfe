// `tiresias admin token create|list|revoke` and `tiresias admin audit`: the
// master's Admin API (an admin's token in TIRESIAS_TOKEN(_FILE)), and
// `tiresias whoami`.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "api/api_json.h"
#include "cli/admin_command.h"
#include "cli/cluster_client.h"
#include "cli/printable.h"
#include "security/tokens.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct TokenFlags {
  std::string master;
  std::string user;
  bool admin = false;
  std::string expires;  // "30d"; empty: never
  std::string description;
  int64_t id = 0;
  int64_t after = 0;
  int limit = 100;
  bool json = false;
};

int CreateToken(const TokenFlags& f) {
  v1::CreateTokenRequest req;
  req.set_user(f.user);
  req.set_admin(f.admin);
  req.set_description(f.description);
  if (!f.expires.empty()) {
    absl::StatusOr<std::chrono::seconds> ttl =
        security::ParseDuration(f.expires, "--expires");
    if (!ttl.ok()) return Fail(std::string(ttl.status().message()));
    req.set_ttl_seconds(static_cast<double>(ttl->count()));
  }
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::CreateTokenResponse resp;
  grpc::Status s = stub->CreateToken(client.Context().get(), req, &resp);
  if (!s.ok()) {
    return Fail(cli::DescribeRpcError(s, f.master, "admin token create"));
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::CreateTokenJson(resp)).c_str());
    return 0;
  }
  // The token on stdout alone (for `$(...)`); what it is on stderr.
  std::printf("%s\n", resp.token().c_str());
  std::fprintf(stderr,
               "token %lld for %s%s, %s; shown this once (the master keeps "
               "only a hash)\n",
               static_cast<long long>(resp.id()), f.user.c_str(),
               f.admin ? " (admin)" : "",
               resp.has_expires()
                   ? absl::StrCat("expires ", cli::FormatTime(resp.expires()))
                         .c_str()
                   : "never expires");
  return 0;
}

int ListTokens(const TokenFlags& f) {
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::ListTokensResponse resp;
  grpc::Status s = stub->ListTokens(client.Context().get(), {}, &resp);
  if (!s.ok()) return Fail(cli::DescribeRpcError(s, f.master, "admin token list"));
  if (f.json) {
    std::printf("%s\n", api::Dump(api::TokenListJson(resp)).c_str());
    return 0;
  }
  std::printf("%-5s %-16s %-5s %-19s  %-19s  %-19s  %s\n", "ID", "USER",
              "ADMIN", "CREATED", "EXPIRES", "REVOKED", "DESCRIPTION");
  for (const v1::TokenInfo& t : resp.tokens()) {
    std::printf("%-5lld %-16s %-5s %-19s  %-19s  %-19s  %s\n",
                static_cast<long long>(t.id()), cli::Printable(t.user()).c_str(),
                t.admin() ? "yes" : "no", cli::FormatTime(t.created()).c_str(),
                t.has_expires() ? cli::FormatTime(t.expires()).c_str() : "never",
                t.has_revoked() ? cli::FormatTime(t.revoked()).c_str() : "-",
                cli::Printable(t.description()).c_str());
  }
  return 0;
}

int RevokeToken(const TokenFlags& f) {
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::RevokeTokenRequest req;
  req.set_id(f.id);
  v1::RevokeTokenResponse resp;
  grpc::Status s = stub->RevokeToken(client.Context().get(), req, &resp);
  if (!s.ok()) {
    return Fail(cli::DescribeRpcError(s, f.master,
                                      absl::StrCat("revoke token ", f.id)));
  }
  std::printf("token %lld revoked\n", static_cast<long long>(f.id));
  return 0;
}

int Audit(const TokenFlags& f) {
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::ListAuditRequest req;
  req.set_after_sequence(f.after);
  req.set_limit(f.limit);
  v1::ListAuditResponse resp;
  grpc::Status s = stub->ListAudit(client.Context().get(), req, &resp);
  if (!s.ok()) return Fail(cli::DescribeRpcError(s, f.master, "admin audit"));
  if (f.json) {
    std::printf("%s\n", api::Dump(api::AuditJson(resp)).c_str());
    return 0;
  }
  std::printf("%-6s %-19s  %-14s %-16s %-22s %-28s %s\n", "SEQ", "TIME",
              "OUTCOME", "WHO", "FROM", "ACTION", "DETAIL");
  for (const v1::AuditEntry& e : resp.entries()) {
    std::printf("%-6lld %-19s  %-14s %-16s %-22s %-28s %s\n",
                static_cast<long long>(e.sequence()),
                cli::FormatTime(e.time()).c_str(),
                cli::Printable(e.outcome()).c_str(),
                cli::Printable(e.principal()).c_str(),
                cli::Printable(e.peer()).c_str(),
                cli::Printable(e.action()).c_str(),
                cli::Printable(e.detail()).c_str());
  }
  return 0;
}

int WhoAmI(const TokenFlags& f) {
  MasterClient client(f.master);
  v1::WhoAmIResponse resp;
  grpc::Status s = client.stub().WhoAmI(client.Context().get(), {}, &resp);
  if (!s.ok()) return Fail(cli::DescribeRpcError(s, f.master, "whoami"));
  if (f.json) {
    std::printf("%s\n", api::Dump(api::WhoAmIJson(resp)).c_str());
  } else if (resp.insecure()) {
    std::printf("anyone (the master at %s runs --insecure: no "
                "authentication)\n",
                f.master.c_str());
  } else {
    std::printf("%s%s (by %s)\n", cli::Printable(resp.user()).c_str(),
                resp.admin() ? ", admin" : "", resp.via().c_str());
  }
  return 0;
}

}  // namespace

void AddAdminTokenCommands(CLI::App* admin, int* exit_code) {
  CLI::App* token = admin->add_subcommand(
      "token", "The master's bearer tokens (needs an admin token)");
  token->require_subcommand(1);

  auto create = std::make_shared<TokenFlags>();
  CLI::App* cmd = token->add_subcommand(
      "create",
      "Issue a token; prints it once on stdout (the master keeps a hash)");
  cli::AddMasterFlag(cmd, &create->master);
  cmd->add_option("--user", create->user, "Whom it authenticates")->required();
  cmd->add_flag("--admin", create->admin,
                "An admin token: every job and node, tokens, the audit log");
  cmd->add_option("--expires", create->expires,
                  "Lifetime, e.g. 30d, 12h, 45m (default: never)");
  cmd->add_option("--description", create->description, "What it is for");
  cmd->add_flag("--json", create->json, "Print as JSON");
  cmd->callback([create, exit_code] { *exit_code = CreateToken(*create); });

  auto list = std::make_shared<TokenFlags>();
  cmd = token->add_subcommand("list", "Every token (no secrets)");
  cli::AddMasterFlag(cmd, &list->master);
  cmd->add_flag("--json", list->json, "Print as JSON");
  cmd->callback([list, exit_code] { *exit_code = ListTokens(*list); });

  auto revoke = std::make_shared<TokenFlags>();
  cmd = token->add_subcommand("revoke", "Revoke a token at once");
  cli::AddMasterFlag(cmd, &revoke->master);
  cmd->add_option("id", revoke->id, "Token id (from `token list`)")
      ->required();
  cmd->callback([revoke, exit_code] { *exit_code = RevokeToken(*revoke); });

  auto audit = std::make_shared<TokenFlags>();
  cmd = admin->add_subcommand(
      "audit",
      "The master's audit log: refusals, tokens issued and revoked (who, "
      "what, when, from where)");
  cli::AddMasterFlag(cmd, &audit->master);
  cmd->add_option("--after", audit->after, "Entries after this sequence");
  cmd->add_option("--limit", audit->limit, "At most this many (1..1000)")
      ->capture_default_str();
  cmd->add_flag("--json", audit->json, "Print as JSON");
  cmd->callback([audit, exit_code] { *exit_code = Audit(*audit); });
}

void AddWhoAmICommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<TokenFlags>();
  CLI::App* cmd = app.add_subcommand(
      "whoami", "Who the master takes you to be (your credentials checked)");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_flag("--json", f->json, "Print as JSON");
  cmd->callback([f, exit_code] { *exit_code = WhoAmI(*f); });
}

}  // namespace tiresias
