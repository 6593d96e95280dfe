#include "security/identity.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "core/utf8.h"

namespace tiresias::security {

namespace {

// C0 controls, DEL and C1 controls: they would let a name rewrite the
// terminal or the log line it is printed in.
bool IsControl(char32_t c) { return c < 0x20 || (c >= 0x7f && c <= 0x9f); }

bool IsPrintable(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const int length = Utf8SequenceLength(text, pos);
    if (length == 0 || IsControl(DecodeUtf8(text, pos, length))) return false;
    pos += length;
  }
  return true;
}

bool IsUserNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

std::string_view IdentityKindName(IdentityKind kind) {
  switch (kind) {
    case IdentityKind::kMaster:
      return "master";
    case IdentityKind::kAgent:
      return "agent";
    case IdentityKind::kUser:
      return "user";
  }
  return "unknown";
}

absl::Status ValidateNodeName(std::string_view node) {
  if (node.empty() || node.size() > kMaxNodeNameBytes || !IsPrintable(node)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node name: expected 1 to ", kMaxNodeNameBytes,
        " bytes of printable UTF-8, got ",
        node.empty() ? "an empty name" : absl::StrCat(node.size(), " bytes")));
  }
  return absl::OkStatus();
}

absl::Status ValidateUserName(std::string_view user) {
  bool ok =
      !user.empty() && user.size() <= kMaxUserNameBytes && user.front() != '-';
  for (char c : user) ok = ok && IsUserNameChar(c);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "user name: expected a Unix account name (1 to ", kMaxUserNameBytes,
        " letters, digits, '.', '_' or '-', not starting with '-')",
        IsPrintable(user) ? absl::StrCat(", got \"", ToAbsl(user), "\"") : ""));
  }
  return absl::OkStatus();
}

std::string CommonName(const Identity& identity) {
  switch (identity.kind) {
    case IdentityKind::kMaster:
      return std::string(kMasterCommonName);
    case IdentityKind::kAgent:
      return absl::StrCat(ToAbsl(kAgentPrefix), identity.name);
    case IdentityKind::kUser:
      return absl::StrCat(ToAbsl(kUserPrefix), identity.name);
  }
  return "";
}

absl::StatusOr<Identity> ParseIdentity(std::string_view common_name) {
  if (common_name == kMasterCommonName) {
    return Identity{IdentityKind::kMaster, ""};
  }
  if (common_name.starts_with(kAgentPrefix)) {
    std::string_view node = common_name.substr(kAgentPrefix.size());
    if (ValidateNodeName(node).ok()) {
      return Identity{IdentityKind::kAgent, std::string(node)};
    }
  } else if (common_name.starts_with(kUserPrefix)) {
    std::string_view user = common_name.substr(kUserPrefix.size());
    if (ValidateUserName(user).ok()) {
      return Identity{IdentityKind::kUser, std::string(user)};
    }
  }
  return absl::NotFoundError(
      absl::StrCat("certificate common name: not a tiresias identity "
                   "(expected tiresias-master, tiresias-agent:<node> or "
                   "tiresias-user:<user>)",
                   IsPrintable(common_name) && common_name.size() <= 300
                       ? absl::StrCat(", got \"", ToAbsl(common_name), "\"")
                       : ""));
}

}  // namespace tiresias::security
