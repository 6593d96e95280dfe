// A cpp-httplib server on its own thread, as the master's /metrics endpoint
// and the dashboard use it: parses "host:port" (port 0 picks a free one;
// "[v6]:port" too), binds with SO_REUSEADDR only (cpp-httplib's default adds
// SO_REUSEPORT, which would let a second server bind the same port and take
// half the requests), and returns once it serves, so that a Shutdown right
// after Start cannot hang (cpp-httplib 0.11 ignores stop() until its loop
// runs).
#ifndef TIRESIAS_MASTER_HTTP_LISTENER_H_
#define TIRESIAS_MASTER_HTTP_LISTENER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace tiresias {

// A listen address taken apart: "host:port" or "[v6]:port" (the brackets
// dropped from host). InvalidArgument quoting it otherwise, or for a port
// outside 0..65535.
struct HostPort {
  std::string host;
  int port = 0;
};
absl::StatusOr<HostPort> ParseHostPort(const std::string& address);

class HttpListener {
 public:
  // `routes` registers the handlers once the server is bound and before it
  // serves, told the port it is bound to (the one picked for port 0).
  // Errors: InvalidArgument for a malformed address, Unavailable if it
  // cannot bind.
  using Routes = std::function<void(httplib::Server&, int port)>;
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const std::string& address, const Routes& routes);
  ~HttpListener();  // Shutdown()

  int port() const { return port_; }
  // Stops serving and joins the server's thread. Idempotent.
  void Shutdown();

 private:
  HttpListener();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_HTTP_LISTENER_H_
