#include "master/audit_text.h"

#include "absl/strings/str_cat.h"
#include "core/utf8.h"

namespace tiresias {

std::string AuditText(std::string_view text, size_t max_bytes) {
  std::string escaped = PrintableText(text);
  if (escaped.size() <= max_bytes) return escaped;
  // Room for the marker: its count has at most 20 digits.
  size_t keep = max_bytes - 32;
  // Back to the start of a character: escaped text is well-formed UTF-8,
  // so a continuation byte (10xxxxxx) is never where one starts.
  while (keep > 0 &&
         (static_cast<unsigned char>(escaped[keep]) & 0xC0) == 0x80) {
    --keep;
  }
  const size_t cut = escaped.size() - keep;
  escaped.resize(keep);
  absl::StrAppend(&escaped, " ...(", cut, " bytes cut)");
  return escaped;
}

AuditRecord SanitizedAuditRecord(AuditRecord record) {
  record.principal = AuditText(record.principal, kAuditPrincipalMaxBytes);
  record.peer = AuditText(record.peer, kAuditPeerMaxBytes);
  record.action = AuditText(record.action, kAuditActionMaxBytes);
  record.outcome = AuditText(record.outcome, kAuditOutcomeMaxBytes);
  record.detail = AuditText(record.detail, kAuditDetailMaxBytes);
  return record;
}

}  // namespace tiresias
