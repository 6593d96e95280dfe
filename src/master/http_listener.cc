#include "master/http_listener.h"

#include <httplib.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tiresias {

HttpListener::HttpListener() : server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const std::string& address,
    const std::function<void(httplib::Server&)>& routes) {
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
  std::unique_ptr<HttpListener> listener(new HttpListener());
  httplib::Server& http = *listener->server_;
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  routes(http);
  const int bound = port == 0 ? http.bind_to_any_port(host)
                              : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, " (in use?)"));
  }
  listener->port_ = bound;
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
