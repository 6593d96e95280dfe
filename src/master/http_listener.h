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

class HttpListener {
 public:
  // `routes` registers the handlers before the server binds. Errors:
  // InvalidArgument for a malformed address, Unavailable if it cannot bind.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const std::string& address,
      const std::function<void(httplib::Server&)>& routes);
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
