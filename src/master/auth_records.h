// The master's records of who may use it: bearer tokens (only a salted hash
// of each secret is kept) and the audit log of what was refused or changed
// (who, what, when, from where). Plain values, as the store keeps them.
#ifndef TIRESIAS_MASTER_AUTH_RECORDS_H_
#define TIRESIAS_MASTER_AUTH_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "core/time.h"

namespace tiresias {

// One bearer token (`tsk_<id>_<secret>`, security/tokens.h).
struct TokenRecord {
  int64_t id = 0;        // assigned by the store; part of the token's text
  std::string user;      // whom it authenticates
  bool admin = false;    // may act on every job and node, manage tokens
  std::string salt;      // hex
  std::string hash;      // hex SHA-256 over salt || secret
  Seconds created{0};    // Unix seconds
  std::optional<Seconds> expires;  // nullopt: never
  std::optional<Seconds> revoked;  // set once revoked: refused from then on
  std::string description;         // free text, e.g. "CI pipeline"

  bool operator==(const TokenRecord&) const = default;
};

// One entry of the audit log.
struct AuditRecord {
  int64_t sequence = 0;  // assigned by the store, increasing
  Seconds time{0};       // Unix seconds, the master's clock
  std::string principal;  // "alice", "agent:node-1", or "-" (unknown)
  std::string peer;       // the client's address, as gRPC names it
  std::string action;     // "CancelJob job 7", "CreateToken user bob", ...
  std::string outcome;    // "ok", "denied", "unauthenticated"
  std::string detail;     // why; never a token's secret

  bool operator==(const AuditRecord&) const = default;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_AUTH_RECORDS_H_
