// The web dashboard: a small HTTP server that reads the master over its
// gRPC API (like the CLI) and serves
//   GET /                 the page: summary cards, jobs and nodes tables, a
//                         chart of busy GPUs and waiting jobs, a job's events
//                         on a click (Chart.js and the page's own script
//                         inlined; nothing is fetched from elsewhere)
//   GET /api/state        {"now", "master", "jobs": [...], "nodes": [...]};
//                         every job, read from the master page by page
//   GET /api/jobs/<id>    one job with its command and events
// An /api request the master cannot answer gets a JSON {"error": "..."} with
// 404 (unknown job), 400 (malformed id) or 502 (master unreachable or
// failing); the dashboard keeps serving.
//
//   ASSIGN_OR_RETURN(auto dashboard, DashboardServer::Start(
//       {.master_address = "127.0.0.1:50051", .listen = "127.0.0.1:8080"}));
//   ... dashboard->port() ...
#ifndef TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_
#define TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/http_listener.h"

namespace tiresias {

struct DashboardOptions {
  std::string master_address = "127.0.0.1:50051";
  std::string listen = "127.0.0.1:8080";  // port 0 picks a free one
  int refresh_ms = 2000;                  // how often the page polls
};

// The page's HTML for a master at `master_address`. Pure.
std::string DashboardPage(const std::string& master_address, int refresh_ms);

class DashboardServer {
 public:
  // InvalidArgument for a malformed listen address, Unavailable if it
  // cannot bind. Does not contact the master (it may start later).
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
  struct Backend;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HttpListener> listener_;  // after backend_: goes first
};

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_DASHBOARD_SERVER_H_
