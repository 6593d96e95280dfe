// The web dashboard: a small HTTP server that reads the master over its
// gRPC API (like the CLI) and serves
//   GET /                 the page (dashboard_page.h): summary cards, jobs
//                         and nodes tables, a chart of busy GPUs and
//                         waiting jobs, a job's details on a click; the
//                         login form instead while a master with TLS has
//                         no session for this browser
//   GET /api/state        {"now", "master", "viewer", "jobs": {"pending":
//                         N, ...} (counts by state, no list), "nodes":
//                         [...]} (master_reader.h): the cards and nodes
//   GET /api/jobs/<id>    one job with its command, environment and events
//   GET /api/jobs?state=&user=&name=&page_size=&page_token=
//                         one page of jobs, filtered by the master:
//                         {"jobs", "next_page_token", "page_size"}
//                         (api_params.h says what each takes)
//   GET /api/history?since=&until=&max_points=
//                         busy GPUs and waiting jobs as the master sampled
//                         and stored them (GetClusterHistory): the chart,
//                         which survives reloads and master restarts
//   GET /api/jobs/<id>/log?offset=&attempt=&rank=
//                         a slice of a task's log (ReadJobLog); the page
//                         follows it from next_offset
//   POST /api/jobs/<id>/hold|release|cancel
//                         the action as the session's user (UpdateJobs: the
//                         master refuses one who is neither the job's owner
//                         nor an admin: 403 "refused: ..."); needs the page's
//                         anti-forgery token in the X-Tiresias-Csrf header
//                         (403 without) and an Origin of this dashboard
//   POST /login           form field "token": checked with the master's
//                         WhoAmI; a session cookie and 303 to / on success,
//                         else the form again with the master's reason
//   POST /logout          ends the session; 303 to /
// An /api request the master cannot answer gets a JSON {"error": "..."} with
// 404 (unknown job), 400 (malformed id or parameter, naming it), 401 (no
// session, or the master refused its token), 403 (the master refused the
// action), 409 (the action or log does not apply to the job's state) or 502
// (master unreachable or failing); the dashboard keeps serving.
//
// Security. With TLS (options.tls not insecure) the master authenticates
// every call, and the dashboard holds no credential of its own: a browser
// logs in with a token, which stays in the dashboard's memory
// (sessions.h); the browser gets a random session id in the cookie
// "tiresias_session" (HttpOnly; SameSite=Strict; Path=/; never Secure, as
// the dashboard serves plain HTTP: keep it on loopback or put HTTPS in
// front). Every call the dashboard makes for that browser carries its token,
// so the master applies that user's rights. Against an --insecure master
// there is nobody to log in as: no login, and every page carries the banner
// "insecure: no TLS and no authentication" (from WhoAmI). In both modes:
// - a request whose Host header is not one of the dashboard's names
//   (request_checks.h: its --listen host:port, localhost, 127.0.0.1 and
//   [::1] on its port, and options.allowed_hosts) gets 403, whatever it
//   asks for (DNS rebinding);
// - GET changes nothing; a POST with an Origin header other than the
//   dashboard's own gets 403 (cross-site request forgery), and so does a
//   POST to /api/... without the page's token (a random one per session;
//   per dashboard against an --insecure master);
// - nothing it logs holds a token (security::RedactTokens).
//
//   ASSIGN_OR_RETURN(auto dashboard, DashboardServer::Start(
//       {.master_address = "127.0.0.1:50051", .listen = "127.0.0.1:8080",
//        .tls = client_tls}));
//   ... dashboard->port() ...
#ifndef TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_
#define TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dashboard/sessions.h"
#include "master/http_listener.h"
#include "security/tls.h"

namespace tiresias {

struct DashboardOptions {
  std::string master_address = "127.0.0.1:50051";
  std::string listen = "127.0.0.1:8080";  // port 0 picks a free one
  int refresh_ms = 2000;                  // how often the page polls
  // How to reach the master: the cluster CA (ca_pem; no client certificate:
  // the dashboard has no identity of its own), or insecure for a master
  // started with --insecure.
  security::TlsConfig tls = security::InsecureTlsConfig();
  // The name in the master's certificate, when master_address is an
  // address it does not list; empty: the dialled host.
  std::string master_name;
  // More Host header values to answer to (--allowed-host NAME[:PORT]).
  std::vector<std::string> allowed_hosts;
  // A session idle this long ends.
  std::chrono::seconds session_idle_timeout = SessionStore::kDefaultIdleTimeout;
  // Where one-line notes go (logins, logouts, refusals), tokens redacted;
  // null: nowhere. Called from the server's threads.
  std::function<void(const std::string&)> log;
};

class DashboardServer {
 public:
  // InvalidArgument for a malformed listen address, allowed host or a TLS
  // config without a CA; Unavailable if it cannot bind. Messages name the
  // field as `tiresias dashboard` spells it ("--listen ADDR: ...",
  // "--allowed-host NAME: ...", "--ca: ..."). Does not contact the master
  // (it may start later).
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      const DashboardOptions& options);
  ~DashboardServer();  // Shutdown()

  int port() const { return listener_->port(); }
  // Stops serving and joins the server's thread. Idempotent.
  void Shutdown() {
    if (listener_) listener_->Shutdown();
  }

 private:
  DashboardServer();
  class Backend;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HttpListener> listener_;  // after backend_: goes first
};

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_
