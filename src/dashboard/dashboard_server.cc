#include "dashboard/dashboard_server.h"

#include <httplib.h>

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dashboard/api_params.h"
#include "dashboard/dashboard_page.h"
#include "dashboard/master_reader.h"
#include "dashboard/request_checks.h"
#include "nlohmann/json.hpp"
#include "security/tokens.h"

namespace tiresias {
namespace {

using nlohmann::json;

constexpr char kSessionCookie[] = "tiresias_session";
// The cookie's flags. Never Secure: the dashboard serves plain HTTP, and a
// browser would not send a Secure cookie back over it.
constexpr char kCookieFlags[] = "; Path=/; HttpOnly; SameSite=Strict";
// A login form is a few hundred bytes; nothing the dashboard accepts is
// bigger.
constexpr size_t kMaxRequestBodyBytes = 16 * 1024;

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

// A page whose inline <script> and <style> carry `nonce`: the only ones the
// browser runs (markup that slipped in would not), and it may only talk to
// and post to this dashboard.
void SendPage(httplib::Response& res, int status, const std::string& html,
              const std::string& nonce) {
  res.status = status;
  res.set_header("Content-Security-Policy",
                 absl::StrCat("default-src 'none'; script-src 'nonce-", nonce,
                              "'; style-src 'nonce-", nonce,
                              "'; connect-src 'self'; img-src 'self' data:; "
                              "form-action 'self'; frame-ancestors 'none'; "
                              "base-uri 'none'"));
  res.set_content(html, "text/html; charset=utf-8");
}

void Redirect(httplib::Response& res, const std::string& cookie) {
  res.status = 303;
  res.set_header("Location", "/");
  if (!cookie.empty()) res.set_header("Set-Cookie", cookie);
}

}  // namespace

class DashboardServer::Backend {
 public:
  Backend(const DashboardOptions& options, HostAllowList hosts)
      : options_(options),
        login_required_(!options.tls.insecure),
        hosts_(std::move(hosts)),
        reader_(options.master_address,
                security::Dial(options.master_address, options.tls,
                               {.target_name_override = options.master_name,
                                .retry_services = {"tiresias.v1.Tiresias"}})),
        sessions_(options.session_idle_timeout) {}

  void Routes(httplib::Server& http) {
    http.set_payload_max_length(kMaxRequestBodyBytes);
    http.set_default_headers({{"Cache-Control", "no-store"},
                              {"X-Content-Type-Options", "nosniff"},
                              {"X-Frame-Options", "DENY"},
                              // Not no-referrer: browsers then send
                              // "Origin: null" with the page's own forms.
                              {"Referrer-Policy", "same-origin"}});
    http.set_pre_routing_handler([this](const httplib::Request& req,
                                        httplib::Response& res) {
      return CheckHost(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                 : httplib::Server::HandlerResponse::Handled;
    });
    http.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
      Page(req, res);
    });
    http.Get("/api/state",
             [this](const httplib::Request& req, httplib::Response& res) {
               Api(req, res, [this](const std::string& token) {
                 return reader_.State(token);
               });
             });
    http.Get(R"(/api/jobs/([^/]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               Api(req, res, [this, &id](const std::string& token) {
                 return reader_.Job(token, id);
               });
             });
    ExtraRoutes(http);
    http.Post("/login", [this](const httplib::Request& req,
                               httplib::Response& res) { Login(req, res); });
    http.Post("/logout", [this](const httplib::Request& req,
                                httplib::Response& res) { Logout(req, res); });
  }

 private:
  using Clock = SessionStore::Clock;

  // The endpoints with parameters and the job actions (see the header).
  void ExtraRoutes(httplib::Server& http) {
    http.Get("/api/jobs",
             [this](const httplib::Request& req, httplib::Response& res) {
               Api(req, res, [this, &req](const std::string& token) {
                 absl::StatusOr<JobsParams> params =
                     ParseJobsParams(ParamsOf(req));
                 if (!params.ok()) return BadRequest(params.status());
                 return reader_.JobsPage(token, *params);
               });
             });
    http.Get("/api/history",
             [this](const httplib::Request& req, httplib::Response& res) {
               Api(req, res, [this, &req](const std::string& token) {
                 absl::StatusOr<HistoryParams> params =
                     ParseHistoryParams(ParamsOf(req));
                 if (!params.ok()) return BadRequest(params.status());
                 return reader_.History(token, *params);
               });
             });
    http.Get(R"(/api/jobs/([^/]+)/log)",
             [this](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               Api(req, res, [this, &req, &id](const std::string& token) {
                 absl::StatusOr<LogParams> params =
                     ParseLogParams(ParamsOf(req));
                 if (!params.ok()) return BadRequest(params.status());
                 return reader_.JobLog(token, id, *params);
               });
             });
    http.Post(R"(/api/jobs/([^/]+)/([a-z]+))",
              [this](const httplib::Request& req, httplib::Response& res) {
                PostJobAction(req, res, req.matches[1], req.matches[2]);
              });
  }

  static QueryParams ParamsOf(const httplib::Request& req) {
    return QueryParams(req.params.begin(), req.params.end());
  }

  static ApiAnswer BadRequest(const absl::Status& status) {
    return ApiAnswer{.status = 400,
                     .body = json{{"error", std::string(status.message())}}};
  }

  // POST /api/jobs/ID/ACTION: from this dashboard's page (Origin), with the
  // page's anti-forgery token, as the session's user (the master decides
  // whether they may).
  void PostJobAction(const httplib::Request& req, httplib::Response& res,
                 const std::string& id, const std::string& action) {
    if (!CheckOrigin(req, res)) return;
    std::optional<std::pair<std::string, Session>> session;
    if (login_required_) {
      session = SessionOf(req);
      if (!session) {
        return SendJson(res, 401,
                        json{{"error",
                              "not logged in (or the session ended): log in "
                              "at / with a token"}});
      }
    }
    const std::string& expected = session ? session->second.csrf : page_csrf_;
    const std::string csrf = req.get_header_value("X-Tiresias-Csrf");
    if (csrf.empty() || csrf != expected) {
      Log(absl::StrCat("refused POST ", Printable(req.path), " from ",
                       Peer(req), ": no valid X-Tiresias-Csrf header"));
      return SendJson(
          res, 403,
          json{{"error",
                "forbidden: the X-Tiresias-Csrf header must carry the token "
                "of this dashboard's page (reload the page)"}});
    }
    Api(req, res, [&](const std::string& token) {
      ApiAnswer answer = reader_.Act(token, id, action);
      Log(absl::StrCat(session ? session->second.user : "(insecure)", " ",
                       Printable(action), " job ", Printable(id), " from ",
                       Peer(req), ": ",
                       answer.status == 200
                           ? answer.body.value("outcome", "")
                           : answer.body.value("error", "")));
      return answer;
    });
  }

  void Log(const std::string& line) const {
    if (options_.log) {
      options_.log(security::RedactTokens("tiresias dashboard: " + line));
    }
  }

  static std::string Peer(const httplib::Request& req) {
    return req.remote_addr;
  }

  // Answers 403 with one line saying why, and logs it.
  void Refuse(const httplib::Request& req, httplib::Response& res,
              const std::string& why) const {
    Log(absl::StrCat("refused ", req.method, " ", Printable(req.path), " from ",
                     Peer(req), ": ", why));
    res.status = 403;
    res.set_header("Connection", "close");
    res.set_content(absl::StrCat("forbidden: ", why, "\n"),
                    "text/plain; charset=utf-8");
  }

  // DNS rebinding: only requests addressed to one of our own names.
  bool CheckHost(const httplib::Request& req, httplib::Response& res) const {
    const std::string host = req.get_header_value("Host");
    if (hosts_.Allows(host)) return true;
    Refuse(
        req, res,
        absl::StrCat("Host \"", Printable(host),
                     "\" is not one of this dashboard's names (",
                     absl::StrJoin(hosts_.names(), ", "),
                     "); `tiresias dashboard --allowed-host NAME` adds one"));
    return false;
  }

  // Cross-site request forgery: a form posted from another site's page.
  bool CheckOrigin(const httplib::Request& req, httplib::Response& res) const {
    std::optional<std::string> origin;
    if (req.has_header("Origin")) origin = req.get_header_value("Origin");
    const std::string host = req.get_header_value("Host");
    if (OriginAllowed(origin, host)) return true;
    Refuse(req, res,
           absl::StrCat("POST ", req.path, " from another site (Origin \"",
                        Printable(*origin), "\", expected http://",
                        Printable(host), ")"));
    return false;
  }

  // The browser's session: its id and what it holds.
  std::optional<std::pair<std::string, Session>> SessionOf(
      const httplib::Request& req) {
    const std::string id =
        CookieValue(req.get_header_value("Cookie"), kSessionCookie);
    if (id.empty()) return std::nullopt;
    std::optional<Session> session = sessions_.Find(id, Clock::now());
    if (!session) return std::nullopt;
    return std::make_pair(id, *std::move(session));
  }

  void Page(const httplib::Request& req, httplib::Response& res) {
    const std::string nonce = security::RandomHex(16);
    if (!login_required_) {
      v1::WhoAmIResponse who;
      const bool insecure = reader_.WhoAmI("", &who).ok() && who.insecure();
      return SendPage(
          res, 200,
          DashboardPage(options_.master_address, options_.refresh_ms,
                        PageViewer{.insecure = insecure, .csrf = page_csrf_},
                        nonce),
          nonce);
    }
    auto session = SessionOf(req);
    if (!session) {
      return SendPage(res, 200, LoginPage(options_.master_address, "", nonce),
                      nonce);
    }
    SendPage(res, 200,
             DashboardPage(options_.master_address, options_.refresh_ms,
                           PageViewer{.logged_in = true,
                                      .user = session->second.user,
                                      .admin = session->second.admin,
                                      .csrf = session->second.csrf},
                           nonce),
             nonce);
  }

  // An /api answer made by `read` with the session's token.
  template <typename Read>
  void Api(const httplib::Request& req, httplib::Response& res, Read read) {
    // Scripts (and headless screenshots) read with their own token, as the
    // CLI does, without the login form: "Authorization: Bearer TOKEN" on a
    // GET (no browser sends one to another site's page unasked; actions
    // stay behind the page's session and anti-forgery token).
    if (req.method == "GET" && req.has_header("Authorization")) {
      const std::string auth = req.get_header_value("Authorization");
      const absl::string_view kBearer = "Bearer ";
      if (auth.size() <= kBearer.size() ||
          !absl::StartsWithIgnoreCase(auth, kBearer)) {
        return SendJson(
            res, 401,
            json{{"error", "expected \"Authorization: Bearer TOKEN\""}});
      }
      const std::string token(
          absl::StripAsciiWhitespace(auth.substr(kBearer.size())));
      ApiAnswer answer = read(token);
      if (answer.unauthenticated) {
        Log(absl::StrCat("bearer token refused for ", Printable(req.path),
                         " from ", Peer(req)));
      }
      return SendJson(res, answer.status, answer.body);
    }
    std::optional<std::pair<std::string, Session>> session;
    if (login_required_) {
      session = SessionOf(req);
      if (!session) {
        return SendJson(
            res, 401,
            json{{"error",
                  "not logged in (or the session ended): log in at / with a "
                  "token"}});
      }
    }
    ApiAnswer answer = read(session ? session->second.token : "");
    if (answer.unauthenticated && session) {
      sessions_.Remove(session->first);
      const std::string why = answer.body.value("error", "");
      Log(absl::StrCat("session of ", session->second.user,
                       " ended: the master refused its token: ", why));
      answer.body["error"] =
          absl::StrCat("logged out: ", why, "; log in again at /");
    }
    SendJson(res, answer.status, answer.body);
  }

  void Login(const httplib::Request& req, httplib::Response& res) {
    if (!CheckOrigin(req, res)) return;
    if (!login_required_) return Redirect(res, "");  // nothing to log in to
    const std::string nonce = security::RandomHex(16);
    const std::string token(
        absl::StripAsciiWhitespace(FormField(req.body, "token").value_or("")));
    if (token.empty()) {
      return SendPage(
          res, 400,
          LoginPage(options_.master_address, "token: enter a token", nonce),
          nonce);
    }
    v1::WhoAmIResponse who;
    grpc::Status s = reader_.WhoAmI(token, &who);
    if (!s.ok()) {
      const bool refused = s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
      const std::string why = security::RedactTokens(
          refused ? absl::StrCat("the master refused the token: ",
                                 s.error_message())
                  : reader_.Failure(s));
      Log(absl::StrCat("login refused from ", Peer(req), ": ", why));
      return SendPage(res, refused ? 401 : 502,
                      LoginPage(options_.master_address, why, nonce), nonce);
    }
    if (auto old = SessionOf(req)) sessions_.Remove(old->first);
    const std::string id = sessions_.Create(
        Session{.token = token,
                .user = who.user(),
                .admin = who.admin(),
                .csrf = security::RandomHex(16)},
        Clock::now());
    Log(absl::StrCat("login: ", who.user(), who.admin() ? " (admin)" : "",
                     " from ", Peer(req)));
    Redirect(res, absl::StrCat(kSessionCookie, "=", id, kCookieFlags));
  }

  void Logout(const httplib::Request& req, httplib::Response& res) {
    if (!CheckOrigin(req, res)) return;
    if (auto session = SessionOf(req)) {
      sessions_.Remove(session->first);
      Log(absl::StrCat("logout: ", session->second.user, " from ", Peer(req)));
    }
    Redirect(res,
             absl::StrCat(kSessionCookie, "=", kCookieFlags, "; Max-Age=0"));
  }

  const DashboardOptions options_;
  const bool login_required_;
  const HostAllowList hosts_;
  const MasterReader reader_;
  // Against an --insecure master (no sessions): the anti-forgery token of
  // every page this dashboard serves.
  const std::string page_csrf_ = security::RandomHex(16);
  SessionStore sessions_;
};

DashboardServer::DashboardServer() = default;

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    const DashboardOptions& options) {
  auto listen_error = [&options](const absl::Status& s) {
    return absl::Status(
        s.code(), absl::StrCat("--listen ", options.listen, ": ", s.message()));
  };
  absl::StatusOr<HostPort> listen = ParseHostPort(options.listen);
  if (!listen.ok()) return listen_error(listen.status());
  // The names are checked now; the port is known once bound.
  RETURN_IF_ERROR(
      HostAllowList::Make(listen->host, 1, options.allowed_hosts).status());
  if (!options.tls.insecure && options.tls.ca_pem.empty()) {
    return absl::InvalidArgumentError(
        "--ca: a TLS connection to the master needs the cluster's CA");
  }
  std::unique_ptr<DashboardServer> server(new DashboardServer());
  DashboardServer* s = server.get();
  auto routes = [s, &options, &listen](httplib::Server& http, int port) {
    // Cannot fail: the same names, checked above, on a real port.
    absl::StatusOr<HostAllowList> hosts =
        HostAllowList::Make(listen->host, port, options.allowed_hosts);
    s->backend_ = std::make_unique<Backend>(options, *std::move(hosts));
    s->backend_->Routes(http);
  };
  absl::StatusOr<std::unique_ptr<HttpListener>> listener =
      HttpListener::Start(options.listen, routes);
  if (!listener.ok()) return listen_error(listener.status());
  server->listener_ = *std::move(listener);
  return server;
}

DashboardServer::~DashboardServer() { Shutdown(); }

}  // namespace tiresias
