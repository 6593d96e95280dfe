// The master's HTTP endpoint, next to its gRPC API: GET /metrics
// (metrics.h, for Prometheus) and GET /healthz ("ok" while the state store
// answers). Plain HTTP on its own port (`tiresias master --http-listen`);
// serves from its own threads and only reads MasterState.
#ifndef TIRESIAS_MASTER_HTTP_SERVER_H_
#define TIRESIAS_MASTER_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/http_listener.h"
#include "master/master_state.h"

namespace tiresias {

class MasterHttpServer {
 public:
  // Listens on `address` (host:port; port 0 picks a free one). `state`
  // must outlive the server. Unavailable if it cannot bind.
  static absl::StatusOr<std::unique_ptr<MasterHttpServer>> Start(
      MasterState* state, const std::string& address);
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
