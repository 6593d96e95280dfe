// What the dashboard checks on every request before it answers
// (dashboard_server.h): that the request is addressed to it by one of its
// own names (against DNS rebinding: a hostile page whose name was made to
// point at 127.0.0.1 reaches the port, but its requests still say
// "Host: evil.example"), and that a form posted to it comes from its own
// pages (against cross-site request forgery: the browser says in Origin
// which site a POST comes from). Also the little parsing both need. Pure.
#ifndef TIRESIAS_DASHBOARD_REQUEST_CHECKS_H_
#define TIRESIAS_DASHBOARD_REQUEST_CHECKS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// The Host header values the dashboard answers to.
class HostAllowList {
 public:
  // `listen_host` as given to --listen ("127.0.0.1", "::1", "0.0.0.0", a
  // name; brackets already dropped) and the port it is bound to. The names:
  // listen_host:port, localhost:port, 127.0.0.1:port, [::1]:port, and each
  // of `extra` (--allowed-host), NAME or NAME:PORT, the port defaulting to
  // `port`. InvalidArgument "--allowed-host <value>: ..." for a malformed
  // one (a wildcard is malformed: every name is listed).
  static absl::StatusOr<HostAllowList> Make(
      std::string_view listen_host, int port,
      const std::vector<std::string>& extra);

  // Whether a request's Host header is one of the names (in any case; on
  // port 80, the bare name too, as browsers leave the default port out).
  bool Allows(std::string_view host_header) const;
  // The names, "host:port", lowercase, for messages.
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Whether a POST's Origin header allows it: absent (not sent by a browser
// tricked by another site: curl, scripts), or exactly this dashboard's own
// origin, http:// or https:// (behind a proxy) followed by the request's
// own Host header (already allowed by HostAllowList). "null" (a sandboxed
// or opaque origin) and everything else: no.
bool OriginAllowed(const std::optional<std::string>& origin,
                   std::string_view host_header);

// The value of cookie `name` in a Cookie header ("a=1; b=2"); "" if absent.
std::string CookieValue(std::string_view cookie_header, std::string_view name);

// The decoded value of `name` in an application/x-www-form-urlencoded
// body ("a=1&b=x%20y"; '+' is a space); nullopt if absent.
std::optional<std::string> FormField(std::string_view body,
                                     std::string_view name);

// `text` cut to `max_chars` and with every byte outside printable ASCII
// shown as '?': safe to quote in a one-line answer or a log line.
std::string Printable(std::string_view text, size_t max_chars = 100);

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_REQUEST_CHECKS_H_
