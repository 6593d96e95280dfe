#include "master/http_server.h"

#include <httplib.h>

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/metrics.h"
#include "security/tokens.h"

namespace tiresias {
namespace {

constexpr char kInsecureNote[] = " (insecure: no TLS, no authentication)";

// The token of an "Authorization: Bearer <token>" header ("Bearer" in any
// case), or nullopt.
std::optional<std::string> BearerToken(const httplib::Request& req) {
  const std::string header = req.get_header_value("Authorization");
  constexpr absl::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(header, kScheme)) {
    return std::nullopt;
  }
  std::string token(absl::StripAsciiWhitespace(
      absl::string_view(header).substr(kScheme.size())));
  if (token.empty()) return std::nullopt;
  return token;
}

// OK when /metrics may be served to `req`; else answers 401 on `res`,
// audited as a refusal, and returns false.
bool MayReadMetrics(MasterState& state, const httplib::Request& req,
                    httplib::Response& res) {
  std::optional<std::string> token = BearerToken(req);
  absl::Status refused;
  if (!token) {
    refused = absl::UnauthenticatedError(
        "no credential: /metrics on this master needs \"Authorization: "
        "Bearer <token>\" (any valid token: `tiresias admin token create`)");
  } else {
    refused = state.AuthenticateToken(*token).status();
  }
  if (refused.ok()) return true;
  const std::string why =
      security::RedactTokens(std::string(refused.message()));
  state.Audit(
      AuditRecord{.principal = "-",
                  .peer = absl::StrCat(req.remote_addr, ":", req.remote_port),
                  .action = "GET /metrics",
                  .outcome = "unauthenticated",
                  .detail = why});
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer realm=\"tiresias\"");
  res.set_content(why + "\n", "text/plain");
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MasterHttpServer>> MasterHttpServer::Start(
    MasterState* state, const std::string& address,
    const MasterHttpOptions& options) {
  const bool token_required = options.metrics_token_required;
  auto routes = [state, token_required, more = options.more_metrics](
                    httplib::Server& http, int) {
    http.Get("/metrics", [state, token_required, more](
                             const httplib::Request& req,
                             httplib::Response& res) {
      if (token_required && !MayReadMetrics(*state, req, res)) return;
      absl::StatusOr<MasterState::Metrics> metrics =
          state->SnapshotMetrics(/*with_vcs=*/true);
      if (!metrics.ok()) {
        res.status = 503;
        res.set_content(std::string(metrics.status().message()) + "\n",
                        "text/plain");
        return;
      }
      std::string page = RenderPrometheusMetrics(*metrics);
      if (more) page += more();
      res.set_content(page, "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get(
        "/healthz", [state](const httplib::Request&, httplib::Response& res) {
          absl::Status health = state->CheckHealth();
          res.status = health.ok() ? 200 : 503;
          const bool insecure = !state->options().require_auth;
          res.set_content(absl::StrCat(health.ok() ? "ok" : health.message(),
                                       insecure ? kInsecureNote : "", "\n"),
                          "text/plain");
        });
  };
  std::unique_ptr<MasterHttpServer> server(new MasterHttpServer());
  ASSIGN_OR_RETURN(server->listener_, HttpListener::Start(address, routes));
  return server;
}

MasterHttpServer::~MasterHttpServer() { Shutdown(); }

void MasterHttpServer::Shutdown() {
  if (listener_) listener_->Shutdown();
}

int MasterHttpServer::port() const { return listener_->port(); }

}  // namespace tiresias
