// What the audit log keeps of text a caller chose (a user name, a node
// name, a filter): escaped and bounded, so that one bad field can neither
// make the log unreadable (a string that is not UTF-8 breaks every protobuf
// reader of ListAudit) nor forge lines on a terminal, nor grow the log
// without bound. Pure.
#ifndef TIRESIAS_MASTER_AUDIT_TEXT_H_
#define TIRESIAS_MASTER_AUDIT_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "master/auth_records.h"

namespace tiresias {

// The most bytes each field of an AuditRecord keeps, escapes and the cut
// marker included.
inline constexpr size_t kAuditPrincipalMaxBytes = 256;
inline constexpr size_t kAuditPeerMaxBytes = 256;
inline constexpr size_t kAuditActionMaxBytes = 512;
inline constexpr size_t kAuditOutcomeMaxBytes = 64;
inline constexpr size_t kAuditDetailMaxBytes = 2048;

// `text` escaped (PrintableText: invalid UTF-8 as \xNN, control characters
// as \n, \t, \xNN...) and, if longer than `max_bytes` (>= 64), cut at a
// character boundary with " ...(N bytes cut)" at its end, within
// `max_bytes`. Idempotent on its own results.
std::string AuditText(std::string_view text, size_t max_bytes);

// `record` with each text field AuditText'ed with its bound above: what
// the store writes, and what it returns even for a row an older master
// wrote raw.
AuditRecord SanitizedAuditRecord(AuditRecord record);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_AUDIT_TEXT_H_
