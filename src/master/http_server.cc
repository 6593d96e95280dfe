#include "master/http_server.h"

#include <httplib.h>

#include "core/status_macros.h"
#include "master/metrics.h"

namespace tiresias {

absl::StatusOr<std::unique_ptr<MasterHttpServer>> MasterHttpServer::Start(
    MasterState* state, const std::string& address) {
  auto routes = [state](httplib::Server& http) {
    http.Get("/metrics", [state](const httplib::Request&,
                                 httplib::Response& res) {
      absl::StatusOr<MasterState::Metrics> metrics = state->SnapshotMetrics();
      if (!metrics.ok()) {
        res.status = 503;
        res.set_content(std::string(metrics.status().message()) + "\n",
                        "text/plain");
        return;
      }
      res.set_content(RenderPrometheusMetrics(*metrics),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get("/healthz",
             [state](const httplib::Request&, httplib::Response& res) {
               absl::Status health = state->CheckHealth();
               res.status = health.ok() ? 200 : 503;
               res.set_content(
                   health.ok() ? "ok\n" : std::string(health.message()) + "\n",
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
