#include "dashboard/request_checks.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

// A host as it appears in a Host header: a v6 address in brackets.
std::string HostForHeader(std::string_view host) {
  std::string out = absl::AsciiStrToLower(ToAbsl(host));
  if (out.find(':') != std::string::npos && out.front() != '[') {
    out = absl::StrCat("[", out, "]");
  }
  return out;
}

// A DNS name or IPv4 address (letters, digits, '.', '-', '_'), or an IPv6
// address in brackets.
bool IsHostName(std::string_view host) {
  if (host.empty()) return false;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    return std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
      return absl::ascii_isxdigit(c) || c == ':' || c == '.';
    });
  }
  return std::all_of(host.begin(), host.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_';
  });
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string FormDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() &&
               HexDigit(text[i + 1]) >= 0 && HexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 1]) * 16 +
                                      HexDigit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<HostAllowList> HostAllowList::Make(
    std::string_view listen_host, int port,
    const std::vector<std::string>& extra) {
  HostAllowList list;
  const std::string port_text = absl::StrCat(":", port);
  for (std::string_view host :
       {listen_host, std::string_view("localhost"),
        std::string_view("127.0.0.1"), std::string_view("::1")}) {
    list.names_.push_back(HostForHeader(host) + port_text);
  }
  for (const std::string& value : extra) {
    auto bad = [&value](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allowed-host ", Printable(value), ": ", ToAbsl(why)));
    };
    std::string_view host = value;
    std::string name_port;
    const size_t colon = value.rfind(':');
    const bool has_port = colon != std::string::npos &&
                          (value.front() != '[' || value[colon - 1] == ']');
    if (has_port) {
      int extra_port = 0;
      if (!absl::SimpleAtoi(ToAbsl(value).substr(colon + 1), &extra_port) ||
          extra_port < 1 || extra_port > 65535) {
        return bad("expected NAME or NAME:PORT with a port from 1 to 65535");
      }
      host = std::string_view(value).substr(0, colon);
      name_port = absl::StrCat(":", extra_port);
    } else {
      name_port = port_text;
    }
    if (!IsHostName(host)) {
      return bad(
          "expected a host name or an IP address (an IPv6 one in "
          "brackets), optionally with :PORT");
    }
    list.names_.push_back(HostForHeader(host) + name_port);
  }
  return list;
}

bool HostAllowList::Allows(std::string_view host_header) const {
  const std::string host =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(ToAbsl(host_header)));
  if (host.empty()) return false;
  return std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
    return n == host || (absl::EndsWith(n, ":80") &&
                         std::string_view(n).substr(0, n.size() - 3) == host);
  });
}

bool OriginAllowed(const std::optional<std::string>& origin,
                   std::string_view host_header) {
  if (!origin) return true;
  const std::string host =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(ToAbsl(host_header)));
  const std::string given = absl::AsciiStrToLower(*origin);
  return !host.empty() &&
         (given == "http://" + host || given == "https://" + host);
}

std::string CookieValue(std::string_view cookie_header, std::string_view name) {
  for (absl::string_view pair : absl::StrSplit(ToAbsl(cookie_header), ';')) {
    pair = absl::StripAsciiWhitespace(pair);
    const size_t eq = pair.find('=');
    if (eq != absl::string_view::npos && pair.substr(0, eq) == ToAbsl(name)) {
      return std::string(pair.substr(eq + 1));
    }
  }
  return "";
}

std::optional<std::string> FormField(std::string_view body,
                                     std::string_view name) {
  for (absl::string_view pair : absl::StrSplit(ToAbsl(body), '&')) {
    const size_t eq = pair.find('=');
    const absl::string_view key = pair.substr(0, eq);
    if (FormDecode(std::string(key)) != name) continue;
    return eq == absl::string_view::npos
               ? std::string()
               : FormDecode(std::string(pair.substr(eq + 1)));
  }
  return std::nullopt;
}

std::string Printable(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text.substr(0, max_chars)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace tiresias
