#include "master/http_server.h"

#include <httplib.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "master/metrics.h"

namespace tiresias {

MasterHttpServer::MasterHttpServer(MasterState* state)
    : state_(state), server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<MasterHttpServer>> MasterHttpServer::Start(
    MasterState* state, const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected host:port (port 0 picks a free one), got \"", address, "\""));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::unique_ptr<MasterHttpServer> server(new MasterHttpServer(state));
  httplib::Server& http = *server->server_;
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which would
  // let a second master bind the same port and take half the requests.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.Get(
      "/metrics", [state](const httplib::Request&, httplib::Response& res) {
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
  http.Get("/healthz", [state](const httplib::Request&,
                               httplib::Response& res) {
    absl::Status health = state->CheckHealth();
    res.status = health.ok() ? 200 : 503;
    res.set_content(health.ok() ? "ok\n" : std::string(health.message()) + "\n",
                    "text/plain");
  });
  const int bound = port == 0 ? http.bind_to_any_port(host)
                              : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, " (in use?)"));
  }
  server->port_ = bound;
  server->thread_ = std::thread([&http] { http.listen_after_bind(); });
  // cpp-httplib 0.11 ignores stop() until its loop runs: wait for it, so
  // that a Shutdown right after Start cannot hang.
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!http.is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return server;
}

MasterHttpServer::~MasterHttpServer() { Shutdown(); }

void MasterHttpServer::Shutdown() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tiresias
