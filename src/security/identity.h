// Who a certificate speaks for. The cluster CA writes the identity into the
// certificate's common name (CN) with the fixed conventions below; since
// only the cluster's CA signs, a CN on a verified peer certificate is
// trustworthy and names the master, one node's agent, or one user.
//
//   tiresias-master               the master
//   tiresias-agent:<node name>    the agent of node <node name>
//   tiresias-user:<user>          a person, as their Unix account name
//
// Pure functions; thread-safe.
#ifndef TIRESIAS_SECURITY_IDENTITY_H_
#define TIRESIAS_SECURITY_IDENTITY_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tiresias::security {

enum class IdentityKind { kMaster, kAgent, kUser };

// "master", "agent", "user".
std::string_view IdentityKindName(IdentityKind kind);

struct Identity {
  IdentityKind kind = IdentityKind::kMaster;
  // The node name (agent) or user name (user); empty for the master.
  std::string name;

  friend bool operator==(const Identity&, const Identity&) = default;
};

inline constexpr std::string_view kMasterCommonName = "tiresias-master";
inline constexpr std::string_view kAgentPrefix = "tiresias-agent:";
inline constexpr std::string_view kUserPrefix = "tiresias-user:";

// Same bound as the master's check of a registering agent's name.
inline constexpr int kMaxNodeNameBytes = 253;
// POSIX systems commonly cap account names at 32 bytes.
inline constexpr int kMaxUserNameBytes = 32;

// OK, or InvalidArgument naming the node and what a node name must be:
// 1..253 bytes of printable UTF-8 (no control characters).
absl::Status ValidateNodeName(std::string_view node);
// OK, or InvalidArgument: a user name is a Unix account name, 1..32 of
// letters, digits, '.', '_' and '-', not starting with '-'. Strict because
// tasks run as that account.
absl::Status ValidateUserName(std::string_view user);

// The common name for `identity`. Requires a name that passes the check of
// its kind (the master's name is ignored).
std::string CommonName(const Identity& identity);

// The identity a common name stands for; NotFound for anything that is
// not exactly one of the three forms with a valid name.
absl::StatusOr<Identity> ParseIdentity(std::string_view common_name);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_IDENTITY_H_
