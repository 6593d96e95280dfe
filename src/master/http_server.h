// The master's HTTP endpoint, next to its gRPC API: GET /metrics
// (metrics.h, for Prometheus) and GET /healthz. Plain HTTP on its own port
// (`tiresias master --http-listen`); serves from its own threads and only
// reads MasterState.
//
// /healthz is open to anyone (liveness probes carry no credentials): 200
// "ok" while the state store answers, else 503 with the reason; the body
// adds "(insecure: no TLS, no authentication)" on an --insecure master.
// /metrics is open too unless metrics_token_required: then it needs
// "Authorization: Bearer <token>", any token the master accepts
// (MasterState::AuthenticateToken), and answers 401 with
// "WWW-Authenticate: Bearer" otherwise; every refusal is audited. Over this
// plain HTTP the token travels in the clear: scrape it over loopback or a
// network you trust.
#ifndef TIRESIAS_MASTER_HTTP_SERVER_H_
#define TIRESIAS_MASTER_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/http_listener.h"
#include "master/master_state.h"

namespace tiresias {

struct MasterHttpOptions {
  // `tiresias master --metrics-token-required`.
  bool metrics_token_required = false;
  // Appended to /metrics when set: families the state does not hold (the
  // gRPC service's per-user streams, RenderUserStreams). Called on the
  // server's threads; what it reads must outlive the server.
  std::function<std::string()> more_metrics;
};

class MasterHttpServer {
 public:
  // Listens on `address` (host:port; port 0 picks a free one). `state`
  // must outlive the server. Unavailable if it cannot bind.
  static absl::StatusOr<std::unique_ptr<MasterHttpServer>> Start(
      MasterState* state, const std::string& address,
      const MasterHttpOptions& options = {});
  ~MasterHttpServer();  // Shutdown()

  int port() const;
  // Stops serving and joins the server's thread. Idempotent.
  void Shutdown();

 private:
  MasterHttpServer() = default;
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_HTTP_SERVER_H_
