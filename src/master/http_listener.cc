#include "master/http_listener.h"

#include <httplib.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tiresias {

HttpListener::HttpListener() : server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<HostPort> ParseHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  HostPort out;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &out.port) || out.port < 0 ||
      out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected host:port (port 0 picks a free one), got \"", address, "\""));
  }
  out.host = address.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' &&
      out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const std::string& address, const Routes& routes) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(address);
  if (!parsed.ok()) return parsed.status();
  const std::string& host = parsed->host;
  const int port = parsed->port;
  std::unique_ptr<HttpListener> listener(new HttpListener());
  httplib::Server& http = *listener->server_;
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int bound = port == 0 ? http.bind_to_any_port(host)
                              : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, " (in use?)"));
  }
  listener->port_ = bound;
  routes(http, bound);
  listener->thread_ = std::thread([&http] { http.listen_after_bind(); });
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!http.is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return listener;
}

HttpListener::~HttpListener() { Shutdown(); }

void HttpListener::Shutdown() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tiresias
